// A Conv's output dims and oneDNN geometry (src/backend/lower/core/conv_geometry.cc,
// ConvGeometryOf): explicit pads, auto_pad SAME_UPPER / SAME_LOWER / VALID,
// strides, dilations and groups in 1-D, 2-D and 3-D (ONNX Operators.md, Conv).
// Each output's dims are checked against the values worked out below and
// against ONNX shape inference's (the loader's) for the same node.
#include <catch2/catch.hpp>

#include <string>

#include "backend/lower/core/conv_geometry.h"
#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using backend::ConvGeometry;
using backend::Dims;

namespace {

// Weights are graph inputs: the geometry needs only their dims.
const char* const kConvs = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,8,8] x, float[4,2,3,3] w, float[4,1,3,3] wg, float[1,2,10] x1, float[3,2,3] w1,
   float[1,1,4,5,6] x3, float[2,1,3,3,3] w3)
  => (float[1,4,4,4] upper, float[1,4,4,4] lower, float[1,4,4,6] valid, float[1,4,5,3] explicit,
      float[1,4,8,8] grouped, float[1,3,4] one_d, float[1,2,4,3,2] three_d) {
  upper = Conv <auto_pad = "SAME_UPPER", strides = [2, 2]> (x, w)
  lower = Conv <auto_pad = "SAME_LOWER", strides = [2, 2]> (x, w)
  valid = Conv <auto_pad = "VALID", dilations = [2, 1]> (x, w)
  explicit = Conv <pads = [1, 0, 2, 1], strides = [2, 3]> (x, w)
  grouped = Conv <group = 2, pads = [1, 1, 1, 1]> (x, wg)
  one_d = Conv <strides = [3], pads = [2, 1]> (x1, w1)
  three_d = Conv <auto_pad = "SAME_LOWER", strides = [1, 2, 4]> (x3, w3)
}
)";

struct Fixture {
  Graph graph = test::GraphFromText(kConvs);
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  backend::Builder b{graph, true, engine};

  const Node& Producer(const std::string& value) const { return graph.node(graph.value(*graph.FindValue(value)).producer); }
  const Dims& DimsOf(const std::string& value) const { return graph.value(*graph.FindValue(value)).type.dims; }
  // The geometry of the Conv writing `out`, from its inputs' dims.
  ConvGeometry Of(const std::string& out) const {
    const Node& conv = Producer(out);
    return backend::ConvGeometryOf(b, conv, graph.value(conv.inputs[0]).type.dims, graph.value(conv.inputs[1]).type.dims);
  }
};

}  // namespace

TEST_CASE("SAME_UPPER puts the odd padding at the end, SAME_LOWER at the start", "[conv_geometry]") {
  // 8 pixels, kernel 3, stride 2: ceil(8 / 2) = 4 outputs need
  // (4 - 1) * 2 + 3 - 8 = 1 pixel of padding.
  Fixture f;
  const ConvGeometry upper = f.Of("upper"), lower = f.Of("lower");
  CHECK(upper.out == Dims{1, 4, 4, 4});
  CHECK(upper.out == f.DimsOf("upper"));
  CHECK(upper.strides == Dims{2, 2});
  CHECK(upper.pl == Dims{0, 0});
  CHECK(upper.pr == Dims{1, 1});
  CHECK(upper.dil == Dims{0, 0});
  CHECK(lower.out == f.DimsOf("lower"));
  CHECK(lower.pl == Dims{1, 1});
  CHECK(lower.pr == Dims{0, 0});
}

TEST_CASE("VALID pads nothing, and dilations widen the kernel, given to oneDNN minus 1", "[conv_geometry]") {
  // Dilation 2 along H: a 3-tap kernel spans 5 pixels, 8 - 5 + 1 = 4 outputs; 6 along W.
  Fixture f;
  const ConvGeometry g = f.Of("valid");
  CHECK(g.out == Dims{1, 4, 4, 6});
  CHECK(g.out == f.DimsOf("valid"));
  CHECK(g.pl == Dims{0, 0});
  CHECK(g.pr == Dims{0, 0});
  CHECK(g.dil == Dims{1, 0});
}

TEST_CASE("explicit pads are begin values then end values, per spatial axis", "[conv_geometry]") {
  // pads [1, 0, 2, 1]: H padded 1 + 2, W 0 + 1. H: (8 + 3 - 3) / 2 + 1 = 5; W: (8 + 1 - 3) / 3 + 1 = 3.
  Fixture f;
  const ConvGeometry g = f.Of("explicit");
  CHECK(g.out == Dims{1, 4, 5, 3});
  CHECK(g.out == f.DimsOf("explicit"));
  CHECK(g.strides == Dims{2, 3});
  CHECK(g.pl == Dims{1, 0});
  CHECK(g.pr == Dims{2, 1});
}

TEST_CASE("grouped, 1-D and 3-D convolutions", "[conv_geometry]") {
  Fixture f;
  const ConvGeometry grouped = f.Of("grouped");
  CHECK(grouped.out == Dims{1, 4, 8, 8});
  CHECK(grouped.pl == Dims{1, 1});

  // 10 + 2 + 1 - 3 = 10, / 3 + 1 = 4.
  const ConvGeometry one_d = f.Of("one_d");
  CHECK(one_d.out == Dims{1, 3, 4});
  CHECK(one_d.out == f.DimsOf("one_d"));
  CHECK(one_d.pl == Dims{2});
  CHECK(one_d.pr == Dims{1});

  // SAME_LOWER, strides 1, 2, 4 over 4, 5, 6: outputs 4, 3, 2; padding 2, 2
  // and (2 - 1) * 4 + 3 - 6 = 1, the odd one at the start.
  const ConvGeometry three_d = f.Of("three_d");
  CHECK(three_d.out == Dims{1, 2, 4, 3, 2});
  CHECK(three_d.out == f.DimsOf("three_d"));
  CHECK(three_d.pl == Dims{1, 1, 1});
  CHECK(three_d.pr == Dims{1, 1, 0});
  CHECK(three_d.dil == Dims{0, 0, 0});
}

TEST_CASE("channels that do not match are an invalid model, other ranks unsupported", "[conv_geometry]") {
  Fixture f;
  const Node& conv = f.Producer("upper");
  const test::ThrownError channels = test::ErrorOf([&] { backend::ConvGeometryOf(f.b, conv, {1, 3, 8, 8}, {4, 2, 3, 3}); });
  CHECK(channels.kind == ErrorKind::kInvalidModel);
  CHECK_THAT(channels.message, Catch::Contains("channels do not match") && Catch::Contains(conv.name));
  // Group 2 splits 3 output channels unevenly.
  const test::ThrownError groups =
      test::ErrorOf([&] { backend::ConvGeometryOf(f.b, f.Producer("grouped"), {1, 2, 8, 8}, {3, 1, 3, 3}); });
  CHECK(groups.kind == ErrorKind::kInvalidModel);
  CHECK(test::ErrorOf([&] { backend::ConvGeometryOf(f.b, conv, {1, 2}, {4, 2}); }).kind == ErrorKind::kUnsupported);
  CHECK(test::ErrorOf([&] { backend::ConvGeometryOf(f.b, conv, {1, 2, 2, 2, 2, 2}, {4, 2, 1, 1, 1, 1}); }).kind ==
        ErrorKind::kUnsupported);
}
