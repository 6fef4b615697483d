// A node's inputs as primitive arguments (src/backend/lower/core/operands.cc): the
// layout an op reads its input in (OpInput), a bias as doubles (BiasOf) and as
// a primitive's bias memory (BiasMemory).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "backend/lower/core/operands.h"
#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using backend::Dims;

namespace {

const char* const kGraph = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] x, float[3,2,1,1] w = {1, 2, 3, 4, 5, 6}, float[3] bias = {0.5, -1, 2}, float[5,2] a,
   float[2,5] bm, float[1] c1 = {0.25})
  => (float[1,3,4,4] c, float[1,3,4,4] nb, float[5,5] gm, float[1,2,4,4] r) {
  c = Conv (x, w, bias)
  nb = Conv (x, w)
  gm = Gemm (a, bm, c1)
  r = Relu (x)
}
)";

struct Fixture {
  explicit Fixture(bool fuse = true) : b(graph, fuse, engine) {}
  Graph graph = test::GraphFromText(kGraph);
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  backend::Builder b;

  ValueId V(const std::string& name) const { return *graph.FindValue(name); }
  const Node& Writer(const std::string& value) const { return graph.node(graph.value(V(value)).producer); }
};

std::vector<float> FloatsOf(const dnnl::memory& m) {
  const auto* p = static_cast<const float*>(m.get_data_handle());
  return std::vector<float>(p, p + m.get_desc().get_size() / sizeof(float));
}

}  // namespace

TEST_CASE("BiasOf: a bias input times a scale, zeros when absent, one value broadcast", "[operands]") {
  Fixture f;
  CHECK(backend::BiasOf(f.b, f.Writer("c"), 2, 3) == std::vector<double>{0.5, -1, 2});
  CHECK(backend::BiasOf(f.b, f.Writer("c"), 2, 3, -2.0) == std::vector<double>{-1, 2, -4});
  CHECK(backend::BiasOf(f.b, f.Writer("nb"), 2, 3) == std::vector<double>{0, 0, 0});  // no bias input
  CHECK(backend::BiasOf(f.b, f.Writer("gm"), 2, 5) == std::vector<double>(5, 0.25));   // Gemm's C of one value
  const test::ThrownError wrong = test::ErrorOf([&] { backend::BiasOf(f.b, f.Writer("c"), 2, 4); });
  CHECK(wrong.kind == ErrorKind::kUnsupported);
  CHECK_THAT(wrong.message, Catch::Contains("one value per output"));
}

TEST_CASE("BiasMemory: the bias as f32 [O], or [1, O] for a matmul", "[operands]") {
  Fixture f;
  const NodeId conv = f.graph.value(f.V("c")).producer;
  const dnnl::memory column = backend::BiasMemory(f.b, conv, {0.5, -1, 2});
  CHECK(column.get_desc().dims() == dnnl::memory::dims{3});
  CHECK(FloatsOf(column) == std::vector<float>{0.5f, -1.f, 2.f});
  const dnnl::memory row = backend::BiasMemory(f.b, conv, {1, 2, 3, 4}, true);
  CHECK(row.get_desc().dims() == dnnl::memory::dims{1, 4});
  CHECK(FloatsOf(row) == std::vector<float>{1, 2, 3, 4});
}

TEST_CASE("OpInput: fused, a plain or convolution layout is read as it is, otherwise made plain", "[operands]") {
  const Dims dims = {1, 2, 4, 4};
  for (bool fuse : {true, false}) {
    INFO((fuse ? "fused" : "unfused"));
    Fixture f(fuse);
    const Node& relu = f.Writer("r");
    // x channels-last, as a convolution leaves it.
    const backend::Act x = f.b.NewAct(dims, backend::ChannelsLastDesc(dims));
    f.b.SetAct(f.V("x"), x);
    const backend::Arg arg = backend::OpInput(f.b, relu, 0);
    if (fuse) {
      CHECK(arg.slot == x.slot);
      CHECK(arg.md == x.md);
      CHECK(f.b.steps.empty());
    } else {
      CHECK(arg.slot != x.slot);
      CHECK(arg.md == backend::PlainDesc(dims));
      REQUIRE(f.b.steps.size() == 1);
      CHECK(f.b.steps[0].kind == "reorder");
    }
  }
  // A transposed view (neither plain nor a convolution's layout) is made plain even fused.
  Fixture f;
  const dnnl::memory::desc transposed = backend::PlainDesc({1, 2, 4, 4}).permute_axes({0, 1, 3, 2});
  const backend::Act x = f.b.NewAct(dims, transposed);
  f.b.SetAct(f.V("x"), x);
  const backend::Arg arg = backend::OpInput(f.b, f.Writer("r"), 0);
  CHECK(arg.md == backend::PlainDesc(dims));
  REQUIRE(f.b.steps.size() == 1);
  CHECK(f.b.steps[0].kind == "reorder");
}
