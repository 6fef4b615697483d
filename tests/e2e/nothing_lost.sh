#!/usr/bin/env bash
# Nothing lost when a write fails part-way. RLIMIT_FSIZE (prlimit --fsize) on
# the onnx-fuse process stands in for a full disk: with SIGXFSZ ignored, a
# write past the limit fails with EFBIG as a write to a full disk fails with
# ENOSPC, and needs no root, mount or tmpfs.
#   nothing_lost.sh ONNX_FUSE WORK_DIR
# Checks: exit code 5, one error line naming the output file and the reason,
# the previous output file byte-for-byte untouched, no temporary file left, the
# input unchanged; then, without the limit, the same command succeeds.
set -uo pipefail
onnx_fuse=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
command -v prlimit >/dev/null || { echo "prlimit (util-linux) is missing"; exit 1; }

# Conv + Relu with a 64 KB weight: the fused model is larger than the 16 KB limit.
/usr/bin/python3 - "$work/model.onnx" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
w = numpy_helper.from_array(np.linspace(-1, 1, 128 * 128, dtype=np.float32).reshape(128, 128, 1, 1), "w")
graph = helper.make_graph(
    [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["y"])],
    "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 128, 2, 2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 128, 2, 2])], [w])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
cp "$work/model.onnx" "$work/model.orig"

limited() {  # limited BYTES ARGS...: onnx-fuse with a file-size limit, SIGXFSZ ignored
  local bytes=$1
  shift
  (trap '' XFSZ && exec prlimit --fsize="$bytes" "$onnx_fuse" "$@")
}

for target in out.onnx report.json; do
  echo "previous $target" >"$work/$target"
  cp "$work/$target" "$work/$target.orig"
done

limited 16384 "$work/model.onnx" -o "$work/out.onnx" >"$work/stdout" 2>"$work/stderr"
code=$?
[[ $code -eq 5 ]] || fail "model write: exit $code, want 5"
grep -qF "$work/out.onnx: cannot write" "$work/stderr" && grep -qF "File too large" "$work/stderr" ||
  fail "model write: the message does not name the file and the reason"
[[ $(grep -c . "$work/stderr") -eq 1 ]] || fail "model write: more than one line on stderr"
cat "$work/stderr"

# The report is written after the model: a model that fits and a report that does not.
limited 2048 "$work/model.onnx" --report "$work/report.json" -q >/dev/null 2>"$work/stderr"
code=$?
[[ $code -eq 5 ]] || fail "report write: exit $code, want 5"
grep -qF "$work/report.json: cannot write" "$work/stderr" || fail "report write: the message does not name the file"
cat "$work/stderr"

for target in out.onnx report.json; do
  cmp -s "$work/$target" "$work/$target.orig" || fail "the previous $target changed"
done
ls "$work" | grep -q '\.tmp\.' && fail "a temporary file was left behind: $(ls "$work" | grep '\.tmp\.')"
cmp -s "$work/model.onnx" "$work/model.orig" || fail "the input model changed"

"$onnx_fuse" "$work/model.onnx" -o "$work/out.onnx" -q || fail "without the limit the same command fails"
cmp -s "$work/out.onnx" "$work/out.onnx.orig" && fail "without the limit the output was not replaced"

echo "$failures failed"
[[ $failures -eq 0 ]]
