#!/usr/bin/env bash
# The command line's contract: exit codes, messages naming the file, nothing
# written on failure, the input never overwritten.
#   cli_test.sh ONNX_FUSE WORK_DIR CLI_WITH_FAULTS
# CLI_WITH_FAULTS: the test build of the CLI, with the fault hook installed.
set -uo pipefail
onnx_fuse=$1 work=$2 with_faults=$3
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "$0")/expect.sh"

# A valid model: two nodes, Conv+Relu.
/usr/bin/python3 - "$work/model.onnx" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
graph = helper.make_graph(
    [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
    "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
cp "$work/model.onnx" "$work/model.orig"
printf 'not a model' >"$work/text.onnx"
head -c 100 "$work/model.onnx" >"$work/cut.onnx"

expect version 0 "onnx-fuse" -- --version
expect ok 0 "2 nodes -> 1 kernels" -- "$work/model.onnx" -o "$work/fused.onnx"
[[ -s "$work/fused.onnx" ]] || { echo "FAIL ok: no fused.onnx"; failures=$((failures + 1)); }
expect report_stdout 0 '"schema_version": 2' -- "$work/model.onnx" --report - -q
expect missing_file 5 "nowhere.onnx" -- "$work/nowhere.onnx" -o "$work/a.onnx"
expect not_a_model 3 "text.onnx" -- "$work/text.onnx" -o "$work/b.onnx"
expect truncated 3 "cut.onnx" -- "$work/cut.onnx" -o "$work/c.onnx"
expect overwrite_input 2 "refusing to overwrite" -- "$work/model.onnx" -o "$work/model.onnx"
expect overwrite_input_by_other_path 2 "refusing to overwrite" -- "$work/model.onnx" -o "$work/../$(basename "$work")/model.onnx"
expect bad_strategy 2 "strategy" -- "$work/model.onnx" --strategy nope
expect bad_shape 2 "input-shape" -- "$work/model.onnx" --input-shape x=1xAx3
expect unknown_input_shape 2 "'nope'" -- "$work/model.onnx" --input-shape nope=1x3x8x8
expect unwritable_output 5 "no_such_dir" -- "$work/model.onnx" -o "$work/no_such_dir/out.onnx"

expect patterns_command 0 "ConvBnRelu" -- patterns
expect explain 0 "fused in group" -- "$work/model.onnx" --explain Conv_0 -q
expect explain_unknown 2 "no node named 'nope'" -- "$work/model.onnx" --explain nope
expect pattern_strategy 0 "1 kernels" -- "$work/model.onnx" --strategy pattern -o "$work/p.onnx"
expect dot_svg 0 "kernels" -- "$work/model.onnx" --dot "$work/g.dot" --svg "$work/g.svg"
grep -q "cluster" "$work/g.dot" && grep -q "<svg" "$work/g.svg" || { echo "FAIL dot_svg: no cluster/svg"; failures=$((failures + 1)); }
expect emit_plain 0 "kernels" -- "$work/model.onnx" --emit plain -o "$work/plain.onnx"
grep -q "ai.onnxfuse" "$work/plain.onnx" && { echo "FAIL emit_plain: custom domain in plain output"; failures=$((failures + 1)); }
expect bad_emit 2 "emit" -- "$work/model.onnx" --emit nope
expect user_patterns_missing_dir 5 "no_such_patterns" -- "$work/model.onnx" --strategy pattern --patterns "$work/no_such_patterns"

expect run_check 0 "max rel" -- run "$work/model.onnx" --check --iterations 2 --warmup 1 --threads 1
expect run_json 0 '"median_ms"' -- run "$work/model.onnx" --json --iterations 2 --warmup 0
expect run_no_fuse 0 '"fused":false' -- run "$work/model.onnx" --no-fuse --json --iterations 1 --warmup 0
expect run_missing 5 "nowhere.onnx" -- run "$work/nowhere.onnx"

# The self-checks, on a fused plan made wrong on purpose (the test build's fault hook,
# tests/support/fault_injection.h): writing a plan verifies it and writes nothing when it
# is wrong; run --check names the first differing group and node. The shipped CLI
# never reads ONNXFUSE_FAULT_NODE.
expect plan_verified 0 "executable plan" -- "$work/model.onnx" -o "$work/model.plan"
export ONNXFUSE_FAULT_NODE=Relu_1
expect shipped_ignores_faults 0 "executable plan" -- "$work/model.onnx" -o "$work/shipped.plan"
onnx_fuse=$with_faults
expect plan_refused 6 "first differing group 0 (Conv_Relu: Conv_0,Relu_1) at node 'Relu_1'" -- "$work/model.onnx" -o "$work/d.plan"
expect plan_no_verify 0 "executable plan" -- "$work/model.onnx" -o "$work/unverified.plan" --no-verify
expect run_check_localized 1 "first differing group 0 (Conv_Relu: Conv_0,Relu_1) at node 'Relu_1'" -- run "$work/model.onnx" --check --iterations 1 --warmup 0
expect run_check_json 1 '"first_difference":{"function":"Conv_Relu","group":0' -- run "$work/model.onnx" --check --json --iterations 1 --warmup 0
unset ONNXFUSE_FAULT_NODE
onnx_fuse=$1

for f in a.onnx b.onnx c.onnx d.plan; do
  [[ -e "$work/$f" ]] && { echo "FAIL: $f written although the run failed"; failures=$((failures + 1)); }
done
cmp -s "$work/model.onnx" "$work/model.orig" || { echo "FAIL: the input model changed"; failures=$((failures + 1)); }
ls "$work" | grep -q '\.tmp' && { echo "FAIL: temporary files left behind"; failures=$((failures + 1)); }

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
