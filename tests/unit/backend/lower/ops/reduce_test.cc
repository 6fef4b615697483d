// Reductions (src/backend/lower/ops/reduce.cc, EmitReduce): axes of size 1, no
// axes, ReduceLogSum(Exp) as a sum with post-ops.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

TEST_CASE("a reduction over axes of size 1 reduces each element alone", "[reduce]") {
  // oneDNN's reduction refuses a destination equal to its source: this was an
  // internal error (found by the differential tester as ReduceMean of [1,1]).
  const Tensor x = test::TensorFrom({2, 1, 3}, [](std::int64_t i) { return 1.f + test::Wave(5 * i); });  // positive: ReduceLogSum
  for (const std::string op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                               "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    for (int keepdims : {1, 0}) {
      INFO(op << " keepdims " << keepdims);
      const std::string out = keepdims ? "2,1,3" : "2,3";
      const bool axes_input = op == "ReduceSum";  // ReduceSum-13 takes its axes as an input
      const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                               "g (float[2,1,3] x, int64[1] axes = {1}) => (float[" + out + "] y) {\n  r = " + op +
                               " <" + (axes_input ? "" : "axes = [1], ") + "keepdims = " + std::to_string(keepdims) +
                               "> (x" + (axes_input ? ", axes" : "") + ")\n  y = Identity (r)\n}";
      std::vector<double> expected;
      for (float v : x.data) {
        double e = v;
        if (op == "ReduceL1" || op == "ReduceL2") e = std::fabs(v);
        else if (op == "ReduceSumSquare") e = double{v} * v;
        else if (op == "ReduceLogSum") e = std::log(v);
        expected.push_back(e);
      }
      test::PlanRun fused = test::CheckBoth(text, {x}, expected, 1e-5);
      CHECK(fused.outputs.at(0).dims == (keepdims ? std::vector<std::int64_t>{2, 1, 3} : std::vector<std::int64_t>{2, 3}));
    }
}

TEST_CASE("ReduceSum with no axes: all of them, or none with noop_with_empty_axes", "[backend_ops]") {
  Tensor x = TensorFrom({2, 3}, Wave);
  double total = 0;
  for (float v : x.data) total += v;
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[1,1] y) {
      y = ReduceSum (x)
    })",
            {x}, {total}, 1e-6);
  PlanRun noop = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) {
      y = ReduceSum <noop_with_empty_axes = 1> (x)
    })",
                           {x}, std::vector<double>(x.data.begin(), x.data.end()), 0);
  CHECK(noop.stats.kernels == 0);
}

TEST_CASE("ReduceLogSum and ReduceLogSumExp: a sum reduction with a log post-op, after an exp step for the latter",
          "[backend_ops]") {
  Tensor x = TensorFrom({2, 3}, [](std::int64_t i) { return 0.5f + 0.3f * static_cast<float>(i); });
  std::vector<double> log_sum, log_sum_exp;
  for (std::size_t r = 0; r < 2; ++r) {
    double s = 0, e = 0;
    for (std::size_t c = 0; c < 3; ++c) s += x.data[r * 3 + c], e += std::exp(static_cast<double>(x.data[r * 3 + c]));
    log_sum.push_back(std::log(s)), log_sum_exp.push_back(std::log(e));
  }
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2] y) {
      y = ReduceLogSum <axes = [1], keepdims = 0> (x)
    })",
            {x}, log_sum, 1e-5);
  PlanRun fused = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,1] y) {
      y = ReduceLogSumExp <axes = [-1]> (x)
    })",
                            {x}, log_sum_exp, 1e-5);
  CHECK(fused.stats.kernels == 2);
}

TEST_CASE("a ReduceMean over H and W of a conv's blocked output is one global average pooling step of ours",
          "[reduce]") {
  // torchvision's `x.mean([2, 3])` (MNASNet's head): oneDNN's reduction wanted
  // the input plain (a reorder) and ran far slower than our channel means.
  // A 1x1 conv with identity weights, so y is the mean of x per channel.
  constexpr int kChannels = 32;
  std::string weights;
  for (int o = 0; o < kChannels; ++o)
    for (int i = 0; i < kChannels; ++i) weights += std::string(weights.empty() ? "" : ", ") + (o == i ? "1.0" : "0.0");
  const Tensor x = TensorFrom({2, kChannels, 5, 7}, [](std::int64_t i) { return Wave(3 * i); });
  std::vector<double> means;
  for (std::int64_t plane = 0; plane < 2 * kChannels; ++plane) {
    double sum = 0;
    for (std::int64_t k = 0; k < 35; ++k) sum += x.data[static_cast<std::size_t>(plane * 35 + k)];
    means.push_back(sum / 35);
  }
  for (int keepdims : {1, 0}) {
    INFO("keepdims " << keepdims);
    const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                             "g (float[2,32,5,7] x, float[32,32,1,1] w = {" + weights + "}) => (float[" +
                             (keepdims ? "2,32,1,1" : "2,32") + "] y) {\n  c = Conv (x, w)\n"
                             "  y = ReduceMean <axes = [2, 3], keepdims = " + std::to_string(keepdims) + "> (c)\n}";
    const PlanRun fused = CheckBoth(text, {x}, means, 1e-5);
    INFO(test::StepList(fused));
    CHECK(test::StepsContaining(fused, "onnxfuse:global_average_pool") == 1);
    CHECK(test::StepsStartingWith(fused, "reduction") == 0);
    CHECK(fused.outputs.at(0).dims == (keepdims ? std::vector<std::int64_t>{2, 32, 1, 1} : std::vector<std::int64_t>{2, 32}));
  }
}

namespace {

// Reduce* of x (dims `in`) over `axes`, keepdims, in double (ONNX Operators.md).
std::vector<double> ReduceInDouble(const std::string& op, const Tensor& x, const std::vector<std::int64_t>& in,
                                   const std::vector<int>& axes) {
  std::vector<std::int64_t> out = in;
  for (int a : axes) out[static_cast<std::size_t>(a)] = 1;
  std::int64_t n_out = 1, count = 1;
  for (auto d : out) n_out *= d;
  for (int a : axes) count *= in[static_cast<std::size_t>(a)];
  const bool extreme = op == "ReduceMax" || op == "ReduceMin";
  std::vector<double> acc(static_cast<std::size_t>(n_out), op == "ReduceProd" ? 1.0 : extreme ? NAN : 0.0);
  std::vector<std::int64_t> idx(in.size(), 0);
  for (float xf : x.data) {
    const double v = xf;
    std::int64_t o = 0;
    for (std::size_t d = 0; d < in.size(); ++d) o = o * out[d] + (out[d] == 1 ? 0 : idx[d]);
    double& a = acc[static_cast<std::size_t>(o)];
    if (op == "ReduceMax") a = std::isnan(a) || v > a ? v : a;
    else if (op == "ReduceMin") a = std::isnan(a) || v < a ? v : a;
    else if (op == "ReduceProd") a *= v;
    else if (op == "ReduceL1") a += std::fabs(v);
    else if (op == "ReduceL2" || op == "ReduceSumSquare") a += v * v;
    else if (op == "ReduceLogSumExp") a += std::exp(v);
    else a += v;
    for (std::size_t d = in.size(); d-- > 0;) {
      if (++idx[d] < in[d]) break;
      idx[d] = 0;
    }
  }
  for (double& a : acc) {
    if (op == "ReduceMean") a /= static_cast<double>(count);
    else if (op == "ReduceL2") a = std::sqrt(a);
    else if (op == "ReduceLogSum" || op == "ReduceLogSumExp") a = std::log(a);
  }
  return acc;
}

}  // namespace

TEST_CASE("a reduction over axes that are not the innermost runs on our kernel, not oneDNN's reference one",
          "[reduce]") {
  // oneDNN 2.6's reduction is a jit kernel only over the innermost axes; over
  // the others (found by the differential tester: [2,75] over its first axis)
  // it ran ref:any. Positive inputs: ReduceLogSum.
  const std::vector<std::int64_t> in = {3, 4, 5, 6};
  const Tensor x = TensorFrom(in, [](std::int64_t i) { return 0.6f + 0.5f * Wave(7 * i); });
  for (const std::string op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                               "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    for (const std::vector<int>& axes : std::vector<std::vector<int>>{{0}, {1}, {0, 1}, {1, 2}, {0, 2}, {1, 3}, {0, 2, 3}}) {
      std::string list, out;
      for (int a : axes) list += (list.empty() ? "" : ", ") + std::to_string(a);
      for (std::size_t d = 0; d < in.size(); ++d) {
        const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int>(d)) != axes.end();
        out += (out.empty() ? "" : ",") + std::to_string(reduced ? 1 : in[d]);
      }
      INFO(op << " over " << list);
      const bool axes_input = op == "ReduceSum";
      const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                               "g (float[3,4,5,6] x, int64[" + std::to_string(axes.size()) + "] axes = {" + list +
                               "}) => (float[" + out + "] y) {\n  r = " + op + " <" +
                               (axes_input ? "" : "axes = [" + list + "], ") + "keepdims = 1> (x" +
                               (axes_input ? ", axes" : "") + ")\n  y = Identity (r)\n}";
      const PlanRun fused = CheckBoth(text, {x}, ReduceInDouble(op, x, in, axes), 1e-5);
      INFO(test::StepList(fused));
      CHECK(test::StepsContaining(fused, "ref:") == 0);
    }
}
