#!/bin/bash
# Whole models at a new opset: the opset-18..21 twin of an exported
# opset-13 model (scripts/opset_twin.py: Reduce* axes as an input, Split
# num_outputs, IR 9-10) must load, fuse to the same kernels as the original,
# run within 1e-4 of the original's reference outputs, and run in ONNX Runtime
# (the twin is valid at its opset). Speed: scripts/bench.sh on the twins.
#   tests/e2e/opset_twins.sh ONNX_FUSE RUN_REFERENCE MODELS_DIR WORK_DIR
set -euo pipefail
bin=$1 run_reference=$2 models=$3 work=$4
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rm -rf "$work" && mkdir -p "$work"
status=0
for spec in resnet18:21 convnext_tiny:18 mobilenet_v3_large:18; do
  model=${spec%%:*} opset=${spec##*:}
  twin=$work/$model-opset$opset
  mkdir -p "$twin"
  [[ -f $models/$model/model.onnx ]] || { echo "FAIL $model: no $models/$model/model.onnx (scripts/export_models.py)"; status=1; continue; }
  /usr/bin/python3 "$root/scripts/opset_twin.py" "$models/$model/model.onnx" "$opset" "$twin/model.onnx"
  ln -s "$models/$model/test_data_set_0" "$twin/test_data_set_0"
  kernels() { "$bin" run "$1" --json --iterations 1 --warmup 0 2>/dev/null | /usr/bin/python3 -c \
    "import json,sys; j=json.load(sys.stdin); print(j['kernels'], j['reorders'])"; }
  original=$(kernels "$models/$model/model.onnx") converted=$(kernels "$twin/model.onnx")
  if [[ $original != "$converted" ]]; then
    echo "FAIL $model@$opset: kernels and reorders $converted, the opset-13 original $original"; status=1
  fi
  "$run_reference" "$twin" >"$twin/run.log" 2>&1 || { echo "FAIL $model@$opset: outputs (run_reference):"; tail -3 "$twin/run.log"; status=1; }
  node "$root/scripts/ort/compare.js" "$twin/model.onnx" --expect "$twin/test_data_set_0" --rtol 1e-4 >"$twin/ort.log" 2>&1 ||
    { echo "FAIL $model@$opset: ONNX Runtime on the twin:"; tail -3 "$twin/ort.log"; status=1; }
  ((status)) || echo "ok   $model@$opset: kernels and reorders $converted as at opset 13; outputs within 1e-4"
done
exit $status
