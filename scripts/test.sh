#!/usr/bin/env bash
# The whole test suite from a fresh clone: set up, build, export the two small
# real models the end-to-end tests use, run ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
/usr/bin/python3 scripts/export_models.py resnet18 mobilenet_v2
cd build
ctest --output-on-failure -j"$(nproc)"
