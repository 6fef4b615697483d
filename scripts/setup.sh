#!/usr/bin/env bash
# Installs every build, test and model-export dependency from Debian 12's
# packages, plus ONNX Runtime (npm onnxruntime-node) as the numerical peer.
# Idempotent: re-running only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES=(
  build-essential cmake pkg-config ccache
  libonnx-dev libprotobuf-dev protobuf-compiler zlib1g-dev  # zlib: plan-file CRC-32
  libcli11-dev libspdlog-dev libdnnl-dev catch2 nlohmann-json3-dev
  ocl-icd-opencl-dev  # dnnl-config.cmake requires OpenCL (a Recommends of libdnnl-dev)
  libonnx-testdata
  graphviz
  time  # GNU time (/usr/bin/time -f %M): peak RSS in scripts/bench.sh
  python3-torch python3-torchvision python3-onnx python3-numpy
  pybind11-dev python3-pybind11 python3-pytest  # the Python module onnxfuse (python/) and its tests
  libomp-dev  # LLVM's OpenMP runtime, which the build links (CMakeLists.txt, ONNXFUSE_LLVM_OPENMP), and Archer (TSan pass)
  clang libclang-rt-14-dev  # libFuzzer + sanitizer runtimes (scripts/fuzz.sh)
)
# Node.js drives ONNX Runtime; keep a Node the machine already has (it may not be Debian's).
command -v npm >/dev/null || DEB_PACKAGES+=(nodejs npm)

missing=()
for pkg in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime as a peer: its postinstall would download GPU files, which this
# network refuses (npm then rolls back), so skip it; the CPU library ships in the tarball.
if [[ ! -d scripts/ort/node_modules/onnxruntime-node || ! -d scripts/ort/node_modules/onnx-proto ]]; then
  echo "setup: installing onnxruntime-node into scripts/ort" >&2
  # --loglevel error: quiet, but a failure (no network, no disk space) says why.
  (cd scripts/ort && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --loglevel error) || {
    echo "setup: npm install of onnxruntime-node failed (see npm's error above); free space: $(df -h --output=avail . | tail -1)" >&2
    exit 1
  }
fi
