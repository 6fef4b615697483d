#!/usr/bin/env bash
# Numerics of every built-in pattern through ONNX Runtime.
#   pattern_numerics.sh ONNX_FUSE TESTS_BINARY WORK_DIR
# The [pattern_library] unit tests write each positive case's model (NAME.onnx)
# and the ai.onnxfuse op types its fused model must contain (NAME.expect, one a
# line) to $ONNXFUSE_PATTERN_MODELS_DIR (tests/unit/patterns/pattern_library.h). Each model
# is fused here with `onnx-fuse --strategy pattern`, checked for those ops, and
# run against the original by ONNX Runtime on the same pseudo-random inputs:
# max relative difference <= 1e-5 (the functions run the same ops as the
# originals; nothing is folded). Every pattern `onnx-fuse patterns` lists must
# be covered by some case.
set -uo pipefail
onnx_fuse=$1 tests=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
compare="$here/../../scripts/ort/compare.js"
rm -rf "$work" && mkdir -p "$work/models" "$work/fused"

if ! ONNXFUSE_PATTERN_MODELS_DIR="$work/models" "$tests" "[pattern_library]" >"$work/unit.log" 2>&1; then
  cat "$work/unit.log"
  echo "FAIL: the [pattern_library] unit tests failed"
  exit 1
fi

failures=0 passed=0
fail() { echo "FAIL $1"; failures=$((failures + 1)); }

for model in "$work"/models/*.onnx; do
  [[ -e "$model" ]] || { fail "no models were written to $work/models"; break; }
  name=$(basename "$model" .onnx)
  fused="$work/fused/$name.onnx"
  if ! "$onnx_fuse" "$model" -o "$fused" --strategy pattern -q >"$work/fused/$name.log" 2>&1; then
    fail "$name: onnx-fuse failed: $(cat "$work/fused/$name.log")"
    continue
  fi
  # The fused model calls the expected ai.onnxfuse functions.
  if ! /usr/bin/python3 - "$fused" "$work/models/$name.expect" <<'PY'; then
import sys, onnx
model = onnx.load(sys.argv[1])
calls = {n.op_type for n in model.graph.node if n.domain == "ai.onnxfuse"}
expected = set(open(sys.argv[2]).read().split())
missing = expected - calls
if missing:
    sys.exit(f"missing ai.onnxfuse ops {sorted(missing)}; the fused model calls {sorted(calls)}")
PY
    fail "$name: the fused model lacks an expected op"
    continue
  fi
  if ! node "$compare" "$model" "$fused" --rtol 1e-5 >"$work/fused/$name.compare" 2>&1; then
    cat "$work/fused/$name.compare"
    fail "$name: ONNX Runtime outputs differ"
    continue
  fi
  passed=$((passed + 1))
done

# Every built-in pattern has a case (the writer names a call without an optional input NAME_no_...).
for pattern in $("$onnx_fuse" patterns | awk '/ benefit /{print $1}'); do
  grep -qxE "$pattern(_no_.*)?" "$work"/models/*.expect || fail "pattern $pattern has no numerics case"
done

echo "$passed models passed, $failures failed"
[[ $failures -eq 0 ]]
