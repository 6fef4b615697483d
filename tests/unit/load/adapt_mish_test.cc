// Mish-18 down to opset 17 (src/load/adapt_mish.cc): x * tanh(softplus(x)).
#include "down_context.h"

using namespace onnxfuse;
using test::AdapterScope;
using test::NodeFromText;
using Names = std::vector<std::string>;

TEST_CASE("Mish becomes Softplus, Tanh and Mul, the last one keeping the node's name", "[adapt_mish]") {
  AdapterScope scope(18);
  auto r = load::AdaptMish(NodeFromText("y = Mish (x)", "m"), scope.ctx);
  REQUIRE(test::OpTypes(r.nodes) == Names{"Softplus", "Tanh", "Mul"});
  CHECK(test::Strings(r.nodes[0].input()) == Names{"x"});
  CHECK(test::Strings(r.nodes[0].output()) == Names{"m/softplus"});
  CHECK(test::Strings(r.nodes[1].input()) == Names{"m/softplus"});
  CHECK(test::Strings(r.nodes[2].input()) == Names{"x", "m/tanh"});
  CHECK(test::Strings(r.nodes[2].output()) == Names{"y"});
  CHECK(r.nodes[2].name() == "m");
  CHECK(r.what == "Mish-18: x * tanh(softplus(x))");

  // A second Mish of the same name gets fresh value names.
  auto again = load::AdaptMish(NodeFromText("z = Mish (y)", "m"), scope.ctx);
  CHECK(test::Strings(again.nodes[0].output()) == Names{"m/softplus_1"});
}
