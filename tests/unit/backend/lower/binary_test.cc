// Binary ops as anchors of their own (src/backend/lower/binary.cc, EmitBinary):
// broadcast operands against channel-blocked tensors.
#include <catch2/catch.hpp>

#include <string>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// x [1,1,S,S,S] -> ConvTranspose 1x1x1 to 2 channels (a channel-blocked result)
// -> GlobalAveragePool (keeps the blocking) -> `op` with a one-element constant.
std::string PooledDeconv(int s, const std::string& op) {
  const std::string d = std::to_string(s);
  return "<ir_version: 8, opset_import: [\"\" : 13]>\n"
         "g (float[1,1," + d + "," + d + "," + d + "] x, float[1,2,1,1,1] w = {0.5, -0.75}, float k = {2.0})"
         " => (float[1,2,1,1,1] y) {\n  t = ConvTranspose (x, w)\n  p = GlobalAveragePool (t)\n  y = " + op +
         " (p, k)\n}";
}

}  // namespace

TEST_CASE("a one-element operand of a binary op on channel-blocked data is read plain", "[lower_ops]") {
  // oneDNN 2.6.3's jit:uni binary gets a channel-blocked operand broadcast
  // along channels wrong (adds nothing): before the fix y was p, not p + 2.
  for (int s : {1, 3})
    for (const std::string op : {"Add", "Mul", "Sub", "Div"}) {
      INFO(op << " at spatial size " << s);
      Graph graph = test::GraphFromText(PooledDeconv(s, op));
      Tensor x = test::TensorFrom(graph.value(graph.inputs()[0]).type.dims, [](std::int64_t i) { return 1.f + test::Wave(i); });
      test::CheckFusedAgainstUnfused(graph, {x}, 1e-6);
    }
}

TEST_CASE("a run-time operand of lower rank is broadcast from its plain form", "[lower_ops]") {
  // A scalar graph input added to a channel-blocked ConvTranspose result, in
  // a step of its own (t is also an output, so the Add is no post-op): a
  // reorder into the blocked 3-D layout cannot add the scalar's leading 1s
  // (an internal error before; found by the differential tester).
  // With one element in all (x [1,1,1]) the operand has the result's dims once expanded.
  for (const std::string width : {"1", "3"})
    for (const std::string& scalar : {std::string("float k"), std::string("float[1] k"), std::string("float[1,1] k")}) {
      INFO(scalar << ", width " << width);
      const std::string dims = "[1,1," + width + "]";
      Graph graph = test::GraphFromText("<ir_version: 8, opset_import: [\"\" : 13]>\n"
                                        "g (float" + dims + " x, " + scalar + ", float[1,1,1] w = {0.5}) => (float" + dims +
                                        " y, float" + dims + " t) {\n  t = ConvTranspose (x, w)\n  y = Add (t, k)\n}");
      test::CheckFusedAgainstUnfused(graph, RandomInputs(graph), 1e-6);
    }
}
