#!/bin/bash
# The fuse path on a folder of ONNX backend tests (Debian's
# libonnx-testdata pytorch-converted/ and pytorch-operator/, opsets 6-9):
# every model is written by `onnx-fuse MODEL -o fused.onnx` (converted at load)
# and the written model runs in ONNX Runtime on test_data_set_0, compared with
# its expected outputs at 1e-4 (compare.js --expect).
#
# Exit 4 is "unsupported" (docs/cli.md "Exit codes"). Only a refusal whose
# message names what is unsupported -- a node and its op, an IR version or
# opset out of range or beyond the version converter, an element type or
# tensor storage onnx-fuse has no support for -- is "not claimed", and is
# printed. Any other exit 4 (a message naming none of these) fails, as does
# every other non-zero exit and every written model ONNX Runtime disagrees with.
# Prints the failures, the refusals, and passed / claimed / total.
#   tests/e2e/fuse_path_folder.sh ONNX_FUSE FOLDER WORK_DIR
set -uo pipefail
bin=$1 folder=$2 work=$3
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rm -rf "$work" && mkdir -p "$work"

# The refusals of the loader, the opset converters and the tensor decoders
# (src/load, src/ir), as onnx-fuse words them after "error: MODEL: ".
unsupported_re="node '[^']*' \([A-Za-z_][A-Za-z0-9_.]*[,)]"
unsupported_re+="|(IR version|default-domain opset) [0-9]+ is outside the supported range"
unsupported_re+="|opset [0-9]+ cannot be converted to opset [0-9]+"
unsupported_re+="|is an? [a-z0-9]+ tensor, which opset [0-9]+ has no type for|casts to [a-z0-9]+, which opset [0-9]+ has no type for"
unsupported_re+="|tensor element type [0-9]+ is not supported|tensor data is stored externally"
unsupported_re+="|is segmented, which onnx-fuse does not support|has sparse initializers"

# The message of a refusal without the "error: MODEL: " prefix; empty when the
# message names no unsupported op or feature.
refusal_reason() {  # ERR_FILE MODEL_PATH
  local line
  line=$(grep -v '^[[:space:]]*$' "$1" | tail -n1)
  line=${line#error: }
  line=${line#"$2: "}
  [[ $line =~ $unsupported_re ]] && printf '%s' "$line"
}

total=0 claimed=0 passed=0 failed=() refused=()
for dir in "$folder"/*/; do
  name=$(basename "$dir")
  [[ -f $dir/model.onnx ]] || continue
  total=$((total + 1))
  "$bin" "$dir/model.onnx" -o "$work/$name.onnx" -q 2>"$work/$name.err"
  rc=$?
  if ((rc == 4)); then
    if reason=$(refusal_reason "$work/$name.err" "$dir/model.onnx"); then
      refused+=("$name: $reason")
      continue
    fi
    claimed=$((claimed + 1))
    failed+=("$name: onnx-fuse exit 4 without naming an unsupported op or feature: $(tail -n1 "$work/$name.err")")
    continue
  fi
  claimed=$((claimed + 1))
  if ((rc != 0)); then failed+=("$name: onnx-fuse exit $rc: $(tail -n1 "$work/$name.err")"); continue; fi
  if node "$root/scripts/ort/compare.js" "$work/$name.onnx" --expect "$dir/test_data_set_0" --rtol 1e-4 >"$work/$name.ort" 2>&1; then
    passed=$((passed + 1))
  else
    failed+=("$name: ONNX Runtime on the written model: $(grep -m1 -E 'FAIL|Error|error' "$work/$name.ort")")
  fi
done
for r in "${refused[@]}"; do echo "NOT CLAIMED $r"; done
for f in "${failed[@]}"; do echo "FAIL $f"; done
echo "fuse path $(basename "$folder"): passed $passed of $claimed claimed, $total models (${#refused[@]} refused as unsupported)"
((${#failed[@]} == 0))
