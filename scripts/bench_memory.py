#!/usr/bin/python3
"""Resident memory of one session serving many input shapes.

    PYTHONPATH=build/python scripts/bench_memory.py [--calls 1000] [--threads 1] [MODEL]
    PYTHONPATH=build/python scripts/bench_memory.py --lengths 8,16,32,64,128 [MODEL]

MODEL (default models/dynamic/bert_encoder/model.onnx, from
scripts/export_dynamic.py) is called CALLS times through one
`onnxfuse.InferenceSession` with random input_ids and an all-ones
attention_mask of random lengths 8..128 (seed 7), as bench_dynamic.py's
encoder workload draws them. Prints the process's resident memory (VmRSS)
after the 10th call and every 100th, its ratio to the 10th's, and the
session's compiles. With --lengths, one call at each length given, in order,
and the memory after each (what each new schedule adds). oneDNN's primitive cache (process-wide, 1,024 primitives
by default) is part of what it counts: ONEDNN_PRIMITIVE_CACHE_CAPACITY sets
its size. Exit status 0, or 2 for a missing model.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dynamic import ENCODER_LENGTHS, ROOT, VOCAB  # noqa: E402


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=os.path.join(ROOT, "models", "dynamic", "bert_encoder", "model.onnx"))
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lengths", help="comma-separated sequence lengths, one call each, instead of random ones")
    args = ap.parse_args()
    if not os.path.exists(args.model):
        print("bench_memory: %s is missing (scripts/export_dynamic.py makes it)" % args.model, file=sys.stderr)
        return 2
    import onnxfuse
    session = onnxfuse.InferenceSession(args.model, threads=args.threads)
    rng = np.random.default_rng(7)
    lengths = [int(v) for v in args.lengths.split(",")] if args.lengths else None
    calls = len(lengths) if lengths else args.calls
    start, at_ten = time.perf_counter(), None
    print("after creating the session: %.1f MB" % (rss_kb() / 1024), flush=True)
    for call in range(1, calls + 1):
        length = lengths[call - 1] if lengths else int(rng.integers(ENCODER_LENGTHS[0], ENCODER_LENGTHS[1] + 1))
        session.run(None, {"input_ids": rng.integers(0, VOCAB, (1, length)).astype(np.int64),
                           "attention_mask": np.ones((1, length), np.int64)})
        if lengths:
            print("after length %d: %.1f MB" % (length, rss_kb() / 1024), flush=True)
        elif call == 10:
            at_ten = rss_kb()
            print("after call 10: %.1f MB" % (at_ten / 1024), flush=True)
        elif call % 100 == 0 and at_ten:
            print("after call %d: %.1f MB, %.3f x the 10th's" % (call, rss_kb() / 1024, rss_kb() / at_ten), flush=True)
    stats = session.stats()
    print("%d calls in %.1f s; %d schedules made, %d cache hits, ONEDNN_PRIMITIVE_CACHE_CAPACITY=%s" %
          (calls, time.perf_counter() - start, stats["compiles"], stats["cache_hits"],
           os.environ.get("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "default")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
