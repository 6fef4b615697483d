// One ONNX node test, run inside the conformance runner's forked child.
#pragma once

#include <string>

namespace onnxfuse::conformance {

/// ONNX backend-test tolerance (onnx/backend/test/runner: numpy assert_allclose).
inline constexpr double kRtol = 1e-3, kAtol = 1e-7;

/// What runs a claimed test's data sets: the fused and the unfused plan, or
/// InferenceSession (with its defaults) on the same model.
enum class Via { kPlans, kSession };

/// Runs the node test in `dir` (model.onnx, test_data_set_N/) and reports on
/// stdout, one "@@" line each:
///   @@UNSUPPORTED <reason>   not claimed: loading the model or its inputs, or
///                            compiling it in both modes, raised Error(kUnsupported)
///                            (any other exception is a @@FAIL of a claimed test)
///   @@BOUND <name>           an input bound as a constant (see run_case.cc)
///   @@CHECK <abs> <rel>      one output compared: max abs / max rel error
///   @@FAIL <detail>          one failure of a claimed test (any number)
///   @@DONE                   finished; a child that ends without it crashed
/// Whether a test is claimed, and which inputs are bound, is decided by
/// compiling the plans whatever `via` says, so that both runs claim the same tests.
void RunCase(const std::string& dir, Via via = Via::kPlans);

}  // namespace onnxfuse::conformance
