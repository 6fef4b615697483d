#!/usr/bin/env bash
# Installs dependencies (scripts/setup.sh) and builds onnx-fuse and its tests
# into build/. Warnings are errors when CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
werror=OFF
[[ "${CI:-}" == "true" ]] && werror=ON
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DONNXFUSE_WERROR="$werror" >/dev/null
cmake --build build -j"$(nproc)"
