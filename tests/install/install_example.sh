#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, builds examples/cpp against it
# with find_package(onnxfuse) (not the build tree), checks that the installed
# headers and the example include no ONNX, protobuf or JSON header (g++ -H), and
# runs the example and
# the installed onnx-fuse on resnet18 (strategy pattern: the installed built-in
# patterns, found relative to the prefix); checks pkg-config too. When the
# environment names ONNXFUSE_PYTHON_INSTALL_DIR (the module's directory under
# the prefix; ctest sets it when the build has the Python module), the module
# is imported from the prefix and examples/python/classify.py must print what
# the C++ example prints.
# With --deb, the tree is the .deb `cpack -G DEB` makes, unpacked with dpkg -x
# into a scratch root (its prefix: ROOT/usr) instead.
#   install_example.sh BUILD_DIR SOURCE_DIR MODELS_DIR SCRATCH [--deb]
set -euo pipefail
build=$1 src=$2 models=$3 scratch=$4 mode=${5:-}
rm -rf "$scratch" && mkdir -p "$scratch"
if [[ $mode == --deb ]]; then
  cpack --config "$build/CPackConfig.cmake" -G DEB -B "$scratch/package" > "$scratch/cpack.log"
  deb=$(ls "$scratch"/package/onnx-fuse_*.deb)
  depends=$(dpkg-deb -f "$deb" Depends)
  [[ $depends == *libdnnl2* ]] || { echo "$deb does not depend on oneDNN's runtime: $depends"; exit 1; }
  [[ $depends != *-dev* ]] || { echo "$deb depends on development packages: $depends"; exit 1; }
  if [[ -n ${ONNXFUSE_PYTHON_INSTALL_DIR:-} && $(dpkg-deb -f "$deb" Depends) != *python3-numpy* ]]; then
    echo "$deb has the Python module but does not depend on python3-numpy"; exit 1
  fi
  dpkg -x "$deb" "$scratch/root"
  prefix=$scratch/root/usr
else
  prefix=$scratch/prefix
  cmake --install "$build" --prefix "$prefix" > "$scratch/install.log"
fi
for f in bin/onnx-fuse include/onnxfuse/session.h include/onnxfuse/fuse.h lib/libonnxfuse.so lib/cmake/onnxfuse/onnxfuseConfig.cmake \
         lib/pkgconfig/onnxfuse.pc share/onnx-fuse/patterns/conv_bn_relu.onnxtxt; do
  [[ -e $prefix/$f ]] || { echo "not installed: $f"; exit 1; }
done
# The public headers, each alone, and the example include the C++ standard
# library and each other only: no ONNX, protobuf, nlohmann or oneDNN header.
for header in "$prefix"/include/onnxfuse/*.h "$src/examples/cpp/classify.cc"; do
  included=$(g++ -std=c++17 -fsyntax-only -H -x c++ -I"$prefix/include" "$header" 2>&1 >/dev/null | grep '^\.' || true)
  if grep -E 'onnx/|google/protobuf|nlohmann|dnnl|spdlog' <<<"$included"; then
    echo "$header includes a dependency's header (above)"; exit 1
  fi
done
[[ $(ls "$prefix/include/onnxfuse" | tr '\n' ' ') == "error.h fuse.h plan_stats.h session.h strategy.h tensor.h tensor_view.h version.h " ]] ||
  { echo "installed headers: $(ls "$prefix/include/onnxfuse")"; exit 1; }
# The source tree is not visible to the example: only the prefix.
cmake -S "$src/examples/cpp" -B "$scratch/example" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
      > "$scratch/configure.log"
cmake --build "$scratch/example" -j2 > "$scratch/build.log"
out=$("$scratch/example/classify" "$models/resnet18/model.onnx" "$models/resnet18/test_data_set_0/input_0.pb")
echo "$out"
[[ $(grep -c '^class ' <<<"$out") == 5 ]] || { echo "expected 5 classes"; exit 1; }
# The top class equals the reference output's argmax.
want=$(/usr/bin/python3 -c "
import onnx, onnx.numpy_helper as h, sys
t = h.to_array(onnx.load_tensor('$models/resnet18/test_data_set_0/output_0.pb'))
print(int(t.reshape(-1).argmax()))")
[[ $(head -1 <<<"$out" | sed 's/class \([0-9]*\):.*/\1/') == "$want" ]] || { echo "top class is not $want"; exit 1; }
# The installed CLI finds its patterns under the prefix, not the source tree.
ONNXFUSE_PATTERNS_DIR= "$prefix/bin/onnx-fuse" run "$models/resnet18/model.onnx" --strategy pattern --iterations 1 \
  --warmup 0 > "$scratch/run.txt"
# ... and it is that folder it reads: a broken pattern added there is reported.
printf 'not a pattern\n' > "$prefix/share/onnx-fuse/patterns/zz_broken.onnxtxt"
if ONNXFUSE_PATTERNS_DIR= "$prefix/bin/onnx-fuse" run "$models/resnet18/model.onnx" --strategy pattern --iterations 1 \
     --warmup 0 > "$scratch/broken.txt" 2>&1; then
  echo "the installed onnx-fuse did not read $prefix/share/onnx-fuse/patterns"; exit 1
fi
grep -q zz_broken "$scratch/broken.txt" || { cat "$scratch/broken.txt"; exit 1; }
# pkg-config alone builds the example too.
g++ -std=c++17 -O1 "$src/examples/cpp/classify.cc" -o "$scratch/classify-pc" \
  $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs onnxfuse)
[[ $(LD_LIBRARY_PATH=$prefix/lib "$scratch/classify-pc" "$models/resnet18/model.onnx" "$models/resnet18/test_data_set_0/input_0.pb" | head -1) == $(head -1 <<<"$out") ]] || { echo "pkg-config build differs"; exit 1; }
# The Python module from the prefix alone (the build tree is on no path), and
# its example printing the C++ example's top 5.
if [[ -n ${ONNXFUSE_PYTHON_INSTALL_DIR:-} ]]; then
  site=$prefix/$ONNXFUSE_PYTHON_INSTALL_DIR
  python=${PYTHON:-/usr/bin/python3}
  where=$(cd "$scratch" && PYTHONPATH=$site "$python" -c "import onnxfuse; print(onnxfuse.__file__)")
  [[ $where == "$site/onnxfuse/__init__.py" ]] || { echo "onnxfuse imported from $where, not $site"; exit 1; }
  py_out=$(cd "$scratch" && PYTHONPATH=$site "$python" "$src/examples/python/classify.py" \
             "$models/resnet18/model.onnx" "$models/resnet18/test_data_set_0/input_0.pb")
  echo "$py_out"
  [[ $py_out == "$out" ]] || { echo "examples/python/classify.py differs from examples/cpp/classify"; exit 1; }
fi
echo "install: ok"
