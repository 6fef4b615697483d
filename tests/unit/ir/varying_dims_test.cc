// Which dims follow the input shapes (src/ir/varying_dims.h): read from a
// graph typed with a symbolic sequence length, as a session's prepared model is.
#include <catch2/catch.hpp>

#include "ir/varying_dims.h"
#include "test_models.h"

using namespace onnxfuse;
using Flags = std::vector<bool>;

namespace {

// An attention score: [S, 64] x [64, S] with weights [64, 64] on the way.
const char* kScores = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[S,64] x, float[64,64] w) => (float[S,S] y) {
    q = MatMul (x, w)
    t = Transpose <perm: ints = [1, 0]> (x)
    y = MatMul (q, t)
  })";

}  // namespace

TEST_CASE("VaryingDimsOf lists the symbolic dims of every value, and only those", "[varying_dims]") {
  const Graph graph = test::GraphFromText(kScores);
  const VaryingDims varying = VaryingDimsOf(graph);
  CHECK(varying.at("x") == Flags{true, false});
  CHECK(varying.at("q") == Flags{true, false});
  CHECK(varying.at("t") == Flags{false, true});
  CHECK(varying.at("y") == Flags{true, true});
  CHECK(varying.count("w") == 0);  // static: the weights
}

TEST_CASE("VaryingDimsAt: unlisted values are fixed, a rank it does not know varies everywhere", "[varying_dims]") {
  const VaryingDims varying = {{"a", {true, false}}, {"unknown", {}}};
  CHECK(VaryingDimsAt(varying, "a", 2) == Flags{true, false});
  CHECK(VaryingDimsAt(varying, "b", 3) == Flags{false, false, false});
  CHECK(VaryingDimsAt(varying, "unknown", 2) == Flags{true, true});
  CHECK(VaryingDimsAt(varying, "a", 3) == Flags{true, true, true});
}
