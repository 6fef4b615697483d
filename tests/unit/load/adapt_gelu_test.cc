// Gelu-20 down to opset 17 (src/load/adapt_gelu.cc): torch's erf and tanh spellings.
#include "down_context.h"

#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using load::AdaptGelu;
using test::AdapterScope;
using test::NodeFromText;
using Names = std::vector<std::string>;

namespace {

// The values of the Constant nodes, in order.
std::vector<float> ConstantValues(const std::vector<onnx::NodeProto>& nodes) {
  std::vector<float> values;
  for (const auto& n : nodes)
    if (n.op_type() == "Constant") values.push_back(n.attribute(0).t().float_data(0));
  return values;
}

}  // namespace

TEST_CASE("Gelu erf form: 0.5 x (1 + erf(x / sqrt 2))", "[adapt_gelu]") {
  AdapterScope scope(20);
  auto r = AdaptGelu(NodeFromText("y = Gelu (x)", "g"), scope.ctx);
  CHECK(test::OpTypes(r.nodes) == Names{"Constant", "Div", "Erf", "Constant", "Add", "Mul", "Constant", "Mul"});
  CHECK(ConstantValues(r.nodes) == std::vector<float>{1.41421353816986083984375f, 1.0f, 0.5f});
  CHECK(test::Strings(r.nodes[1].input()) == Names{"x", "g/sqrt2"});
  CHECK(test::Strings(r.nodes[5].input()) == Names{"x", "g/add"});
  CHECK(r.nodes.back().name() == "g");
  CHECK(test::Strings(r.nodes.back().input()) == Names{"g/mul", "g/half"});
  CHECK(test::Strings(r.nodes.back().output()) == Names{"y"});
  CHECK(r.what == "Gelu-20: erf form in Div, Erf, Add, Mul");
  CHECK(scope.added.empty());
}

TEST_CASE("Gelu tanh form: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))", "[adapt_gelu]") {
  AdapterScope scope(20);
  auto r = AdaptGelu(NodeFromText("y = Gelu <approximate = \"tanh\"> (x)", "g"), scope.ctx);
  CHECK(test::OpTypes(r.nodes) == Names{"Constant", "Pow", "Constant", "Mul", "Add", "Constant", "Mul", "Tanh",
                                        "Constant", "Add", "Mul", "Constant", "Mul"});
  CHECK(ConstantValues(r.nodes) == std::vector<float>{3.0f, 0.044715f, 0.7978845608028654f, 1.0f, 0.5f});
  CHECK(test::Strings(r.nodes[4].input()) == Names{"x", "g/cube_k"});
  CHECK(test::Strings(r.nodes.back().output()) == Names{"y"});
  CHECK(r.what == "Gelu-20: tanh form in Pow, Mul, Add, Tanh");
}

TEST_CASE("an unknown approximation is refused", "[adapt_gelu]") {
  AdapterScope scope(20);
  auto e = test::ErrorOf([&] { AdaptGelu(NodeFromText("y = Gelu <approximate = \"fast\"> (x)", "g"), scope.ctx); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK(e.message == "new.onnx: node 'g' (Gelu, opset 20): approximate 'fast' is neither 'none' nor 'tanh'");
}
