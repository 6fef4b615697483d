#!/usr/bin/env bash
# Broken and awkward models (tests/broken_models/, made by make_corpus.py):
# each gives its expected exit code and message, or a correct result; never a
# crash, an internal error, or a partial output.
#   broken_models.sh ONNX_FUSE WORK_DIR
# For every file and every strategy: the exit code is the table's (and one of
# 0/2/3/4/5: 70 or a signal is a failure), stderr names the file and holds the
# table's substring; on failure no output file and no temporary file exist, on
# success the output exists. The If decided at run time keeps its node
# byte-for-byte, the Loop with a constant trip count is unrolled, and both
# give ONNX Runtime the original's outputs.
set -uo pipefail
onnx_fuse=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
corpus="$here/../broken_models" compare="$here/../../scripts/ort/compare.js"
rm -rf "$work" && mkdir -p "$work"
failures=0 passed=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# file                          exit  stderr substring
table=(
  "empty.onnx                   3  not an ONNX model (no graph)"
  "text.onnx                    3  not an ONNX model"
  "truncated.onnx               3  not an ONNX model"
  "bitflip_tag.onnx             3  not an ONNX model"
  "bitflip_op_type.onnx         3  no operator Rdlu exists in opset 13"
  "cycle.onnx                   3  the graph has a cycle through node 'Add_0'"
  "dangling_input.onnx          3  reads 'ghost', which no node"
  "duplicate_names.onnx         3  writes 'z', which node 'Relu_0' (Relu) also writes"
  "wrong_input_count.onnx       3  node 'Relu_0' (Relu): Node () has input size 2"
  "opset_too_new.onnx           4  default-domain opset 99 is outside the supported range"
  "ir_version_too_new.onnx      4  IR version 99 is outside the supported range"
  "attribute_wrong_type.onnx    3  Mismatched attribute type in ' : perm'"
  "type_mismatch.onnx           3  B has inconsistent type tensor(int64)"
  "conv_rank_mismatch.onnx      3  the weight has rank 4 but the input has rank 3"
  "conv_transpose_rank_mismatch.onnx 3 the weight has rank 1 but the input has rank 4"
  "bad_function.onnx            3  the ONNX checker refuses it"
  "undefined_function.onnx      3  (Conv_Relu) calls no function of the model"
  "deep_nesting.onnx            3  nested deeper than 100 messages"
  "raw_data_short.onnx          3  initializer 'w' (FLOAT, dims [4]) has 12 bytes of raw_data, but its dims need 16 bytes"
  "typed_data_wrong_field.onnx  3  initializer 'w' (FLOAT, dims [4]) holds int64_data"
  "negative_dim.onnx            3  initializer 'w' (FLOAT, dims [-4]) has a negative dim"
  "huge_dim_initializer.onnx    3  its dims need 4398046511104 bytes"
  "huge_dim_overflow.onnx       3  more elements than fit in 64 bits"
  "huge_dim_external.onnx       3  4398046511104 bytes at offset 0 run past the end of the file (16 bytes)"
  "external_outside.onnx        3  external data '../outside.bin' points outside the model's folder"
  "external_absolute.onnx       3  external data '/etc/passwd' must be a path relative to the model's folder"
  "external_missing.onnx        5  external data 'missing.bin': cannot open"
  "external_bad_offset.onnx     3  has a bad offset '12abc'"
  "external_past_end.onnx       3  16 bytes at offset 8 run past the end of the file"
  "external_ok.onnx             0  2 nodes ->"
  "zero_dim.onnx                0  5 nodes ->"
  "huge_dim_input.onnx          0  2 nodes ->"
  "residual_self_add.onnx       0  5 nodes ->"
  "if_subgraph.onnx             0  8 nodes ->"
  "loop_subgraph.onnx           0  9 nodes ->"
)
declare -A listed
for row in "${table[@]}"; do
  read -r file code needle <<<"$row"
  listed[$file]=1
  for strategy in postdom greedy pattern; do
    out="$work/${file%.onnx}.$strategy.onnx"
    echo "old output" >"$work/previous.onnx"
    "$onnx_fuse" "$corpus/$file" -o "$out" --strategy "$strategy" >"$work/stdout" 2>"$work/stderr"
    got=$?
    what="$file ($strategy)"
    case $got in 0 | 2 | 3 | 4 | 5) ;; *) fail "$what: exit $got: a crash or internal error"; cat "$work/stderr"; continue ;; esac
    if [[ $got -ne $code ]]; then fail "$what: exit $got, want $code"; cat "$work/stderr"; continue; fi
    grep -qF -- "$needle" "$work/stderr" || { fail "$what: stderr lacks '$needle'"; cat "$work/stderr"; continue; }
    if [[ $code -ne 0 ]]; then
      grep -qF -- "$file" "$work/stderr" || { fail "$what: the message does not name the file"; continue; }
      [[ -e "$out" ]] && { fail "$what: an output file exists after a failure"; continue; }
    else
      [[ -s "$out" ]] || { fail "$what: no output file"; continue; }
    fi
    ls "$work" | grep -q '\.tmp\.' && { fail "$what: a temporary file was left behind"; continue; }
    passed=$((passed + 1))
  done
done
for path in "$corpus"/*.onnx; do
  [[ -n "${listed[$(basename "$path")]:-}" ]] || fail "$(basename "$path") is in the corpus but not in the table"
done

# `run` on every file: it computes, or refuses with a message naming the file
# (exit 2-5); never a crash or an internal error, never a partial output. Under
# the sanitizer build this is where an out-of-bounds read or write would show.
for path in "$corpus"/*.onnx; do
  file=$(basename "$path") outputs="$work/run-${file%.onnx}"
  "$onnx_fuse" run "$path" --iterations 1 --warmup 0 --outputs "$outputs" >"$work/stdout" 2>"$work/stderr"
  got=$?
  case $got in
    0) [[ -s "$outputs/output_0.pb" ]] || { fail "run $file: exit 0 without output_0.pb"; continue; } ;;
    2 | 3 | 4 | 5)
      grep -qF -- "$file" "$work/stderr" || { fail "run $file: the message does not name the file"; cat "$work/stderr"; continue; }
      [[ -e "$outputs" ]] && { fail "run $file: outputs written by a failed run"; continue; } ;;
    *) fail "run $file: exit $got: a crash or internal error"; cat "$work/stderr"; continue ;;
  esac
  passed=$((passed + 1))
done

# An If decided at run time stays opaque: written byte-for-byte. The Loop with
# a constant trip count is unrolled (rewrite/inline_control_flow.h): no Loop
# is left. And these outputs compute what their inputs did.
for model in if_subgraph loop_subgraph residual_self_add; do
  for strategy in postdom greedy pattern; do
    out="$work/$model.$strategy.onnx"
    [[ -f "$out" ]] || continue
    [[ $model == residual_self_add ]] ||
      /usr/bin/python3 - "$corpus/$model.onnx" "$out" "$model" <<'PY' || fail "$model ($strategy): the subgraph node changed"
import sys, onnx
def subgraph_nodes(path):
    return [n.SerializeToString() for n in onnx.load(path).graph.node if n.op_type in ("If", "Loop")]
before, after = subgraph_nodes(sys.argv[1]), subgraph_nodes(sys.argv[2])
if sys.argv[3] == "loop_subgraph":
    sys.exit(0 if before and not after else 1)
sys.exit(0 if before and before == after else 1)
PY
    node "$compare" "$corpus/$model.onnx" "$out" --rtol 1e-5 >"$work/compare" 2>&1 ||
      { fail "$model ($strategy): ONNX Runtime disagrees"; cat "$work/compare"; }
  done
done

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
