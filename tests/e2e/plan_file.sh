#!/usr/bin/env bash
# Executable plan files end to end on a real model:
#   plan_file.sh ONNX_FUSE RUN_REFERENCE MODEL_DIR WORK_DIR
# writes MODEL_DIR/model.onnx as a plan, runs the plan against the exported
# reference outputs (also with oneDNN limited to AVX2, standing in for another
# x86-64 machine, so layouts are re-derived), and checks that damaged,
# truncated and future-version plans are refused with a message, never run.
set -uo pipefail
onnx_fuse=$1 run_reference=$2 model_dir=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "$0")/expect.sh"
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

json_field() {  # json_field FILE EXPR: evaluates EXPR on the JSON object j
  /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"
}

plan=$work/model.plan
expect write 0 "executable plan of" -- "$model_dir/model.onnx" -o "$plan" --report "$work/report.json"
[[ -s "$plan" ]] || fail "write: no plan file"
[[ $(json_field "$work/report.json" 'j["emit"], j["plan_file"]["format_version"]') == "plan 6" ]] || fail "report: emit/plan_file"
[[ $(head -c 8 "$plan") == ONNXFPLN ]] || fail "plan magic"

# Same CPU: constants used as stored, the schedule as compiled when written.
"$onnx_fuse" run "$plan" --iterations 1 --warmup 0 --json >"$work/run.json" 2>"$work/err" || { fail "run plan"; cat "$work/err"; }
[[ $(json_field "$work/run.json" 'j["fused"], j["plan_file_use"]["same_schedule"], j["plan_file_use"]["constants_reused"] == j["plan_file_use"]["constants"] > 0') == "True True True" ]] ||
  { fail "same CPU: expected fused, same schedule, every constant as stored"; cat "$work/run.json"; }
"$run_reference" "$model_dir" --plan "$plan" || fail "plan outputs differ from the reference"

# Another CPU: oneDNN limited to AVX2 chooses other layouts (8-wide blocks).
ONEDNN_MAX_CPU_ISA=AVX2 "$onnx_fuse" run "$plan" --iterations 1 --warmup 0 --json >"$work/avx2.json" 2>"$work/err" ||
  { fail "run plan on AVX2"; cat "$work/err"; }
[[ $(json_field "$work/avx2.json" 'j["plan_file_use"]["running_isa"]') == avx2 ]] || fail "AVX2: running_isa"
if [[ $(json_field "$work/avx2.json" 'j["plan_file_use"]["built_isa"]') == avx512* ]]; then
  [[ $(json_field "$work/avx2.json" 'j["plan_file_use"]["constants_relaid"] > 0 and not j["plan_file_use"]["same_schedule"]') == True ]] ||
    { fail "AVX2: an AVX-512 plan should re-derive layouts"; cat "$work/avx2.json"; }
fi
ONEDNN_MAX_CPU_ISA=AVX2 "$run_reference" "$model_dir" --plan "$plan" || fail "AVX2: plan outputs differ from the reference"
"$onnx_fuse" run "$plan" --iterations 1 --warmup 0 --check >"$work/check.txt" 2>&1 || { fail "run --check on the plan"; cat "$work/check.txt"; }

# Damaged plans are refused before anything runs.
size=$(stat -c %s "$plan")
cp "$plan" "$work/flipped.plan"
printf '\x55' | dd of="$work/flipped.plan" bs=1 seek=$((size / 2)) conv=notrunc status=none
expect corrupted 3 "corrupted plan file" -- run "$work/flipped.plan"
head -c $((size - 1000)) "$plan" >"$work/cut.plan"
expect truncated 3 "truncated plan file" -- run "$work/cut.plan"
head -c 12 "$plan" >"$work/header_only.plan"
expect header_only 3 "truncated plan file" -- run "$work/header_only.plan"
cp "$plan" "$work/future.plan"
printf '\x07' | dd of="$work/future.plan" bs=1 seek=8 conv=notrunc status=none
expect future_version 4 "plan format version 7" -- run "$work/future.plan"
# The model's input is fixed at batch 1: the plan runs at that shape only.
expect shape_on_plan 2 "input dim 0 is 2 but the model fixes it to 1" -- run "$plan" --input-shape input=2x3x224x224
expect shape_name_on_plan 2 "names 'x', which is not a graph input" -- run "$plan" --input-shape x=1x3x224x224
expect plain_as_plan 2 "--emit plain writes an ONNX model" -- "$model_dir/model.onnx" -o "$work/p.plan" --emit plain
[[ ! -e "$work/p.plan" ]] || fail "plain_as_plan: wrote a file"

echo "plan_file: $passed passed, $failures failed"
exit $((failures > 0))
