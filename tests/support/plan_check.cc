#include "plan_check.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>

#include "onnxfuse/error.h"
#include "onnxfuse/plan_file.h"
#include "fuse/postdom_fuser.h"
#include "test_models.h"

namespace onnxfuse::test {

PlanRun RunPlan(const Graph& graph, bool fuse, const std::vector<Tensor>& inputs) {
  ExecutablePlan plan = ExecutablePlan::Compile(graph, FuseByPostDominator(graph, {}), CompileOptions{fuse});
  return {plan.Run(inputs), plan.stats(), plan.Schedule(), plan.Describe()};
}

void CheckClose(const Tensor& actual, const std::vector<double>& expected, double tol) {
  REQUIRE(actual.data.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i);
    CHECK(actual.data[i] == Approx(expected[i]).margin(tol).epsilon(tol));
  }
}

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

PlanRun CheckFusedAgainstUnfused(const Graph& graph, const std::vector<Tensor>& inputs, double tol) {
  PlanRun unfused = RunPlan(graph, false, inputs), fused = RunPlan(graph, true, inputs);
  std::vector<double> expected(unfused.outputs.at(0).data.begin(), unfused.outputs.at(0).data.end());
  INFO("fused:\n" << StepList(fused));
  CheckClose(fused.outputs.at(0), expected, tol);
  return fused;
}

PlanRun CheckBoth(const std::string& text, const std::vector<Tensor>& inputs, const std::vector<double>& expected,
                  double tol) {
  Graph graph = GraphFromText(text);
  PlanRun unfused = RunPlan(graph, false, inputs), fused = RunPlan(graph, true, inputs);
  {
    INFO("unfused");
    CheckClose(unfused.outputs.at(0), expected, tol);
  }
  {
    INFO("fused:\n" << StepList(fused));
    CheckClose(fused.outputs.at(0), expected, tol);
  }
  return fused;
}

std::string CompileError(const std::string& text) {
  Graph graph = GraphFromText(text);
  try {
    ExecutablePlan::Compile(graph, FuseByPostDominator(graph, {}), {});
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kUnsupported);
    return e.what();
  }
  FAIL("compiled without an error");
  return "";
}

bool HaveGemmKernel() { return CpuIsaName().rfind("avx2", 0) == 0; }

FaultAt::FaultAt(const std::string& node) { setenv("ONNXFUSE_FAULT_NODE", node.c_str(), 1); }

FaultAt::~FaultAt() { unsetenv("ONNXFUSE_FAULT_NODE"); }

}  // namespace onnxfuse::test
