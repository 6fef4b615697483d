#!/bin/bash
# Random-graph differential tester for onnx-fuse.
#   scripts/difftest.sh SECONDS [SEED]     campaign: graphs SEED, SEED+1, ... for SECONDS
#   scripts/difftest.sh --one SEED [--print]   one graph, every check (and its ONNX text)
#   scripts/difftest.sh --replay [DIR|FILE]    saved cases (default tests/difftest/cases)
# The binary: --bin PATH, else $ONNXFUSE_BIN, else build/onnx-fuse of this repository.
# Needs /usr/bin/python3 with onnx and numpy, and node with scripts/ort/node_modules.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec /usr/bin/python3 "$root/scripts/difftest.py" "$@"
