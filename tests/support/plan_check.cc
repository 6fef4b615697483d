#include "plan_check.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>

#include "backend/lower/core/fault_injection.h"
#include "fault_injection.h"
#include "onnxfuse/error.h"
#include "backend/plan/plan_file.h"
#include "pipeline/pipeline.h"
#include "pipeline/prepare_model.h"
#include "test_models.h"

namespace onnxfuse::test {

FusionPlan FuseAs(const Graph& graph, Strategy strategy) {
  static const auto library = std::make_shared<const std::vector<Pattern>>(LoadPatterns({}));
  FuseSettings settings;
  settings.strategy = strategy;
  settings.patterns = library;
  return FuseGraph(graph, settings);
}

FusionPlan FusePostdom(const Graph& graph) { return FuseAs(graph, Strategy::kPostdom); }

PlanRun RunPlan(const Graph& graph, bool fuse, const std::vector<Tensor>& inputs, Strategy strategy) {
  ExecutablePlan plan = ExecutablePlan::Compile(graph, FuseAs(graph, strategy), CompileOptions{fuse});
  return {plan.Run(inputs), plan.stats(), plan.Schedule(), plan.Describe()};
}

void CheckClose(const Tensor& actual, const std::vector<double>& expected, double rtol, double atol) {
  REQUIRE(actual.data.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i << ": " << std::setprecision(9) << actual.data[i] << ", expected " << expected[i]
                    << ", off by " << std::fabs(actual.data[i] - expected[i]));
    CHECK(actual.data[i] == Approx(expected[i]).margin(atol).epsilon(rtol));
  }
}

void CheckClose(const Tensor& actual, const std::vector<double>& expected, double rtol) {
  CheckClose(actual, expected, rtol, rtol / 100);
}

namespace {

// Every output of `fused` against the same output of `unfused`, each element
// within `tol` relative, or within tol / 10 of the output's largest magnitude:
// the two plans sum in other orders, and the rounding of a sum follows the
// size of its terms (the tensor's scale), not of its result.
void CheckEveryOutput(const PlanRun& unfused, const PlanRun& fused, double tol) {
  REQUIRE(fused.outputs.size() == unfused.outputs.size());
  INFO("fused:\n" << StepList(fused));
  for (std::size_t k = 0; k < unfused.outputs.size(); ++k) {
    INFO("output " << k << " '" << unfused.outputs[k].name << "'");
    CHECK(fused.outputs[k].dims == unfused.outputs[k].dims);
    CHECK(fused.outputs[k].elem_type == unfused.outputs[k].elem_type);
    if (unfused.outputs[k].elem_type != onnx::TensorProto::FLOAT) {
      CHECK(fused.outputs[k].int_data == unfused.outputs[k].int_data);
      continue;
    }
    double scale = 0;
    for (float v : unfused.outputs[k].data)
      if (std::isfinite(v)) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    CheckClose(fused.outputs[k], {unfused.outputs[k].data.begin(), unfused.outputs[k].data.end()}, tol,
               tol / 10 * scale);
  }
}

}  // namespace

std::string StepList(const PlanRun& run) {
  std::string list;
  for (const auto& step : run.steps) list += step + "\n";
  return list;
}

int StepsStartingWith(const PlanRun& run, const std::string& prefix) {
  return static_cast<int>(std::count_if(run.steps.begin(), run.steps.end(),
                                        [&](const std::string& step) { return step.rfind(prefix, 0) == 0; }));
}

int StepsContaining(const PlanRun& run, const std::string& text) {
  return static_cast<int>(std::count_if(run.steps.begin(), run.steps.end(),
                                        [&](const std::string& step) { return step.find(text) != std::string::npos; }));
}

int SlowSteps(const PlanRun& run) {
  return static_cast<int>(std::count_if(run.schedule.begin(), run.schedule.end(), [](const ScheduleStep& s) { return s.slow; }));
}

PlanRun CheckFusedAgainstUnfused(const Graph& graph, const std::vector<Tensor>& inputs, double tol,
                                 Strategy strategy) {
  PlanRun unfused = RunPlan(graph, false, inputs), fused = RunPlan(graph, true, inputs, strategy);
  CheckEveryOutput(unfused, fused, tol);
  return fused;
}

PlanRun CheckBoth(const std::string& text, const std::vector<Tensor>& inputs, const std::vector<double>& expected,
                  double tol) {
  return CheckBoth(text, inputs, expected, tol, tol / 100);
}

PlanRun CheckBoth(const std::string& text, const std::vector<Tensor>& inputs, const std::vector<double>& expected,
                  double tol, double atol) {
  Graph graph = GraphFromText(text);
  PlanRun unfused = RunPlan(graph, false, inputs), fused = RunPlan(graph, true, inputs);
  {
    INFO("unfused");
    CheckClose(unfused.outputs.at(0), expected, tol, atol);
  }
  {
    INFO("fused:\n" << StepList(fused));
    CheckClose(fused.outputs.at(0), expected, tol, atol);
  }
  CheckEveryOutput(unfused, fused, tol);
  return fused;
}

std::string CompileError(const std::string& text) {
  Graph graph = GraphFromText(text);
  try {
    ExecutablePlan::Compile(graph, FusePostdom(graph), {});
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kUnsupported);
    return e.what();
  }
  FAIL("compiled without an error");
  return "";
}

bool HaveGemmKernel() { return CpuIsaName().rfind("avx2", 0) == 0; }

FaultAt::FaultAt(const std::string& node) {
  setenv("ONNXFUSE_FAULT_NODE", node.c_str(), 1);
  backend::SetFaultHook(&AddOneAtFaultNode);
}

FaultAt::~FaultAt() {
  backend::SetFaultHook(nullptr);
  unsetenv("ONNXFUSE_FAULT_NODE");
}

void RequireWithinOneStep(const std::vector<float>& got, const std::vector<float>& want, float step,
                          double equal_share) {
  REQUIRE(got.size() == want.size());
  std::size_t equal = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", the definition " << want[i]);
    REQUIRE(std::fabs(got[i] - want[i]) <= step * 1.001f);
    equal += got[i] == want[i];
  }
  CHECK(static_cast<double>(equal) >= equal_share * static_cast<double>(got.size()));
}

}  // namespace onnxfuse::test
