#!/usr/bin/env bash
# The whole test suite from a fresh clone: set up, build, export the two small
# real models the end-to-end tests use, run ctest (the differential tester's
# 3-minute campaign and saved cases included), build and test the optimizer and
# the kernels without oneDNN (build-core/), build and run the fuzz targets
# for 30 s each, then run ctest again under the sanitizers, and the concurrency
# tests under ThreadSanitizer.
#   scripts/test.sh [--no-sanitize]
# The sanitizer pass (issue 5; on by default, so CI runs it) builds build-asan/
# with AddressSanitizer + UndefinedBehaviorSanitizer (ONNXFUSE_SANITIZE) and
# runs every test there except those labelled no_sanitize in tests/CMakeLists.txt
# (the ONNX conformance run: ~7 min under ASan): the unit tests, fuzz replays,
# cli, broken_models, nothing_lost and the e2e tests on the small models. Any
# sanitizer report fails the run. Measured on the 2-core development machine,
# shared (load average 3-7): build 21 min from scratch (17 CPU-minutes), tests
# 4-6 min. --no-sanitize skips it and the ThreadSanitizer pass below (quick
# local runs); ONNXFUSE_ASAN_EXCLUDE=REGEX leaves out more tests from it.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=true
for arg in "$@"; do
  case "$arg" in
    --no-sanitize) sanitize=false ;;
    --sanitize) sanitize=true ;;  # the default; kept for old command lines
    *) echo "usage: scripts/test.sh [--no-sanitize]" >&2; exit 2 ;;
  esac
done

# Each stage's wall time goes to stderr ("stage: NAME took N s"), so that a CI
# log shows where its time went.
stage_start=$SECONDS
stage_done() { echo "stage: $1 took $((SECONDS - stage_start)) s" >&2; stage_start=$SECONDS; }

bash scripts/build.sh
stage_done "set-up and build"
# The eleven (about 1 min of export, 0.8 GB): resnet18 and mobilenet_v2 for the
# e2e tests, convnext_tiny and mobilenet_v3_large for their opset-18 twins
# (ctest opset_twins, issue 22), and all eleven for the agreement of the
# report's groups with the executed steps (ctest e2e.fusion_agreement, issue 21).
/usr/bin/python3 scripts/export_models.py
# The recurrent models of ctest e2e.rnn (issue 23: 2-layer bidirectional LSTM
# and GRU, 50 steps; seconds, 4 MB), with ONNX Runtime's reference outputs.
/usr/bin/python3 scripts/export_zoo.py --out models/rnn lstm_bidir2 gru_bidir2
stage_done "model export"
# -LE zoo: the whole zoo conformance run needs all of scripts/export_zoo.py's
# models (ctest -L zoo, ~6 min of export, 1.3 GB); CI runs the part that fits,
# below.
(cd build && ctest --output-on-failure -j"$(nproc)" -LE '^zoo$')
stage_done ctest

# The optimizer (load -> report) and our kernels build and pass their tests
# without oneDNN (issue 21): a second configuration with the backend left out.
werror_core=OFF
[[ "${CI:-}" == "true" ]] && werror_core=ON
cmake -S . -B build-core -DCMAKE_BUILD_TYPE=Release -DONNXFUSE_BACKEND=OFF -DONNXFUSE_WERROR="$werror_core" >/dev/null
cmake --build build-core -j"$(nproc)"
(cd build-core && ctest --output-on-failure -j"$(nproc)")
stage_done "build and ctest without oneDNN"

# The zoo models that export in seconds (issue 25): a pass or a clean refusal
# each, never an internal error or a wrong output (ssdlite320 is the detector
# whose Constant -> ReduceMax was an internal error). gpt2_decoder (a causal
# mask: Where) and detector_small (TopK, ArgMax, Gather, Greater, Where: issue
# 23) must pass both paths.
zoo_ci=(mnasnet1_0 deeplabv3_mobilenet_v3_large ssdlite320_mobilenet_v3_large bert_encoder_op14 bert_encoder_op17 gpt2_decoder
        detector_small)
/usr/bin/python3 scripts/export_zoo.py "${zoo_ci[@]}"
bash scripts/zoo_check.sh --must-pass gpt2_decoder detector_small -- "${zoo_ci[@]}"
stage_done "zoo subset"

# The three libFuzzer targets (clang, ASan+UBSan, build-fuzz/): built, and each
# run for 30 s on its seeds, so that a compile error or a new crash fails here.
for target in fuzz_model_loader fuzz_pattern_parser fuzz_plan_reader; do
  mkdir -p build-fuzz
  if ! bash scripts/fuzz.sh "$target" 30 >"build-fuzz/$target.log" 2>&1; then
    tail -40 "build-fuzz/$target.log" >&2
    echo "fuzz: $target failed (log: build-fuzz/$target.log)" >&2
    exit 1
  fi
  echo "fuzz: $target ran 30 s: $(grep -o 'Done [0-9]* runs' "build-fuzz/$target.log" | tail -1), no finding" >&2
done
stage_done "fuzz targets"

if $sanitize; then
  start=$SECONDS
  werror=OFF
  [[ "${CI:-}" == "true" ]] && werror=ON
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DONNXFUSE_SANITIZE=ON -DONNXFUSE_WERROR="$werror" >/dev/null
  cmake --build build-asan -j"$(nproc)"
  built=$SECONDS
  # halt/abort on the first report; leaks are checked (LeakSanitizer: protobuf's and
  # ONNX's registries are static and still reachable at exit, so they are not
  # leaks); see tests/sanitizer.supp for what is suppressed and why.
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:check_initialization_order=1:detect_stack_use_after_return=1"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$PWD/tests/sanitizer.supp"
  export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizer.supp:print_suppressions=0"
  exclude=()
  [[ -n "${ONNXFUSE_ASAN_EXCLUDE:-}" ]] && exclude=(-E "$ONNXFUSE_ASAN_EXCLUDE")
  (cd build-asan && ctest --output-on-failure -j"$(nproc)" -LE '^(no_sanitize|zoo)$' "${exclude[@]}")
  echo "sanitizer pass: build $((built - start)) s, tests $((SECONDS - built)) s" >&2
  stage_done "sanitizer pass"

  # The ThreadSanitizer pass (issue 24): concurrent Runs on one InferenceSession
  # (the shape cache, the pool of plan instances, shared prepacked weights, the
  # steps), the test cases tagged [threads] (tests/unit/session/
  # session_threads_test.cc). build-tsan/ (ONNXFUSE_TSAN) builds only their
  # binary and the libraries it links; TSAN_OPTIONS (halt_on_error=1, the
  # suppressions of tests/tsan.supp: uninstrumented libraries only, each with
  # its reason) are set on the ctest test. Measured from an empty build-tsan/ on
  # the 2-core development machine, shared (load average 10-13): build 1176 s
  # wall, 7.5 CPU-minutes (about 4-5 min on two free cores, by the ratio of the
  # ASan build's 17 CPU-minutes to its 12 min in CI); tests 8-25 s.
  start=$SECONDS
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Release -DONNXFUSE_TSAN=ON -DONNXFUSE_WERROR="$werror" >/dev/null
  cmake --build build-tsan -j"$(nproc)" --target onnxfuse_tsan_tests
  built=$SECONDS
  (cd build-tsan && ctest --output-on-failure -L '^tsan$')
  echo "thread sanitizer pass: build $((built - start)) s, tests $((SECONDS - built)) s" >&2
  stage_done "thread sanitizer pass"
fi
