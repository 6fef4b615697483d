#!/usr/bin/env bash
# The main job on a real model, from a fresh clone: install what is missing,
# build the onnx-fuse command alone, export torchvision ResNet-18 (random
# weights, BatchNormalization kept), then
#   1. fuse it: the fused model and the fusion report, with the report's summary;
#   2. run it on this CPU fused and unfused, timed, and compare their outputs;
#   3. check in ONNX Runtime that the fused model computes the original's outputs.
#   scripts/demo.sh [MODEL] [STRATEGY]     (default: resnet18 pattern)
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-resnet18}
strategy=${2:-pattern}
start=$SECONDS
bash scripts/setup.sh
werror=OFF
[[ "${CI:-}" == "true" ]] && werror=ON
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DONNXFUSE_WERROR="$werror" >/dev/null
cmake --build build -j"$(nproc)" --target onnx-fuse
/usr/bin/python3 scripts/export_models.py "$model"
dir=models/$model
echo "== built and exported in $((SECONDS - start)) s"

echo "== 1. fuse: $dir/model.onnx -> $dir/fused-$strategy.onnx"
build/onnx-fuse "$dir/model.onnx" -o "$dir/fused-$strategy.onnx" --strategy "$strategy" \
  --report "$dir/fusion-$strategy.json"
/usr/bin/python3 - "$dir/fusion-$strategy.json" <<'EOF'
import collections, json, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]
print("report %s: %d nodes -> %d kernels, %d fused groups, %.1f MB of intermediates eliminated"
      % (sys.argv[1], t["nodes_before"], t["kernels_after"], t["fused_groups"],
         t["intermediate_bytes_eliminated"] / 1e6))
groups = collections.Counter(g.get("function") or g.get("rule") for g in r["groups"])
print("  groups: " + ", ".join("%s x%d" % kv for kv in groups.most_common(8)))
reasons = collections.Counter(n["reason"] for n in r["not_fused"])
print("  not fused: " + (", ".join("%s x%d" % kv for kv in reasons.most_common(6)) or "none"))
EOF

echo "== 2. run on this CPU (1 thread): fused against unfused"
build/onnx-fuse run "$dir/model.onnx" --threads 1 --iterations 20 --strategy "$strategy" --check
build/onnx-fuse run "$dir/model.onnx" --threads 1 --iterations 20 --no-fuse

echo "== 3. ONNX Runtime: the fused model against the original"
node scripts/ort/compare.js "$dir/model.onnx" "$dir/fused-$strategy.onnx" --inputs "$dir/test_data_set_0"
echo "== done in $((SECONDS - start)) s"
