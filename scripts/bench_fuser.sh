#!/usr/bin/env bash
# Fuser scaling benchmark: load/fuse/write time on generated graphs of 1k to
# 200k nodes (chains, residual ladders, wide diamonds), both strategies, and
# ResNet-50 end to end if models/resnet50 exists. Prints a Markdown table; the
# "fuse us/node" column should stay roughly flat as graphs grow (near-linear).
#   scripts/bench_fuser.sh [SIZES...]     (default: 1000 10000 50000 100000 200000)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("${@:-1000 10000 50000 100000 200000}")
read -r -a sizes <<<"${sizes[*]}"
bin=build/onnx-fuse
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

row() {  # row LABEL MODEL STRATEGY
  "$bin" "$2" -o "$work/out.onnx" --strategy "$3" --report "$work/r.json" -q --no-check
  node -e '
    const r = require(process.argv[1]), t = r.timings_ms, n = r.totals.nodes_before;
    const f = (x) => x.toFixed(1);
    console.log(`| ${process.argv[2]} | ${r.strategy} | ${n} | ${r.totals.kernels_after} | ${f(t.load)} | ` +
                `${f(t.fuse)} | ${(1000 * t.fuse / n).toFixed(2)} | ${f(t.write)} | ${f(t.total)} |`);
  ' "$work/r.json" "$1"
}

echo "| graph | strategy | nodes | kernels | load ms | fuse ms | fuse us/node | write ms | total ms |"
echo "|---|---|---|---|---|---|---|---|---|"
for kind in chain ladder diamond; do
  for n in "${sizes[@]}"; do
    /usr/bin/python3 scripts/gen_graphs.py "$kind" "$n" "$work/g.onnx"
    for strategy in postdom greedy; do row "$kind-$n" "$work/g.onnx" "$strategy"; done
  done
done
if [[ -f models/resnet50/model.onnx ]]; then
  for strategy in postdom greedy; do row resnet50 models/resnet50/model.onnx "$strategy"; done
  # The issue's budget is load+fuse+write of ResNet-50 under 1 s, checker included:
  start=$(date +%s.%N)
  "$bin" models/resnet50/model.onnx -o "$work/out.onnx" -q
  echo "resnet50 wall time, checker included: $(echo "$(date +%s.%N) - $start" | bc) s"
fi
