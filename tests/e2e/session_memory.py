#!/usr/bin/python3
"""A session's memory stays bounded over many input shapes: one
onnxfuse.InferenceSession serves the BERT-shaped encoder of
scripts/export_dynamic.py (models/dynamic/bert_encoder) 1,000 times at random
sequence lengths 8..128, nearly every call a new shape; its resident memory
(VmRSS) after the 1,000th call must be within 5% of what it was after the
150th, by when the shape cache (8 schedules) has turned over many times,
and at most 1.2x what it was after the 10th; the session keeps at most 8
schedules.

    tests/e2e/session_memory.py MODELS_DIR

oneDNN's own primitive cache is process-wide; a session bounds it to 128
primitives (session/primitive_cache.h), so it is full long before the
150th call. A schedule, weight or primitive a session failed to release
would grow the memory by megabytes per new shape. ONEDNN_PRIMITIVE_CACHE_CAPACITY
must be unset (ctest unsets it): it would decide the cache's size instead.
A missing model fails.

Exit status: 0 bounded; 1 otherwise.
"""
import os
import sys

import numpy as np

CALLS, EARLY, FIRST, LIMIT, EARLY_LIMIT = 1000, 10, 150, 1.05, 1.2


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 1
    model = os.path.join(sys.argv[1], "bert_encoder", "model.onnx")
    if not os.path.exists(model):
        print("session_memory: %s is missing (scripts/export_dynamic.py makes it)" % model, file=sys.stderr)
        return 1
    if "ONEDNN_PRIMITIVE_CACHE_CAPACITY" in os.environ:
        print("session_memory: unset ONEDNN_PRIMITIVE_CACHE_CAPACITY (the session's bound on oneDNN's cache is "
              "what is checked)", file=sys.stderr)
        return 1
    import onnxfuse
    session = onnxfuse.InferenceSession(model, threads=1)
    rng = np.random.default_rng(11)
    at_early = at_first = None
    for call in range(1, CALLS + 1):
        length = int(rng.integers(8, 129))
        session.run(None, {"input_ids": rng.integers(0, 1000, (1, length)).astype(np.int64),
                           "attention_mask": np.ones((1, length), np.int64)})
        if call == EARLY:
            at_early = rss_kb()
        if call == FIRST:
            at_first = rss_kb()
    at_last, stats = rss_kb(), session.stats()
    ratio, early_ratio = at_last / at_first, at_last / at_early
    print("session_memory: %d calls, %d schedules made, %d kept; RSS after call %d %.1f MB, after call %d %.1f MB, "
          "after call %d %.1f MB (%.3fx the %dth's, limit %.2fx; %.3fx the %dth's, limit %.2fx)"
          % (CALLS, stats["compiles"], len(stats["shapes"]), EARLY, at_early / 1024, FIRST, at_first / 1024, CALLS,
             at_last / 1024, ratio, FIRST, LIMIT, early_ratio, EARLY, EARLY_LIMIT))
    ok = ratio <= LIMIT and early_ratio <= EARLY_LIMIT and len(stats["shapes"]) <= 8 and stats["compiles"] > 100
    print("session_memory: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
