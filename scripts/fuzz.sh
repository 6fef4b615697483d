#!/usr/bin/env bash
# Builds one libFuzzer target (clang, ASan+UBSan, into build-fuzz/) and runs it.
#
#   scripts/fuzz.sh TARGET SECONDS [extra libFuzzer flags...]
#   TARGET: fuzz_model_loader | fuzz_pattern_parser | fuzz_plan_reader
#
# Seeds: tests/fuzz_corpus/TARGET/ (tiny valid inputs, made by
# tests/fuzz_corpus/make_corpus.py; never written to). New inputs go to
# build-fuzz/corpus/TARGET/, crash/timeout/OOM inputs to build-fuzz/findings/TARGET/.
# One job, one process: the machine has two shared cores. Exit status is
# libFuzzer's: 0 when the time ran out without a finding.
# To replay a finding: build-fuzz/fuzz/TARGET build-fuzz/findings/TARGET/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/fuzz.sh fuzz_model_loader|fuzz_pattern_parser|fuzz_plan_reader SECONDS [libFuzzer flags]" >&2; exit 2; }
[[ $# -ge 2 ]] || usage
target=$1 seconds=$2
shift 2
case "$target" in fuzz_model_loader | fuzz_pattern_parser | fuzz_plan_reader) ;; *) usage ;; esac
[[ "$seconds" =~ ^[0-9]+$ ]] || usage

bash scripts/setup.sh
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DONNXFUSE_FUZZ=ON -DONNXFUSE_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz -j2 --target "$target"
seeds=tests/fuzz_corpus/$target
[[ -d "$seeds" ]] || /usr/bin/python3 tests/fuzz_corpus/make_corpus.py
work=build-fuzz/corpus/$target findings=build-fuzz/findings/$target
mkdir -p "$work" "$findings"
dict=()
[[ -f fuzz/$target.dict ]] && dict=(-dict="fuzz/$target.dict")

# UBSan findings abort (the build uses -fno-sanitize-recover); leaks are
# findings too (libFuzzer checks for leaks per input, after the first).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "build-fuzz/fuzz/$target" "$work" "$seeds" "${dict[@]}" -max_total_time="$seconds" -rss_limit_mb=4096 \
     -timeout=10 -print_final_stats=1 -artifact_prefix="$findings/" "$@"
