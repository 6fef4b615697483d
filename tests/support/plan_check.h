// Helpers for tests of the oneDNN backend: a model compiled and run fused
// (post-dominator groups) and unfused, its outputs checked against values
// computed in the test.
#pragma once

#include <string>
#include <vector>

#include "backend/runtime/executor.h"
#include "fuse/fusion_plan.h"
#include "ir/graph.h"
#include "onnxfuse/strategy.h"

namespace onnxfuse::test {

/// What one compiled plan did on one set of inputs.
struct PlanRun {
  std::vector<Tensor> outputs;
  PlanStats stats;
  std::vector<ScheduleStep> schedule;
  std::vector<std::string> steps;  ///< ExecutablePlan::Describe(): "kind label impl layout"
};

/// The steps of `run`, one Describe() line each, for INFO on a failure.
std::string StepList(const PlanRun& run);
/// How many steps of `run` start with `prefix` ("conv ", "swish Sigmoid_1+Mul_2 onnxfuse:custom").
int StepsStartingWith(const PlanRun& run, const std::string& prefix);
/// How many steps of `run` contain `text` anywhere (a node name, an implementation).
int StepsContaining(const PlanRun& run, const std::string& text);
/// How many steps of `run` are on an implementation to avoid (ScheduleStep::slow).
int SlowSteps(const PlanRun& run);

/// `graph` partitioned by `strategy` as the pipeline does (FuseGraph, the
/// built-in pattern library loaded once): postdom and greedy plans carry
/// their pattern regions, which the backend lowers by name.
FusionPlan FuseAs(const Graph& graph, Strategy strategy);
/// FuseAs(graph, Strategy::kPostdom).
FusionPlan FusePostdom(const Graph& graph);

/// Compiles `graph` (fused by `strategy` when `fuse`) and runs it once.
PlanRun RunPlan(const Graph& graph, bool fuse, const std::vector<Tensor>& inputs,
                Strategy strategy = Strategy::kPostdom);

/// Every element of `actual` within `atol + rtol * |expected|` of `expected`
/// (Catch2's Approx: margin `atol`, epsilon `rtol`). The absolute part is for
/// values near 0 only, so it is much smaller than the relative one: by
/// default `rtol / 100`.
void CheckClose(const Tensor& actual, const std::vector<double>& expected, double rtol, double atol);
void CheckClose(const Tensor& actual, const std::vector<double>& expected, double rtol = 1e-5);

/// An int8 plan's output against the QDQ definition's (the unfused plan):
/// every element within one quantization step `step` (with 0.1% of slack),
/// and at least `equal_share` of them equal. A float32 sum summed in another
/// order lands on the other side of a rounding boundary only rarely.
void RequireWithinOneStep(const std::vector<float>& got, const std::vector<float>& want, float step,
                          double equal_share = 0.97);

/// Runs `graph` unfused and fused and checks every output of the fused plan
/// against the unfused one's (the reference: one primitive per node, plain
/// layouts): CheckClose at relative `tol`, absolute tol / 10 of the output's
/// largest magnitude (the plans' rounding follows the tensor's scale); returns
/// the fused run. `strategy`: the fuser of the fused plan.
PlanRun CheckFusedAgainstUnfused(const Graph& graph, const std::vector<Tensor>& inputs, double tol = 1e-5,
                                 Strategy strategy = Strategy::kPostdom);

/// Runs the model `text` unfused and fused, checks the first output of both
/// against `expected` (CheckClose at `tol`) and every output of the fused plan
/// against the unfused one's (as CheckFusedAgainstUnfused); returns the fused run.
PlanRun CheckBoth(const std::string& text, const std::vector<Tensor>& inputs, const std::vector<double>& expected,
                  double tol = 1e-5);
/// As above, against `expected` within `atol + tol * |expected|` per element:
/// for a kernel whose documented error is absolute.
PlanRun CheckBoth(const std::string& text, const std::vector<Tensor>& inputs, const std::vector<double>& expected,
                  double tol, double atol);

/// Whether our AVX2 GEMM (and the Winograd convolution on it) runs on this
/// CPU: AVX2 without AVX-512 (src/backend/kernels/gemm.h); elsewhere those
/// products and convolutions stay on oneDNN.
bool HaveGemmKernel();

/// For the scope of this object, fused plans compiled meanwhile add 1 to
/// `node`'s first output (the fault hook of src/backend/lower/core/fault_injection.h
/// set to fault_injection.h's, ONNXFUSE_FAULT_NODE=`node`); both unset at exit.
struct FaultAt {
  explicit FaultAt(const std::string& node);
  ~FaultAt();
  FaultAt(const FaultAt&) = delete;
  FaultAt& operator=(const FaultAt&) = delete;
};

/// Compiles the model `text` (post-dominator fusion) expecting it to be
/// refused with Error(kUnsupported); returns the message. Fails the test when
/// it compiles, or fails with another kind of error.
std::string CompileError(const std::string& text);

}  // namespace onnxfuse::test
