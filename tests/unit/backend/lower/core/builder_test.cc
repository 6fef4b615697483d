// The compile-time state of a plan (src/backend/lower/core/builder.cc): values as
// constants or activations, slots and views of them, remaining uses and when a
// buffer may be overwritten, layouts through one shared reorder, prepacked
// constants recorded and replayed, and which oneDNN implementations count as slow.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "backend/lower/core/builder.h"
#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using backend::Dims;
using backend::PlainDesc;

namespace {

// x is read twice (Relu, Exp); w is an initializer.
const char* const kGraph = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,3,4] x, float[4] w = {1, 2, 3, 4}) => (float[1,2,3,4] y, float[1,2,3,4] e, float[1,2,3,4] a) {
  r = Relu (x)
  y = Sigmoid (r)
  e = Exp (x)
  a = Add (r, w)
}
)";
const Dims kDims = {1, 2, 3, 4};

struct Fixture {
  explicit Fixture(backend::PackedConstants* packed = nullptr) : b(graph, true, engine, packed) {}
  Graph graph = test::GraphFromText(kGraph);
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  backend::Builder b;

  ValueId V(const std::string& name) const { return *graph.FindValue(name); }
  NodeId WriterId(const std::string& value) const { return graph.value(V(value)).producer; }
  const Node& Writer(const std::string& value) const { return graph.node(WriterId(value)); }
};

}  // namespace

TEST_CASE("constants: initializers are known, set values too, a run-time value refused naming its reader",
          "[builder]") {
  Fixture f;
  const Node& add = f.Writer("a");
  CHECK(f.b.IsConst(f.V("w")));
  CHECK(f.b.Const(f.V("w"), add).data == std::vector<float>{1, 2, 3, 4});
  CHECK(f.b.DimsOfValue(f.V("w"), add) == Dims{4});
  CHECK_FALSE(f.b.IsConst(f.V("x")));
  const test::ThrownError e = test::ErrorOf([&] { f.b.Const(f.V("x"), add); });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK_THAT(e.message, Catch::Contains("'x' must be a constant known at build time") && Catch::Contains(add.name));
  f.b.SetConst(f.V("r"), test::TensorOf("r", kDims, std::vector<float>(24, 0.5f)));
  CHECK(f.b.IsConst(f.V("r")));
  CHECK(f.b.Const(f.V("r"), add).data[23] == 0.5f);
}

TEST_CASE("activations: a slot of the layout's size, its dims checked against shape inference", "[builder]") {
  Fixture f;
  const Node& relu = f.Writer("r");
  CHECK_FALSE(f.b.IsAct(f.V("x")));
  CHECK(test::ErrorOf([&] { f.b.ActOf(f.V("x"), relu); }).kind == ErrorKind::kInternal);
  const backend::Act x = f.b.NewAct(kDims, PlainDesc(kDims));
  REQUIRE(f.b.slots.size() == 1);
  CHECK(f.b.slots[0].bytes == 24 * 4);
  f.b.SetAct(f.V("x"), x);
  CHECK(f.b.IsAct(f.V("x")));
  CHECK(f.b.ActOf(f.V("x"), relu).slot == x.slot);
  CHECK(f.b.DimsOfValue(f.V("x"), relu) == kDims);
  CHECK(f.b.slots[0].values == std::vector<ValueId>{f.V("x")});
  const backend::Act wrong = f.b.NewAct({1, 2, 4, 3}, PlainDesc({1, 2, 4, 3}));
  CHECK(test::ErrorOf([&] { f.b.SetAct(f.V("r"), wrong); }).kind == ErrorKind::kInternal);
}

TEST_CASE("views: a slot into another's buffer at an offset, its root never a view", "[builder]") {
  Fixture f;
  const backend::Act whole = f.b.NewAct(kDims, PlainDesc(kDims));
  const backend::Act same = f.b.NewView(whole.slot, 0, kDims, PlainDesc(kDims));
  CHECK(same.slot == whole.slot);  // offset 0: the slot itself
  const backend::Act half = f.b.NewView(whole.slot, 48, {1, 1, 3, 4}, PlainDesc({1, 1, 3, 4}));
  const backend::Act quarter = f.b.NewView(half.slot, 16, {1, 1, 1, 4}, PlainDesc({1, 1, 1, 4}));
  CHECK(half.slot != whole.slot);
  CHECK(f.b.RootOf(half.slot) == whole.slot);
  CHECK(f.b.RootOf(quarter.slot) == whole.slot);  // a view of a view points into the root
  CHECK(f.b.slots[static_cast<std::size_t>(quarter.slot)].view_offset == 64);
  CHECK(f.b.RootOf(whole.slot) == whole.slot);
  CHECK(f.b.SameBuffer(quarter.slot, whole.slot));
  const backend::Act other = f.b.NewAct(kDims, PlainDesc(kDims));
  CHECK_FALSE(f.b.SameBuffer(other.slot, whole.slot));
  CHECK_FALSE(f.b.SameBuffer(-1, whole.slot));
}

TEST_CASE("a buffer is dead once every value in it, and in its views, has no use left", "[builder]") {
  Fixture f;
  const Node &relu = f.Writer("r"), &exp = f.Writer("e"), &add = f.Writer("a");
  const backend::Act x = f.b.NewAct(kDims, PlainDesc(kDims));
  f.b.SetAct(f.V("x"), x);
  CHECK_FALSE(f.b.DeadNow(x.slot));
  CHECK_FALSE(f.b.DeadNow(x.slot, &relu));  // Exp reads x later
  f.b.Consume(relu);
  CHECK_FALSE(f.b.DeadNow(x.slot));
  CHECK(f.b.DeadNow(x.slot, &exp));  // Exp may write over x: nothing reads it after
  f.b.Consume(exp);
  CHECK(f.b.DeadNow(x.slot));

  // r (read by Sigmoid and Add) in a view of a fresh buffer keeps that buffer alive.
  const backend::Act root = f.b.NewAct({1, 4, 3, 4}, PlainDesc({1, 4, 3, 4}));
  const backend::Act r = f.b.NewView(root.slot, 96, kDims, PlainDesc(kDims));
  f.b.SetAct(f.V("r"), r);
  CHECK(f.b.DeadNow(r.slot) == false);
  CHECK(f.b.DeadNow(root.slot) == false);
  f.b.Consume(f.Writer("y"));
  f.b.Consume(add);
  CHECK(f.b.DeadNow(root.slot));

  // A graph output's buffer never is.
  const backend::Act e = f.b.NewAct(kDims, PlainDesc(kDims));
  f.b.SetAct(f.V("e"), e);
  f.b.slots[static_cast<std::size_t>(e.slot)].graph_output = true;
  CHECK_FALSE(f.b.DeadNow(e.slot));
}

TEST_CASE("Absorb marks nodes lowered elsewhere and consumes their inputs' uses", "[builder]") {
  Fixture f;
  const backend::Act x = f.b.NewAct(kDims, PlainDesc(kDims));
  f.b.SetAct(f.V("x"), x);
  backend::Absorb(f.b, {&f.Writer("r"), &f.Writer("e")});
  CHECK(f.b.absorbed[f.WriterId("r")]);
  CHECK(f.b.absorbed[f.WriterId("e")]);
  CHECK_FALSE(f.b.absorbed[f.WriterId("y")]);
  CHECK(f.b.DeadNow(x.slot));  // both of x's reads are done
}

TEST_CASE("Use: a value in another layout through one reorder step, shared by every reader", "[builder]") {
  Fixture f;
  const Node &relu = f.Writer("r"), &exp = f.Writer("e");
  const backend::Act x = f.b.NewAct(kDims, backend::ChannelsLastDesc(kDims));
  f.b.SetAct(f.V("x"), x);
  const backend::Arg as_is = f.b.Use(f.V("x"), x.md, relu);
  CHECK(as_is.slot == x.slot);
  CHECK(f.b.steps.empty());
  const backend::Arg plain = f.b.UsePlain(f.V("x"), relu);
  CHECK(plain.slot != x.slot);
  CHECK(plain.md == PlainDesc(kDims));
  REQUIRE(f.b.steps.size() == 1);
  CHECK(f.b.steps[0].kind == "reorder");
  CHECK(f.b.UsePlain(f.V("x"), exp).slot == plain.slot);  // the same reorder's result
  CHECK(f.b.steps.size() == 1);
  // A reshape of the same bytes: a view, no step.
  const backend::Arg flat = f.b.Use(f.V("x"), PlainDesc({24}), exp);
  CHECK(flat.slot == plain.slot);
  CHECK(f.b.steps.size() == 1);
}

TEST_CASE("prepacked constants are recorded by key, replayed from a plan file, and so are implementations",
          "[builder]") {
  const std::vector<float> plain = {1, 2, 3, 4};
  const dnnl::memory::desc md = PlainDesc({4});
  backend::PackedConstants recorded;
  {
    Fixture f(&recorded);
    const NodeId add = f.WriterId("a");
    const dnnl::memory m = f.b.PackedConstant(add, "bias", md, [&] { return f.b.HostView(md, plain.data()); });
    CHECK(static_cast<const float*>(m.get_data_handle())[3] == 4.f);
    const std::string key = std::to_string(add) + ":Add:bias";
    REQUIRE(recorded.by_key.count(key) == 1);
    CHECK(static_cast<const float*>(recorded.by_key.at(key).get_data_handle())[0] == 1.f);
    CHECK(f.b.StoredImpl("conv:Add_3") == nullptr);  // recording: nothing stored to replay
  }
  // Replaying: the stored memory, plain() never called; another key is packed from the model.
  backend::PackedConstants replay;
  replay.replay = true;
  replay.by_key = recorded.by_key;
  static_cast<float*>(replay.by_key.begin()->second.get_data_handle())[0] = 9.f;
  replay.implementations["conv:Add_3"] = "jit:avx2";
  Fixture f(&replay);
  const NodeId add = f.WriterId("a");
  const dnnl::memory stored = f.b.PackedConstant(add, "bias", md, [&]() -> dnnl::memory {
    FAIL("plain() called for a stored constant");
    return {};
  });
  CHECK(static_cast<const float*>(stored.get_data_handle())[0] == 9.f);
  CHECK(replay.reused == 1);
  f.b.PackedConstant(add, "weights", md, [&] { return f.b.HostView(md, plain.data()); });
  CHECK(replay.recomputed == 1);
  REQUIRE(f.b.StoredImpl("conv:Add_3") != nullptr);
  CHECK(*f.b.StoredImpl("conv:Add_3") == "jit:avx2");
  CHECK(f.b.StoredImpl("conv:other") == nullptr);
}

TEST_CASE("slow implementations: oneDNN's reference kernels, and gemm-based (de)convolutions only", "[builder]") {
  CHECK(backend::IsSlowImpl("conv", "ref:any"));
  CHECK(backend::IsSlowImpl("binary", "ref:any"));
  CHECK(backend::IsSlowImpl("batch_norm", "bnorm_ref:any"));  // the reference named after its primitive
  CHECK_FALSE(backend::IsSlowImpl("batch_norm", "ncsp_bnorm:any"));
  CHECK(backend::IsSlowImpl("conv", "gemm:jit"));
  CHECK(backend::IsSlowImpl("deconv", "gemm:jit"));
  CHECK_FALSE(backend::IsSlowImpl("conv", "ip:x64:gemm:jit"));  // a convolution run as an inner product
  CHECK_FALSE(backend::IsSlowImpl("matmul", "gemm:jit"));
  CHECK_FALSE(backend::IsSlowImpl("inner_product", "gemm:jit"));
  CHECK_FALSE(backend::IsSlowImpl("lbr_gru", "ref"));  // oneDNN's RNN driver on jit sgemm
  CHECK_FALSE(backend::IsSlowImpl("gru", "ref"));
  CHECK_FALSE(backend::IsSlowImpl("conv", "brg:avx512_core"));
  CHECK_FALSE(backend::IsSlowImpl("conv", "jit:avx2"));
  CHECK_FALSE(backend::IsSlowImpl("conv", "onnxfuse:gemm"));  // our GEMM convolution (backend/kernels/gemm.h)
}

TEST_CASE("replaying, a constant wanted in another layout is reordered once, then shared in each layout",
          "[builder]") {
  // A session's schedules at other shapes may want a weight in one of several
  // layouts (oneDNN's matmul or our GEMM, by rows): each layout is made once.
  std::vector<float> plain(8 * 16);
  for (std::size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<float>(i);
  const dnnl::memory::desc ab = PlainDesc({8, 16});
  const dnnl::memory::desc ba({8, 16}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ba);
  backend::PackedConstants packed;
  packed.replay = true;
  int packs = 0;
  const auto pack = [&](backend::Builder& b, NodeId node, const dnnl::memory::desc& want) {
    return b.PackedConstant(node, "weights", want, [&] {
      ++packs;
      return b.HostView(ab, plain.data());
    });
  };
  void* first_ab = nullptr;
  void* first_ba = nullptr;
  for (int schedule = 0; schedule < 3; ++schedule) {  // as three shapes of one session, alternating layouts
    INFO("schedule " << schedule);
    Fixture f(&packed);
    const NodeId add = f.WriterId("a");
    const dnnl::memory in_ab = pack(f.b, add, ab), in_ba = pack(f.b, add, ba);
    CHECK(static_cast<const float*>(in_ba.get_data_handle())[1] == 16.f);  // ba: column 0 first
    if (schedule == 0) {
      first_ab = in_ab.get_data_handle(), first_ba = in_ba.get_data_handle();
    } else {
      CHECK(in_ab.get_data_handle() == first_ab);
      CHECK(in_ba.get_data_handle() == first_ba);
    }
  }
  CHECK(packs == 1);
  CHECK(packed.relaid == 1);
}
