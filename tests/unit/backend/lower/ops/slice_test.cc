// Slice, Split and Gather of run-time tensors (src/backend/lower/ops/slice.cc): a
// view when oneDNN can describe the selection by strides, else a reorder or
// a copy; negative steps, several runs of indices, Split's sizes.
#include <catch2/catch.hpp>

#include <string>

#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

namespace {

std::string Ints(const std::vector<std::int64_t>& v) { return test::DimsText(v); }

// "int64[2] name = {0, 1}": an initializer in ONNX text syntax.
std::string IntList(const std::string& name, const std::vector<std::int64_t>& v) {
  return "int64[" + std::to_string(v.size()) + "] " + name + " = {" + Ints(v) + "}";
}

}  // namespace

TEST_CASE("a Slice whose steps skip more than a row is copied, not viewed", "[lower_slice]") {
  // x[3,3][:, ::2] is [3,2] with strides [3,2]: rows overlap in oneDNN's sense,
  // which made memory::desc throw (an internal error, found by the
  // differential tester as Transpose -> MatMul -> Mul -> Slice).
  struct Case {
    std::vector<std::int64_t> in, starts, ends, axes, steps, out;
  };
  const Case cases[] = {
      {{3, 3}, {0}, {3}, {1}, {2}, {3, 2}},
      {{5, 4}, {0, 1}, {5, 4}, {0, 1}, {3, 2}, {2, 2}},
      {{2, 3, 5}, {0, 4}, {3, 5}, {1, 2}, {2, 4}, {2, 2, 1}},
      {{2, 4, 3}, {1}, {3}, {2}, {1}, {2, 4, 2}},  // unit step: still a view
  };
  for (const Case& c : cases) {
    INFO("in " << Ints(c.in) << " steps " << Ints(c.steps));
    const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                             "g (float[" + Ints(c.in) + "] x, " + IntList("s", c.starts) + ", " + IntList("e", c.ends) +
                             ", " + IntList("a", c.axes) + ", " + IntList("p", c.steps) + ") => (float[" + Ints(c.out) +
                             "] y) {\n  r = Relu (x)\n  y = Slice (r, s, e, a, p)\n}";
    const Tensor x = test::TensorFrom(c.in, [](std::int64_t i) { return 0.25f * static_cast<float>(i) - 1.f; });
    // Expected: the selected elements of Relu(x), in row-major order of the output.
    std::vector<std::int64_t> begin(c.in.size(), 0), step(c.in.size(), 1);
    for (std::size_t k = 0; k < c.axes.size(); ++k) begin[c.axes[k]] = c.starts[k], step[c.axes[k]] = c.steps[k];
    std::vector<double> expected;
    std::vector<std::int64_t> idx(c.out.size(), 0);
    std::int64_t count = 1;
    for (std::int64_t d : c.out) count *= d;
    for (std::int64_t n = 0; n < count; ++n) {
      std::int64_t flat = 0;
      for (std::size_t d = 0; d < c.in.size(); ++d) flat = flat * c.in[d] + begin[d] + idx[d] * step[d];
      expected.push_back(std::max(0.f, x.data[static_cast<std::size_t>(flat)]));
      for (std::size_t d = c.out.size(); d-- > 0;)
        if (++idx[d] < c.out[d]) break;
        else idx[d] = 0;
    }
    test::CheckBoth(text, {x}, expected, 0);
  }
}

TEST_CASE("Split: given sizes after a Conv's layout, equal parts before opset 13, bad sizes refused", "[backend_ops]") {
  Tensor x = TensorFrom({1, 4, 2, 3}, Wave);
  // The identity Conv hands Split a convolution's layout in fused mode.
  const char* sized = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,2,3] x, float[4,4,1,1] w = {1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1}, int64[2] s = {1, 3})
        => (float[1,3,2,3] b, float[1,1,2,3] a) {
      c = Conv (x, w)
      a, b = Split <axis = 1> (c, s)
    })";
  // The first output is b: channels 1..3 of x.
  CheckBoth(sized, {x}, std::vector<double>(x.data.begin() + 6, x.data.end()), 1e-6);
  const char* equal = R"(<ir_version: 8, opset_import: ["" : 11]>
    g (float[1,4,2,3] x) => (float[1,4,2,1] z, float[1,4,2,2] y) {
      y, z = Split <axis = -1, split = [2, 1]> (x)
    })";
  std::vector<double> last;
  for (std::size_t i = 2; i < x.data.size(); i += 3) last.push_back(x.data[i]);
  CheckBoth(equal, {x}, last, 0);
  const char* halves = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,2,3] x) => (float[1,2,2,3] q, float[1,2,2,3] p) {
      p, q = Split <axis = 1> (x)
    })";
  CheckBoth(halves, {x}, std::vector<double>(x.data.begin() + 12, x.data.end()), 0);
  // Sizes that do not add up to the axis: refused when loading (shape inference).
  CHECK_THROWS_WITH(test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,2,3] x, int64[2] s = {1, 2}) => (float[1,1,2,3] a, float[1,2,2,3] b) {
      a, b = Split <axis = 1> (x, s)
    })"), Catch::Matchers::Contains("Mismatch between the sum of 'split' (3) and the split dimension of the input (4)"));
}

TEST_CASE("Slice with steps above 1 and below 0, Gather with several runs of indices", "[backend_ops]") {
  Tensor x = TensorFrom({2, 5, 6}, [](std::int64_t i) { return static_cast<float>(i); });
  auto at = [](std::int64_t a, std::int64_t b, std::int64_t c) { return static_cast<double>(a * 30 + b * 6 + c); };
  std::vector<double> y;  // x[:, 4:0:-2, 1:6:2]
  for (std::int64_t a = 0; a < 2; ++a)
    for (std::int64_t b = 4; b > 0; b -= 2)
      for (std::int64_t c = 1; c < 6; c += 2) y.push_back(at(a, b, c));
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,5,6] x) => (float[2,2,3] y) {
      s = Constant <value = int64[2] {4, 1}> ()
      e = Constant <value = int64[2] {0, 100}> ()
      a = Constant <value = int64[2] {1, -1}> ()
      k = Constant <value = int64[2] {-2, 2}> ()
      y = Slice (x, s, e, a, k)
    })",
            {x}, y);
  y.clear();  // x[1:, ::2, 0:5:3]: positive steps only (one strided reorder)
  for (std::int64_t b = 0; b < 5; b += 2)
    for (std::int64_t c = 0; c < 5; c += 3) y.push_back(at(1, b, c));
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,5,6] x) => (float[1,3,2] y) {
      s = Constant <value = int64[3] {1, 0, 0}> ()
      e = Constant <value = int64[3] {2, 5, 5}> ()
      k = Constant <value = int64[3] {1, 2, 3}> ()
      a = Constant <value = int64[3] {0, 1, 2}> ()
      y = Slice (x, s, e, a, k)
    })",
            {x}, y);

  // Indices [3, 4, 0, -1, 1] along axis 1: runs 3..4, 0, 4 (as -1), 1 -> one reorder each.
  y.clear();
  const std::int64_t idx[] = {3, 4, 0, 4, 1};
  for (std::int64_t a = 0; a < 2; ++a)
    for (auto b : idx)
      for (std::int64_t c = 0; c < 6; ++c) y.push_back(at(a, b, c));
  PlanRun runs = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,5,6] x) => (float[2,5,6] y) {
      i = Constant <value = int64[5] {3, 4, 0, -1, 1}> ()
      y = Gather <axis = 1> (x, i)
    })",
                       {x}, y);
  CHECK(runs.stats.kernels == 4);
  // Twelve scattered indices [2, 3] along the last axis: one copy loop.
  y.clear();
  const std::int64_t scattered[] = {5, 0, 4, 1, 3, 2, 5, 5, 0, 2, 4, 1};
  for (std::int64_t a = 0; a < 2; ++a)
    for (std::int64_t b = 0; b < 5; ++b)
      for (auto c : scattered) y.push_back(at(a, b, c));
  PlanRun loop = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,5,6] x) => (float[2,5,4,3] y) {
      i = Constant <value = int64[4,3] {5, 0, 4, 1, 3, 2, -1, 5, 0, 2, 4, -5}> ()
      y = Gather <axis = 2> (x, i)
    })",
                       {x}, y);
  CHECK(loop.stats.kernels == 1);
  // A scalar negative index drops the axis.
  y.clear();
  for (std::int64_t b = 0; b < 5; ++b)
    for (std::int64_t c = 0; c < 6; ++c) y.push_back(at(1, b, c));
  CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,5,6] x) => (float[5,6] y) {
      i = Constant <value = int64 {-1}> ()
      y = Gather (x, i)
    })",
            {x}, y);
}
