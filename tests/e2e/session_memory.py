#!/usr/bin/python3
"""A session's memory stays bounded over many input shapes: one
onnxfuse.InferenceSession serves the BERT-shaped encoder of
scripts/export_dynamic.py (models/dynamic/bert_encoder) 600 times at random
sequence lengths 8..128, nearly every call a new shape; its resident memory
(VmRSS) after the 600th call must be within 5% of what it was after the
150th, by when the shape cache (8 schedules) has turned over many times,
and the session keeps at most 8 schedules.

    ONEDNN_PRIMITIVE_CACHE_CAPACITY=0 tests/e2e/session_memory.py MODELS_DIR

oneDNN's own primitive cache is off (ctest sets the variable): it is
process-wide and fills up to 1,024 primitives whatever the session does
(docs/api.md, Shapes). A schedule or weight a session failed to release
would grow the memory by megabytes per new shape. A missing model fails.

Exit status: 0 bounded; 1 otherwise.
"""
import os
import sys

import numpy as np

CALLS, FIRST, LIMIT = 600, 150, 1.05


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
    if os.environ.get("ONEDNN_PRIMITIVE_CACHE_CAPACITY") != "0":
        print("session_memory: set ONEDNN_PRIMITIVE_CACHE_CAPACITY=0 (oneDNN's cache is not the session's)",
              file=sys.stderr)
        return 1
    import onnxfuse
    session = onnxfuse.InferenceSession(model, threads=1)
    rng = np.random.default_rng(11)
    at_first = None
    for call in range(1, CALLS + 1):
        length = int(rng.integers(8, 129))
        session.run(None, {"input_ids": rng.integers(0, 1000, (1, length)).astype(np.int64),
                           "attention_mask": np.ones((1, length), np.int64)})
        if call == FIRST:
            at_first = rss_kb()
    at_last, stats = rss_kb(), session.stats()
    ratio = at_last / at_first
    print("session_memory: %d calls, %d schedules made, %d kept; RSS after call %d %.1f MB, after call %d %.1f MB "
          "(%.3fx, limit %.2fx)" % (CALLS, stats["compiles"], len(stats["shapes"]), FIRST, at_first / 1024, CALLS,
                                    at_last / 1024, ratio, LIMIT))
    ok = ratio <= LIMIT and len(stats["shapes"]) <= 8 and stats["compiles"] > 100
    print("session_memory: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
