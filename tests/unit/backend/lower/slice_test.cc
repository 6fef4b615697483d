// Slice with steps (src/backend/lower/slice.cc): a view when oneDNN can
// describe the selection by strides, else a copy.
#include <catch2/catch.hpp>

#include <string>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

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
