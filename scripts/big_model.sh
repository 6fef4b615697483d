#!/usr/bin/env bash
# A model over protobuf's 2 GB limit, end to end (not run in CI: it needs about
# 8 GB of disk and 10 GB of RAM, and a few minutes).
#   scripts/big_model.sh [DIR]        (default models/big, git-ignored)
#   ONNX_FUSE=build-rel/onnx-fuse scripts/big_model.sh    (another build)
# 1. Generates DIR/model.onnx: three MatMul+Relu layers whose weights total
#    2.4 GB (over 2^31 bytes), stored as external data in DIR/model.onnx.data.
# 2. Fuses it with onnx-fuse (peak RSS from /usr/bin/time -v): the output is too
#    large for one protobuf message, so the weights go to DIR/fused.onnx.data.
# 3. Fuses the output again (the loader reads the data file onnx-fuse wrote).
# 4. ONNX Runtime runs the original and the fused model: outputs must agree.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-models/big}
onnx_fuse=${ONNX_FUSE:-build/onnx-fuse}
[[ -x "$onnx_fuse" ]] || bash scripts/build.sh
mkdir -p "$dir"

if [[ ! -f "$dir/model.onnx" || ! -f "$dir/model.onnx.data" ]]; then
  echo "big_model: generating $dir/model.onnx (2.4 GB of weights)" >&2
  /usr/bin/python3 - "$dir" <<'PY'
import os, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
out = sys.argv[1]
a, b = 16384, 12288  # 16384 x 12288 floats = 768 MiB per weight
rng = np.random.default_rng(0)
shapes = [(a, b), (b, a), (a, b)]
nodes, inits, x = [], [], "x"
for i, shape in enumerate(shapes):
    w = (rng.standard_normal(shape, dtype=np.float32) / np.sqrt(shape[0])).astype(np.float32)
    inits.append(numpy_helper.from_array(w, f"w{i}"))
    del w
    nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]), helper.make_node("Relu", [f"m{i}"], [f"r{i}"])]
    x = f"r{i}"
graph = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, a])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, b])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.save_model(model, os.path.join(out, "model.onnx"), save_as_external_data=True,
                all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=1024)
PY
fi
ls -l "$dir"/model.onnx*

rm -f "$dir"/fused.onnx* "$dir"/refused.onnx*
/usr/bin/time -v "$onnx_fuse" "$dir/model.onnx" -o "$dir/fused.onnx" --report "$dir/report.json" 2>"$dir/time.txt" ||
  { cat "$dir/time.txt"; exit 1; }
grep -E "^info|Maximum resident|Elapsed" "$dir/time.txt"
ls -l "$dir"/fused.onnx*
[[ -f "$dir/fused.onnx.data" ]] || { echo "big_model: no fused.onnx.data" >&2; exit 1; }
[[ $(stat -c %s "$dir/fused.onnx") -lt 1000000 ]] || { echo "big_model: fused.onnx holds the weights" >&2; exit 1; }

/usr/bin/time -v "$onnx_fuse" "$dir/fused.onnx" -o "$dir/refused.onnx" 2>"$dir/time2.txt" ||
  { cat "$dir/time2.txt"; exit 1; }
grep -E "^info|Maximum resident" "$dir/time2.txt"

node scripts/ort/compare.js "$dir/model.onnx" "$dir/fused.onnx" --rtol 1e-5
echo "big_model: OK" >&2
