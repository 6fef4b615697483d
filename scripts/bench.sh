#!/usr/bin/env bash
# Speed and memory benchmark: ONNX Runtime (npm onnxruntime-node, graph
# optimizations "all"), `onnx-fuse run --no-fuse` and `onnx-fuse run` (fused, run's
# default strategy), at each thread count, interleaved in one run: every round
# runs every model x thread count x variant once, the variants in a rotated order,
# so slow phases of a shared, noisy machine hit all three alike. Prints a Markdown
# table (medians over rounds with their spread, ratios, kernels, reorders, arena vs
# intermediates, peak RSS) and one met / NOT met line per target of the issue.
#
#   scripts/bench.sh [--rounds 3] [--iterations 20] [--threads "1 2"] [--out FILE] [--raw FILE] [--zoo] [--rnn] [--baseline BIN] [MODEL...]
#
# MODEL: names under models/ (default: every models/*/model.onnx except the
# *-opsetN copies and twins); --zoo: every models/zoo/*/model.onnx instead (made by
# scripts/export_zoo.py), named zoo/NAME; --rnn: every models/rnn/*/model.onnx
# (the LSTM and GRU: export_zoo.py --out models/rnn lstm_bidir2
# gru_bidir2), named rnn/NAME. Steps of a fused plan on a slow
# implementation (run --json's slow_steps) are listed and fail a target.
# --baseline BIN adds a fourth variant, BIN's fused `run` (an onnx-fuse built from an
# earlier commit), interleaved with the others: the table then compares before and
# after per model (a change's "no model slower" check).
# --raw FILE keeps the per-process results (TSV). Progress goes to stderr. Needs build/onnx-fuse (scripts/build.sh), scripts/ort/node_modules
# and GNU time (scripts/setup.sh). A failed run is listed under the table; it does
# not stop the benchmark.
#
#   scripts/bench.sh --session [--cold] [--rounds 5] [--iterations 20] [--threads "1 2"] [--batches "1 8 32"] [--out FILE] [MODEL...]
#
# times the Python API (`import onnxfuse`) against ORT at several batch sizes,
# or with --cold the time from process start to a first output
# (ORT from .onnx, run from a .plan): scripts/bench_session.py runs both; its
# header says how.
#
#   scripts/bench.sh --dynamic [--rounds 3] [--threads "1 2"] [--out FILE] [WORKLOAD...]
#
# times one session serving changing input shapes (a BERT-shaped encoder at
# random sequence lengths, a GPT-2-shaped decoder step with a growing key/value
# cache; models from scripts/export_dynamic.py) through the Python API against
# ORT, outputs checked against ORT's: scripts/bench_dynamic.py, whose header
# says how.
set -euo pipefail
cd "$(dirname "$0")/.."
for arg in "$@"; do
  if [[ $arg == --session || $arg == --dynamic ]]; then
    args=()
    for a in "$@"; do [[ $a == "$arg" ]] || args+=("$a"); done
    script=scripts/bench_session.py
    [[ $arg == --dynamic ]] && script=scripts/bench_dynamic.py
    exec /usr/bin/python3 "$script" "${args[@]}"
  fi
done

usage() { sed -n '10p' "$0" | sed 's/^#   /usage: /' >&2; exit 2; }
rounds=3 iterations=20 threads="1 2" out="" raw="" folder="" baseline=""
models=()
while (($#)); do
  case "$1" in
    --rounds) rounds=${2:?}; shift 2 ;;
    --iterations) iterations=${2:?}; shift 2 ;;
    --threads) threads=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --raw) raw=${2:?}; shift 2 ;;
    --zoo) folder=zoo; shift ;;
    --rnn) folder=rnn; shift ;;
    --baseline) baseline=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "bench: unknown option $1" >&2; usage ;;
    *) models+=("$1"); shift ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ && $iterations =~ ^[1-9][0-9]*$ ]] || { echo "bench: --rounds and --iterations take positive integers" >&2; exit 2; }
read -r -a thread_counts <<<"$threads"
for t in "${thread_counts[@]}"; do [[ $t =~ ^[1-9][0-9]*$ ]] || { echo "bench: bad thread count '$t'" >&2; exit 2; }; done
if ((${#models[@]} == 0)) && [[ -n $folder ]]; then
  for f in models/"$folder"/*/model.onnx; do
    [[ -f $f ]] && models+=("$folder/$(basename "$(dirname "$f")")")
  done
  ((${#models[@]})) || { echo "bench: no models/$folder (run /usr/bin/python3 scripts/export_zoo.py)" >&2; exit 2; }
elif ((${#models[@]} == 0)); then
  for f in models/*/model.onnx; do
    name=$(basename "$(dirname "$f")")
    [[ $name == *-opset* ]] || models+=("$name")
  done
fi
for m in "${models[@]}"; do [[ -f models/$m/model.onnx ]] || { echo "bench: no models/$m/model.onnx" >&2; exit 2; }; done
((${#models[@]})) || { echo "bench: no models (run /usr/bin/python3 scripts/export_models.py)" >&2; exit 2; }
[[ -x build/onnx-fuse && -x build/onnxfuse_peak_gflops ]] || { echo "bench: build/onnx-fuse missing (scripts/build.sh)" >&2; exit 2; }
[[ -d scripts/ort/node_modules/onnxruntime-node ]] || { echo "bench: onnxruntime-node missing (scripts/setup.sh)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "bench: GNU time missing (scripts/setup.sh installs package 'time')" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A snapshot of the binary: a rebuild of build/ during the run must not mix versions.
cp build/onnx-fuse "$work/onnx-fuse"
variants=(ort unfused fused)
if [[ -n $baseline ]]; then
  [[ -x $baseline ]] || { echo "bench: --baseline $baseline is not an executable" >&2; exit 2; }
  cp "$baseline" "$work/onnx-fuse-baseline"
  variants+=(baseline)
fi
binary_info="onnx-fuse built $(date -u -r build/onnx-fuse '+%Y-%m-%d %H:%M UTC') (HEAD was $(git rev-parse --short HEAD 2>/dev/null || echo '?') at the start)"
results=$work/raw.tsv
: >"$results"

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
# This machine's peak fp32 rate per core (GFLOPS), the reference of the resnet50 target, and with
# AVX-512 VNNI its peak int8 rate (GOPS), that of the int8 table, before any load of ours.
peaks=$(build/onnxfuse_peak_gflops 2)
read -r _ peak_gflops peak_isa <<<"$(sed -n 1p <<<"$peaks")"
peak_int8=$(sed -n 's/^peak_int8_gops_per_core \([0-9.]*\).*/\1/p' <<<"$peaks")
read_gbps=$(sed -n 's/^read_gbps \([0-9.]*\) \([0-9]*\)$/\2:\1/p' <<<"$peaks" | tr '\n' ' ')  # "THREADS:GBPS ..."
echo "bench: peak fp32 rate $peak_gflops GFLOPS per core ($peak_isa FMA)${peak_int8:+, int8 $peak_int8 GOPS (VNNI)}" >&2
load_start=$(loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
t0=$SECONDS

# run_one ROUND MODEL THREADS VARIANT: one process, one line of $results.
run_one() {
  local round=$1 model=$2 t=$3 variant=$4 file=models/$2/model.onnx
  local cmd
  case "$variant" in
    ort) cmd=(node scripts/ort/compare.js --time "$file" --threads "$t" --iterations "$iterations") ;;
    unfused) cmd=("$work/onnx-fuse" run "$file" --json --threads "$t" --iterations "$iterations" --no-fuse) ;;
    fused) cmd=("$work/onnx-fuse" run "$file" --json --threads "$t" --iterations "$iterations") ;;
    baseline) cmd=("$work/onnx-fuse-baseline" run "$file" --json --threads "$t" --iterations "$iterations") ;;
  esac
  local status=0
  rm -f "$work/rss"
  # GNU time's %M: peak RSS (KB) of the process; timeout: a hung run must not stall the benchmark.
  timeout -k 10 900 /usr/bin/time -q -f %M -o "$work/rss" "${cmd[@]}" >"$work/stdout" 2>"$work/stderr" || status=$?
  local last rss
  last=$(grep -v '^[[:space:]]*$' "$work/stdout" | tail -n1 || true)
  if ((status != 0)); then  # the reason is on stderr
    last=$(grep -v '^[[:space:]]*$' "$work/stderr" | tail -n1 || true)
  fi
  rss=$(tail -n1 "$work/rss" 2>/dev/null || true)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$model" "$t" "$variant" "$status" "$rss" "${last//$'\t'/ }" >>"$results"
  local shown=${last:0:100}
  if ((status == 0)); then
    shown=$(sed -n -e 's/.*"median_ms":\([0-9]*\.\{0,1\}[0-9]\{0,2\}\).*/median \1 ms/p;t' \
                   -e 's/.*\(median [0-9.]* ms\).*/\1/p' <<<"$last")
  fi
  printf 'bench: [%ds] round %d/%d  %-20s t%s  %-7s  %s  rss %s KB\n' \
    $((SECONDS - t0)) "$round" "$rounds" "$model" "$t" "$variant" "${shown:-exit $status}" "${rss:-?}" >&2
}

nv=${#variants[@]}
echo "bench: ${#models[@]} models x threads (${thread_counts[*]}) x $nv variants x $rounds rounds, $iterations iterations each; load average $load_start" >&2
for ((round = 1; round <= rounds; round++)); do
  for model in "${models[@]}"; do
    for t in "${thread_counts[@]}"; do
      for ((k = 0; k < nv; k++)); do  # rotate the order each round and model
        run_one "$round" "$model" "$t" "${variants[(k + round + ${#model}) % nv]}"
      done
    done
  done
done
load_end=$(loadavg)

{
  echo "## onnx-fuse vs ONNX Runtime: speed and memory"
  echo
  echo "Started $started, took $(((SECONDS - t0) / 60)) min; $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1));" \
       "load average (1/5/15 min) at start $load_start, at end $load_end."
  [[ -n $baseline ]] && echo "Baseline: $baseline, built $(date -u -r "$baseline" '+%Y-%m-%d %H:%M UTC')."
  echo "$binary_info," \
       "onnxruntime-node $(node -p "require('./scripts/ort/node_modules/onnxruntime-node/package.json').version")," \
       "$rounds rounds x $iterations timed iterations (after 3 warm-up runs) per process, batch 1."
  echo
  PEAK_GFLOPS_CORE=$peak_gflops PEAK_ISA=$peak_isa PEAK_INT8_GOPS_CORE=$peak_int8 READ_GBPS=$read_gbps \
    /usr/bin/python3 scripts/bench_table.py "$results"
} >"$work/table.md"
cat "$work/table.md"
[[ -n $out ]] && cp "$work/table.md" "$out"
[[ -n $raw ]] && cp "$results" "$raw"
exit 0
