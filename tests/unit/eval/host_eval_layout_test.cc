// Split and Pad on the host (src/eval/host_eval_layout.cc), called
// directly on nodes of small models; expected values worked out by hand from
// ONNX Operators.md (Split-13, Pad-13).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "eval/host_eval.h"
#include "onnxfuse/error.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;
using eval::EvalOnHost;


TEST_CASE("Split into given sizes and into equal parts, along any axis", "[host_eval_layout]") {
  Graph g = test::OneNodeGraph("float[2,5] x, int64[2] s", "float[2,2] a, float[2,3] b", "a, b = Split <axis = 1> (x, s)");
  const Tensor x = test::TensorOf("x", {2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor sizes = test::IntTensorOf("s", {2}, {2, 3});
  auto out = EvalOnHost(g.node(0), {&x, &sizes}, 13);
  REQUIRE(out.size() == 2);
  CHECK(out[0].dims == std::vector<std::int64_t>{2, 2});
  CHECK(out[0].data == std::vector<float>{0, 1, 5, 6});
  CHECK(out[1].data == std::vector<float>{2, 3, 4, 7, 8, 9});

  Graph equal = test::OneNodeGraph("int64[4,1] x", "int64[2,1] a, int64[2,1] b", "a, b = Split (x)");
  const Tensor ints = test::IntTensorOf("x", {4, 1}, {7, -1, 3, 5});
  out = EvalOnHost(equal.node(0), {&ints}, 13);
  CHECK(out[0].int_data == std::vector<std::int64_t>{7, -1});
  CHECK(out[1].int_data == std::vector<std::int64_t>{3, 5});

  const Tensor wrong = test::IntTensorOf("s", {2}, {2, 2});
  auto e = test::ErrorOf([&] { EvalOnHost(g.node(0), {&x, &wrong}, 13); });
  CHECK(e.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(e.message, Catch::Contains("split sizes do not add up to the axis length 5"));
}

TEST_CASE("Pad: constant with a value, reflect without repeating the edge, edge, and negative pads crop",
          "[host_eval_layout]") {
  const Tensor x = test::TensorOf("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  auto pad = [&](const std::string& mode, std::vector<std::int64_t> pads) {
    Graph g = test::OneNodeGraph("float[2,3] x, int64[4] p, float v", "float[A,B] y", "y = Pad <mode = \"" + mode + "\"> (x, p, v)");
    const Tensor p = test::IntTensorOf("p", {4}, std::move(pads));
    const Tensor v = test::TensorOf("v", {}, {9});
    return EvalOnHost(g.node(0), {&x, &p, &v}, 13).at(0);
  };
  // pads = [begin dim 0, begin dim 1, end dim 0, end dim 1]
  Tensor c = pad("constant", {0, 1, 1, 0});
  CHECK(c.dims == std::vector<std::int64_t>{3, 4});
  CHECK(c.data == std::vector<float>{9, 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9});
  Tensor r = pad("reflect", {0, 2, 0, 1});
  CHECK(r.data == std::vector<float>{3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5});
  Tensor e = pad("edge", {1, 0, 0, 1});
  CHECK(e.data == std::vector<float>{1, 2, 3, 3, 1, 2, 3, 3, 4, 5, 6, 6});
  Tensor crop = pad("constant", {0, -1, -1, 0});
  CHECK(crop.dims == std::vector<std::int64_t>{1, 2});
  CHECK(crop.data == std::vector<float>{2, 3});
  auto error = test::ErrorOf([&] { pad("reflect", {0, 3, 0, 0}); });
  CHECK(error.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(error.message, Catch::Contains("reflect pads of dim 1 reach past the input's edge"));
}
