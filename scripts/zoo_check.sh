#!/usr/bin/env bash
# The zoo conformance run: every model of scripts/export_zoo.py
# through `onnx-fuse run` and the fuse path, checked against ONNX Runtime;
# prints a markdown table. Export the zoo first:
#   /usr/bin/python3 scripts/export_zoo.py
#   scripts/zoo_check.sh [--bin build/onnx-fuse] [--work DIR] [--threads 1] [--timeout 600]
#                        [--rtol 1e-4] [--report-slow] [--must-pass NAME ...] [--] [NAME ...]
# Options and verdicts: scripts/zoo_check.py. Exit 1 on an internal error, a
# wrong output, a step on a slow implementation (unless --report-slow), a
# timeout, a missing model, a NaN or infinite torch-vs-ORT
# spread in export.json, or a --must-pass model that is refused or was not
# exported; other refusals (exit 4) are clean.
# ctest runs it as the test `zoo` (label zoo), which scripts/test.sh leaves out.
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/zoo_check.py" "$@"
