# Shared by the e2e scripts that check onnx-fuse's command-line contract;
# source it after setting $onnx_fuse (the executable) and $work (a scratch folder).
failures=0 passed=0

# expect NAME EXIT_CODE SUBSTRING -- ARGS...: runs onnx-fuse ARGS and counts a
# pass when it exits with EXIT_CODE and SUBSTRING appears on stderr or stdout.
expect() {
  local name=$1 code=$2 needle=$3
  shift 4
  "$onnx_fuse" "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [[ $got -ne $code ]] || ! grep -qF -- "$needle" "$work/err" "$work/out"; then
    echo "FAIL $name: exit $got (want $code, output containing '$needle'):"; cat "$work/err" "$work/out"
    failures=$((failures + 1))
  else
    passed=$((passed + 1))
  fi
}
