#!/usr/bin/env bash
# The test suite from a fresh clone, in two tiers (docs/testing.md "Tiers").
#   scripts/test.sh            the tier that guards every change; CI runs exactly this
#   scripts/test.sh --full     also the long checks: run before resolving any change to
#                              the lowering, the kernels or the runtime
#   scripts/test.sh --no-sanitize   skips the sanitizer builds (quick local runs)
#
# Every change: the doc references; set-up and the build; the models the e2e
# tests read; ctest (unit and e2e tests, conformance and its pins, the fuzz
# targets' replays, the difftest's replayed cases and a 3-minute campaign);
# the optimizer and kernels built and tested without oneDNN; the zoo models
# that export in seconds; ctest again under AddressSanitizer +
# UndefinedBehaviorSanitizer (the unit tests, the broken-model corpus, the
# replays: not whole models); the concurrency tests under ThreadSanitizer.
# --full adds: all eleven models and the fusion agreement on them, each fuzz
# target for 5 minutes, a 20-minute difftest campaign, the sanitizer pass over
# whole models too, and the whole zoo (export ~6 min, 1.3 GB).
# Each stage's wall time goes to stderr ("stage: NAME took N s").
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=true full=false
for arg in "$@"; do
  case "$arg" in
    --no-sanitize) sanitize=false ;;
    --full) full=true ;;
    *) echo "usage: scripts/test.sh [--full] [--no-sanitize]" >&2; exit 2 ;;
  esac
done

stage_start=$SECONDS
stage_done() { echo "stage: $1 took $((SECONDS - stage_start)) s" >&2; stage_start=$SECONDS; }
werror=OFF
[[ "${CI:-}" == "true" ]] && werror=ON

/usr/bin/python3 scripts/check_doc_refs.py
bash scripts/build.sh
stage_done "set-up and build"

# resnet18 and mobilenet_v2 for the e2e tests (and efficientnet_b0 for its
# quantized twins), convnext_tiny and
# mobilenet_v3_large for their opset-18 twins (ctest opset_twins); --full: all
# eleven, for the fusion agreement on each. The recurrent models of ctest
# e2e.rnn with ONNX Runtime's reference outputs, the two transformers of
# ctest e2e.dynamic_shapes, whose shapes change from call to call, and the
# QDQ ResNet-18, MobileNet-V2 and EfficientNet-B0 of ctest e2e.quantized
# (calibrated with ONNX Runtime).
if $full; then
  /usr/bin/python3 scripts/export_models.py
else
  /usr/bin/python3 scripts/export_models.py resnet18 mobilenet_v2 mobilenet_v3_large convnext_tiny efficientnet_b0
fi
/usr/bin/python3 scripts/export_zoo.py --out models/rnn lstm_bidir2 gru_bidir2
/usr/bin/python3 scripts/export_dynamic.py
/usr/bin/python3 scripts/export_quantized.py
stage_done "model export"
exclude='^(zoo|full)$'
$full && exclude='^zoo$'
(cd build && ctest --output-on-failure -j"$(nproc)" -LE "$exclude")
stage_done ctest

# The optimizer (load -> report) and our kernels build and pass their tests
# without oneDNN: a second configuration with the backend left out.
cmake -S . -B build-core -DCMAKE_BUILD_TYPE=Release -DONNXFUSE_BACKEND=OFF -DONNXFUSE_WERROR="$werror" >/dev/null
cmake --build build-core -j"$(nproc)"
(cd build-core && ctest --output-on-failure -j"$(nproc)")
stage_done "build and ctest without oneDNN"

# The zoo models that export in seconds: a pass or a clean refusal each, never
# an internal error or a wrong output (a step on a slow implementation is
# listed: on AVX2, deeplabv3's dilated convolutions run on oneDNN's gemm; the
# full tier's ctest zoo fails on it). gpt2_decoder (a causal mask: Where),
# detector_small (TopK, ArgMax, Gather, Greater, Where) and the two
# torchvision detectors (NonZero, TopK, NonMaxSuppression and an If decided at
# run time: they run in stages) must pass both paths; the detectors also
# through the session and their plan files (tests/e2e/detectors.py).
zoo_ci=(mnasnet1_0 deeplabv3_mobilenet_v3_large ssdlite320_mobilenet_v3_large fasterrcnn_mobilenet_v3_large_320_fpn
        bert_encoder_op14 bert_encoder_op17 gpt2_decoder detector_small)
/usr/bin/python3 scripts/export_zoo.py "${zoo_ci[@]}"
bash scripts/zoo_check.sh --report-slow --must-pass gpt2_decoder detector_small ssdlite320_mobilenet_v3_large \
  fasterrcnn_mobilenet_v3_large_320_fpn -- "${zoo_ci[@]}"
PYTHONPATH=build/python /usr/bin/python3 tests/e2e/detectors.py build/onnx-fuse models/zoo build/e2e/detectors
stage_done "zoo subset"

if $full; then
  # The three libFuzzer targets (clang, ASan+UBSan, build-fuzz/), each for 5
  # minutes on its seeds; their inputs are replayed in every run (ctest fuzz_replay.*).
  for target in fuzz_model_loader fuzz_pattern_parser fuzz_plan_reader; do
    mkdir -p build-fuzz
    if ! bash scripts/fuzz.sh "$target" 300 >"build-fuzz/$target.log" 2>&1; then
      tail -40 "build-fuzz/$target.log" >&2
      echo "fuzz: $target failed (log: build-fuzz/$target.log)" >&2
      exit 1
    fi
    echo "fuzz: $target ran 300 s: $(grep -o 'Done [0-9]* runs' "build-fuzz/$target.log" | tail -1), no finding" >&2
  done
  stage_done "fuzz targets"
  bash scripts/difftest.sh 1200 $((RANDOM * 1000)) --cases build/difftest-full-cases
  stage_done "difftest campaign (20 min)"
  /usr/bin/python3 scripts/export_zoo.py
  (cd build && ctest --output-on-failure -L '^zoo$')
  stage_done "the whole zoo"
fi

if $sanitize; then
  # build-asan/: everything with AddressSanitizer + UndefinedBehaviorSanitizer
  # (ONNXFUSE_SANITIZE), built by clang at -O0, our kernels at -O1
  # (CMakeLists.txt says why); every test except those labelled no_sanitize (whole
  # models against ORT's numerics, the ONNX conformance run), and, outside
  # --full, those labelled whole_model. Halt and abort on the first report;
  # leaks are checked (LeakSanitizer: protobuf's and ONNX's registries are
  # static and still reachable at exit, so they are not leaks);
  # tests/sanitizer.supp says what is suppressed and why.
  start=$SECONDS
  cmake -S . -B build-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release -DONNXFUSE_SANITIZE=ON \
        -DONNXFUSE_WERROR="$werror" >/dev/null
  cmake --build build-asan -j"$(nproc)"
  built=$SECONDS
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:check_initialization_order=1:detect_stack_use_after_return=1"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$PWD/tests/sanitizer.supp"
  export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizer.supp:print_suppressions=0"
  exclude='^(no_sanitize|zoo|full|whole_model)$'
  $full && exclude='^(no_sanitize|zoo)$'
  more=()  # ONNXFUSE_ASAN_EXCLUDE=REGEX leaves out more tests
  [[ -n "${ONNXFUSE_ASAN_EXCLUDE:-}" ]] && more=(-E "$ONNXFUSE_ASAN_EXCLUDE")
  (cd build-asan && ctest --output-on-failure -j"$(nproc)" -LE "$exclude" "${more[@]}")
  echo "sanitizer pass: build $((built - start)) s, tests $((SECONDS - built)) s" >&2
  stage_done "sanitizer pass"

  # build-tsan/ (ONNXFUSE_TSAN, clang, as build-asan/): concurrent Runs on one InferenceSession (the
  # shape cache, the pool of plan instances, shared prepacked weights, the
  # steps), the test cases tagged [threads]; only their binary and the
  # libraries it links. TSAN_OPTIONS (halt_on_error=1, the suppressions of
  # tests/tsan.supp: uninstrumented libraries only, each with its reason) are
  # set on the ctest test.
  start=$SECONDS
  cmake -S . -B build-tsan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release -DONNXFUSE_TSAN=ON \
        -DONNXFUSE_WERROR="$werror" >/dev/null
  cmake --build build-tsan -j"$(nproc)" --target onnxfuse_tsan_tests
  built=$SECONDS
  (cd build-tsan && ctest --output-on-failure -L '^tsan$')
  echo "thread sanitizer pass: build $((built - start)) s, tests $((SECONDS - built)) s" >&2
  stage_done "thread sanitizer pass"
fi
