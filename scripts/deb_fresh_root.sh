#!/usr/bin/env bash
# The .deb on a fresh Debian 12: `cpack -G DEB` from a build tree, then
# installed with apt into a minimal Debian 12 root made by debootstrap (nothing
# else installed), so that apt must find every dependency the package declares
# on Debian's mirror. In that root: `onnx-fuse` fuses ResNet-18 and runs the
# plan, the Python module classifies with examples/python/classify.py, and
# examples/cpp/classify.cc builds with find_package(onnxfuse) and runs.
#
#   scripts/deb_fresh_root.sh [BUILD_DIR] [ROOT_DIR]
#
# BUILD_DIR defaults to build/ (configured and built; models/resnet18 exported
# by scripts/export_models.py). ROOT_DIR (default /var/tmp/onnx-fuse-fresh-root)
# is made once by debootstrap and reused; delete it for a fresh one. Needs root
# and the Debian mirror (downloads about 400 MB the first time). Not part of
# CI, which unpacks the .deb with dpkg -x instead (tests/install/install_example.sh);
# run it before a release. Exit status 0 when every step works.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
root=${2:-/var/tmp/onnx-fuse-fresh-root}
[[ $(id -u) == 0 ]] || { echo "deb_fresh_root.sh: needs root (debootstrap, chroot)" >&2; exit 2; }
[[ -f models/resnet18/model.onnx ]] || { echo "deb_fresh_root.sh: export resnet18 first (scripts/export_models.py)" >&2; exit 2; }
command -v debootstrap > /dev/null || apt-get install -y debootstrap > /dev/null

work=$(mktemp -d)
trap 'umount "$root/proc" 2> /dev/null || true; rm -rf "$work"' EXIT
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work" > "$work/cpack.log"
deb=$(ls "$work"/onnx-fuse_*.deb)
echo "package: $(basename "$deb"), depends: $(dpkg-deb -f "$deb" Depends)"

if [[ ! -f $root/etc/debian_version ]]; then
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian > "$work/debootstrap.log"
fi
echo "root: Debian $(cat "$root/etc/debian_version") at $root"
mount -t proc proc "$root/proc"
cp /etc/resolv.conf "$root/etc/resolv.conf"
rm -rf "$root/tmp/check" && mkdir -p "$root/tmp/check/models"
cp "$deb" "$root/tmp/check/"
cp -r models/resnet18 "$root/tmp/check/models/"
cp -r examples "$root/tmp/check/"

chroot "$root" bash -euo pipefail -c '
  export DEBIAN_FRONTEND=noninteractive
  cd /tmp/check
  apt-get update -q > apt.log
  apt-get install -y -q ./onnx-fuse_*.deb >> apt.log
  echo "installed: $(onnx-fuse --version)"
  onnx-fuse models/resnet18/model.onnx -o r18.plan --report r18.json
  onnx-fuse run r18.plan --inputs models/resnet18/test_data_set_0 --iterations 5 --threads 1
  python3 examples/python/classify.py r18.plan models/resnet18/test_data_set_0/input_0.pb > top5-python.txt
  apt-get install -y -q cmake g++ make >> apt.log
  cmake -S examples/cpp -B build-example > cmake.log
  cmake --build build-example > build.log
  ./build-example/classify r18.plan models/resnet18/test_data_set_0/input_0.pb > top5-cpp.txt
  cmp top5-python.txt top5-cpp.txt
  echo "top 5 (C++ and Python alike):"
  cat top5-cpp.txt
'
echo "deb_fresh_root.sh: the .deb installs with apt on a fresh Debian 12 root and works"
