#!/bin/bash
# The fuse path on a folder of ONNX backend tests (issue 22: Debian's
# libonnx-testdata pytorch-converted/ and pytorch-operator/, opsets 6-9):
# every model is written by `onnx-fuse MODEL -o fused.onnx` (converted at load)
# and the written model runs in ONNX Runtime on test_data_set_0, compared with
# its expected outputs at 1e-4 (compare.js --expect). A clean refusal (exit 4)
# is not claimed; any other failure fails. Prints passed / claimed / total.
#   tests/e2e/fuse_path_folder.sh ONNX_FUSE FOLDER WORK_DIR
set -uo pipefail
bin=$1 folder=$2 work=$3
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rm -rf "$work" && mkdir -p "$work"
total=0 claimed=0 passed=0 failed=()
for dir in "$folder"/*/; do
  name=$(basename "$dir")
  [[ -f $dir/model.onnx ]] || continue
  total=$((total + 1))
  "$bin" "$dir/model.onnx" -o "$work/$name.onnx" -q 2>"$work/$name.err"
  rc=$?
  ((rc == 4)) && continue
  claimed=$((claimed + 1))
  if ((rc != 0)); then failed+=("$name: onnx-fuse exit $rc: $(tail -n1 "$work/$name.err")"); continue; fi
  if node "$root/scripts/ort/compare.js" "$work/$name.onnx" --expect "$dir/test_data_set_0" --rtol 1e-4 >"$work/$name.ort" 2>&1; then
    passed=$((passed + 1))
  else
    failed+=("$name: ONNX Runtime on the written model: $(grep -m1 -E 'FAIL|Error|error' "$work/$name.ort")")
  fi
done
for f in "${failed[@]}"; do echo "FAIL $f"; done
echo "fuse path $(basename "$folder"): passed $passed of $claimed claimed, $total models"
((${#failed[@]} == 0))
