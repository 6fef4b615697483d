#!/usr/bin/env bash
# The main job on a real model: set up, build, export torchvision ResNet-18
# (random weights, BatchNormalization kept), fuse it, write the fused model and
# the report, and check with ONNX Runtime that the fused model computes the
# same outputs as the original.
#   scripts/demo.sh [MODEL] [STRATEGY]     (default: resnet18 pattern)
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-resnet18}
strategy=${2:-pattern}
bash scripts/build.sh
/usr/bin/python3 scripts/export_models.py "$model"
dir=models/$model
build/onnx-fuse "$dir/model.onnx" -o "$dir/fused-$strategy.onnx" --strategy "$strategy" \
  --report "$dir/fusion-$strategy.json"
echo "fused model: $dir/fused-$strategy.onnx   report: $dir/fusion-$strategy.json"
node scripts/ort/compare.js "$dir/model.onnx" "$dir/fused-$strategy.onnx" --inputs "$dir/test_data_set_0"
