#!/usr/bin/env bash
# Fuses every exported model with each strategy and prints a Markdown table:
# nodes before -> kernels after, fused groups, intermediate MB eliminated, and
# load / fuse / write times. Models come from scripts/export_models.py.
#   scripts/fuse_all.sh [STRATEGY...]     (default: postdom greedy)
set -euo pipefail
cd "$(dirname "$0")/.."
strategies=("${@:-postdom}")
[[ $# -eq 0 ]] && strategies=(postdom greedy)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| model | strategy | nodes | kernels | groups | MB eliminated | load ms | fuse ms | write+check ms |"
echo "|---|---|---|---|---|---|---|---|---|"
for dir in models/*/; do
  name=$(basename "$dir")
  [[ -f "$dir/model.onnx" ]] || continue
  for strategy in "${strategies[@]}"; do
    build/onnx-fuse "$dir/model.onnx" -o "$work/out.onnx" --strategy "$strategy" --report "$work/r.json" -q
    node -e '
      const r = require(process.argv[1]), t = r.totals, ms = r.timings_ms;
      console.log(`| ${process.argv[2]} | ${r.strategy} | ${t.nodes_before} | ${t.kernels_after} | ` +
                  `${t.fused_groups} | ${(t.intermediate_bytes_eliminated / 1e6).toFixed(1)} | ` +
                  `${ms.load.toFixed(0)} | ${ms.fuse.toFixed(1)} | ${ms.write.toFixed(0)} |`);
    ' "$work/r.json" "$name"
  done
done
