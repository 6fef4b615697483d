#!/usr/bin/env bash
# End-to-end: fuse a real exported model and prove the result.
#   fuse_compare.sh ONNX_FUSE MODEL_DIR STRATEGY WORK_DIR [EXTRA_FLAG...]
# With --fold-bn among the extra flags the original-vs-fused tolerance is 1e-4
# (folding rounds the weights once, in float32); otherwise 1e-5.
# Checks that onnx-fuse writes a model (onnx::checker full check runs inside
# onnx-fuse), that the report shows real fusion, and that ONNX Runtime gives the
# original's outputs (max relative difference <= 1e-5) and torch's reference
# outputs (<= 1e-4) for the fused model.
set -euo pipefail
onnx_fuse=$1 model_dir=$2 strategy=$3 work=$4
shift 4
extra=("$@")
rtol=1e-5
[[ " ${extra[*]} " == *" --fold-bn "* ]] && rtol=1e-4
here=$(cd "$(dirname "$0")" && pwd)
compare="$here/../../scripts/ort/compare.js"
[[ -f "$model_dir/model.onnx" ]] || { echo "missing $model_dir/model.onnx: run scripts/export_models.py" >&2; exit 1; }
mkdir -p "$work"
rm -f "$work/fused.onnx" "$work/report.json"

"$onnx_fuse" "$model_dir/model.onnx" -o "$work/fused.onnx" --strategy "$strategy" --report "$work/report.json" "${extra[@]}"

node -e '
  const report = require(process.argv[1]);
  const t = report.totals;
  console.log(`${report.strategy}: ${t.nodes_before} nodes -> ${t.kernels_after} kernels, ` +
              `${t.fused_groups} groups, ${(t.intermediate_bytes_eliminated / 1e6).toFixed(1)} MB eliminated`);
  const fail = (m) => { console.error("report check failed: " + m); process.exit(1); };
  if (report.schema_version !== 2) fail("schema_version");
  if (!(t.kernels_after < t.nodes_before / 2)) fail("fewer than half the nodes fused away");
  if (!(t.intermediate_bytes_eliminated > 0)) fail("no intermediate bytes eliminated");
  const members = report.groups.reduce((n, g) => n + g.nodes.length, 0);
  if (members !== t.nodes_in_fused_groups) fail("group members do not add up");
  if (report.groups.some(g => !g.function)) fail("a fused group has no function name");
' "$work/report.json"

node "$compare" "$model_dir/model.onnx" "$work/fused.onnx" --inputs "$model_dir/test_data_set_0" --rtol "$rtol"
node "$compare" "$work/fused.onnx" --expect "$model_dir/test_data_set_0" --inputs "$model_dir/test_data_set_0" --rtol 1e-4
