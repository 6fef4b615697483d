#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <onnx/defs/tensor_proto_util.h>

#include "rewrite/fold_batchnorm.h"
#include "load/loader.h"
#include "conv_reference.h"
#include "test_models.h"

using namespace onnxfuse;
using Strings = std::vector<std::string>;
using onnxfuse::test::MaxRelativeDifference;

namespace {

// --- Structure helpers.

int Count(const onnx::ModelProto& model, const std::string& op) {
  const auto& nodes = model.graph().node();
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.op_type() == op; }));
}

Strings InitializerNames(const onnx::ModelProto& model) {
  Strings names;
  for (const auto& t : model.graph().initializer()) names.push_back(t.name());
  std::sort(names.begin(), names.end());
  return names;
}

Strings InputNames(const onnx::ModelProto& model) {
  Strings names;
  for (const auto& v : model.graph().input()) names.push_back(v.name());
  std::sort(names.begin(), names.end());
  return names;
}

bool HasValueInfo(const onnx::ModelProto& model, const std::string& name) {
  const auto& vis = model.graph().value_info();
  return std::any_of(vis.begin(), vis.end(), [&](const auto& v) { return v.name() == name; });
}

const onnx::NodeProto& NodeOf(const onnx::ModelProto& model, const std::string& op, int nth = 0) {
  for (const auto& n : model.graph().node())
    if (n.op_type() == op && nth-- == 0) return n;
  throw std::runtime_error("no " + op + " node");
}

Strings Reasons(const FoldResult& r) {
  Strings out;
  for (const auto& x : r.refused) out.push_back(x.batchnorm + ": " + x.reason);
  return out;
}

// The fold's records, and the model before and after it.
struct Folded : FoldResult {
  onnx::ModelProto before, model;
};

Folded Fold(Graph& graph) {
  Folded r;
  r.before = graph.model();
  static_cast<FoldResult&>(r) = FoldBatchNormIntoConv(graph);
  r.model = graph.model();
  return r;
}

// The rewritten Graph is the one the real loader (sort, schema checks, shape
// inference) makes of its model: same nodes, values, use-lists and types.
void CheckSameAsReloaded(const Graph& graph) {
  Graph reloaded = LoadModelProto(graph.model(), "folded.onnx");
  REQUIRE(graph.num_nodes() == reloaded.num_nodes());
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node &a = graph.node(id), &b = reloaded.node(id);
    CHECK(a.name == b.name);
    CHECK(a.inputs == b.inputs);
    CHECK(a.outputs == b.outputs);
    CHECK(a.proto.SerializeAsString() == b.proto.SerializeAsString());
  }
  REQUIRE(graph.values().size() == reloaded.values().size());
  for (ValueId v = 0; v < graph.values().size(); ++v) {
    const Value &a = graph.value(v), &b = reloaded.value(v);
    CHECK(a.name == b.name);
    CHECK(a.producer == b.producer);
    CHECK(a.consumers == b.consumers);
    CHECK(a.initializer == b.initializer);
    CHECK(a.type.ShapeString() == b.type.ShapeString());
    CHECK(a.type.elem_type == b.type.elem_type);
  }
  CHECK(graph.inputs() == reloaded.inputs());
  CHECK(graph.outputs() == reloaded.outputs());
}

Folded FoldAndReload(Graph& graph) {
  Folded r = Fold(graph);
  CheckSameAsReloaded(graph);
  return r;
}

// Moves float_data to little-endian raw_data, the encoding exporters use.
void ToRawData(onnx::ModelProto& model) {
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.data_type() != onnx::TensorProto::FLOAT) continue;
    std::string bytes(static_cast<std::size_t>(t.float_data_size()) * 4, '\0');
    std::memcpy(bytes.data(), t.float_data().data(), bytes.size());
    t.clear_float_data();
    t.set_raw_data(bytes);
  }
}

const char* kConvBnRelu = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[1,2,5,5] x, float[3,2,3,3] w = {0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, 0.8, -0.9,
                                            1.0, 0.9, -0.8, 0.7, 0.6, 0.5, -0.4, 0.3, 0.2,
                                            -0.1, 0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, 0.9,
                                            0.5, 0.5, -0.5, 0.5, 0.25, 0.25, -0.25, 0.25, 0.1,
                                            0.3, -0.3, 0.3, 0.3, 0.2, -0.2, 0.2, 0.2, 0.1,
                                            -1.0, 0.0, 1.0, 0.5, 0.0, -0.5, 0.2, 0.4, 0.6},
     float[3] b = {0.1, -0.2, 0.3}, float[3] s = {1.5, 0.5, -2.0}, float[3] bb = {0.25, -1.0, 0.5},
     float[3] m = {0.2, -0.3, 0.1}, float[3] v = {0.8, 2.5, 0.05})
    => (float[1,3,5,5] y) {
    c = Conv <pads: ints = [1,1,1,1]> (x, w, b)
    n = BatchNormalization <epsilon: float = 0.001> (c, s, bb, m, v)
    y = Relu (n)
  })";

}  // namespace

TEST_CASE("Conv+BN folds into new initializers, keeps value names, drops what it leaves unused", "[fold_batchnorm]") {
  auto graph = test::GraphFromText(kConvBnRelu);
  REQUIRE(HasValueInfo(graph.model(), "c"));
  auto r = FoldAndReload(graph);

  REQUIRE(r.folded.size() == 1);
  CHECK(r.refused.empty());
  CHECK(r.folded[0].batchnorm == "BatchNormalization_1");
  CHECK(r.folded[0].conv == "Conv_0");
  CHECK(r.folded[0].weight == "w_bnfolded");
  CHECK(r.folded[0].bias == "b_bnfolded");
  CHECK(Count(r.model, "BatchNormalization") == 0);
  CHECK(Count(r.model, "Conv") == 1);
  const auto& conv = NodeOf(r.model, "Conv");
  CHECK(Strings(conv.input().begin(), conv.input().end()) == Strings{"x", "w_bnfolded", "b_bnfolded"});
  CHECK(conv.output(0) == "n");  // the BN's output name: Relu still reads "n"
  CHECK(NodeOf(r.model, "Relu").input(0) == "n");
  CHECK(InitializerNames(r.model) == Strings{"b_bnfolded", "w_bnfolded"});
  CHECK(InputNames(r.model) == Strings{"x"});  // removed initializers leave the input list too
  CHECK_FALSE(HasValueInfo(r.model, "c"));
  CHECK(r.model.opset_import(0).version() == 13);

  CHECK(MaxRelativeDifference(r.before, r.model) < 1e-6);
}

TEST_CASE("raw_data and double tensors fold, W' is written in W's type", "[fold_batchnorm]") {
  SECTION("float raw_data") {
    auto model = test::ParseModel(kConvBnRelu);
    ToRawData(model);
    auto graph = LoadModelProto(model, "raw.onnx");
    auto r = FoldAndReload(graph);
    REQUIRE(r.folded.size() == 1);
    CHECK(MaxRelativeDifference(r.before, r.model) < 1e-6);
  }
  SECTION("double with double_data") {
    std::string text = kConvBnRelu;
    for (std::size_t at; (at = text.find("float[")) != std::string::npos;) text.replace(at, 5, "double");
    auto graph = test::GraphFromText(text);
    auto r = FoldAndReload(graph);
    REQUIRE(r.folded.size() == 1);
    for (const auto& t : r.model.graph().initializer()) CHECK(t.data_type() == onnx::TensorProto::DOUBLE);
    CHECK(MaxRelativeDifference(r.before, r.model) < 1e-12);
  }
}

TEST_CASE("a Conv without bias gets B' named after the BN's B", "[fold_batchnorm]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,2,4,4] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 2.0},
       float[2] s = {2.0, -0.5}, float[2] beta = {0.1, 0.2}, float[2] m = {0.3, -0.4}, float[2] v = {1.0, 0.25})
      => (float[1,2,4,4] y) {
      c = Conv (x, w)
      y = BatchNormalization (c, s, beta, m, v)
    })");
  auto r = FoldAndReload(graph);
  REQUIRE(r.folded.size() == 1);
  CHECK(r.folded[0].bias == "beta_bnfolded");
  const auto& conv = NodeOf(r.model, "Conv");
  CHECK(Strings(conv.input().begin(), conv.input().end()) == Strings{"x", "w_bnfolded", "beta_bnfolded"});
  CHECK(conv.output(0) == "y");  // the BN wrote a graph output; the conv writes it now
  CHECK(MaxRelativeDifference(r.before, r.model) < 1e-6);
}

TEST_CASE("grouped and depthwise Conv scale W by output channel", "[fold_batchnorm]") {
  // group 2: C_in 4, C_out 6, W (6, 2, 3, 3); depthwise: group 4, W (4, 1, 3, 3).
  for (const auto& [group, cout, cin_g] : {std::tuple{2, 6, 2}, std::tuple{4, 4, 1}}) {
    std::string w, vec;
    for (int k = 0; k < cout; ++k) vec += (k ? ", " : "") + std::to_string(0.3 + 0.4 * k);
    for (int e = 0; e < cout * cin_g * 9; ++e) w += (e ? ", " : "") + std::to_string(std::sin(e * 0.7));
    auto graph = test::GraphFromText(
        "<ir_version: 8, opset_import: [\"\" : 13]>\n"
        "g (float[1,4,5,5] x, float[" +
        std::to_string(cout) + "," + std::to_string(cin_g) + ",3,3] w = {" + w + "}, float[" + std::to_string(cout) +
        "] s = {" + vec + "}, float[" + std::to_string(cout) + "] b = {" + vec + "}) => (float[1," +
        std::to_string(cout) +
        ",3,3] y) {\n"
        "  c = Conv <group: int = " +
        std::to_string(group) +
        "> (x, w)\n"
        "  y = BatchNormalization <epsilon: float = 0.01> (c, s, b, b, s)\n}");
    INFO("group " << group);
    auto r = FoldAndReload(graph);
    REQUIRE(r.folded.size() == 1);
    CHECK(MaxRelativeDifference(r.before, r.model) < 1e-6);
  }
}

TEST_CASE("ConvTranspose scales W[:, j] per group (weight layout C_in, C_out/group, ...)", "[fold_batchnorm]") {
  // group 1: W (2, 3, 3, 3) -> 3 output channels; group 2: W (4, 3, 3, 3) -> 6 output channels,
  // where output channel 4 is W[2..3, 1]. Distinct scales per channel catch a wrong layout.
  for (const auto& [group, cin, cout_g] : {std::tuple{1, 2, 3}, std::tuple{2, 4, 3}}) {
    const int cout = group * cout_g;
    std::string w, vec, var;
    for (int e = 0; e < cin * cout_g * 9; ++e) w += (e ? ", " : "") + std::to_string(std::cos(e * 0.37));
    for (int k = 0; k < cout; ++k) {
      vec += (k ? ", " : "") + std::to_string(0.5 * (k + 1) * (k % 2 ? -1 : 1));
      var += (k ? ", " : "") + std::to_string(0.1 + 0.3 * k);
    }
    const std::string C = std::to_string(cout);
    auto graph = test::GraphFromText(
        "<ir_version: 8, opset_import: [\"\" : 13]>\n"
        "g (float[1," +
        std::to_string(cin) + ",3,3] x, float[" + std::to_string(cin) + "," + std::to_string(cout_g) + ",3,3] w = {" +
        w + "}, float[" + C + "] cb = {" + vec + "}, float[" + C + "] s = {" + vec + "}, float[" + C + "] v = {" + var +
        "}) => (float[1," + C +
        ",6,6] y) {\n"
        "  c = ConvTranspose <group: int = " +
        std::to_string(group) +
        ", strides: ints = [2, 2], pads: ints = [1, 1, 0, 0]> (x, w, cb)\n"
        "  y = BatchNormalization (c, s, v, s, v)\n}");
    INFO("group " << group);
    auto r = FoldAndReload(graph);
    REQUIRE(r.folded.size() == 1);
    CHECK(NodeOf(r.model, "ConvTranspose").output(0) == "y");
    CHECK(MaxRelativeDifference(r.before, r.model) < 1e-6);
  }
}

TEST_CASE("a W shared by two convs is never modified in place, new names stay unique", "[fold_batchnorm]") {
  const char* text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3,3] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 2.0}, float[2] w_bnfolded = {7.0, 7.0},
       float[2] s1 = {2.0, 3.0}, float[2] s2 = {-1.0, 0.5}, float[2] z = {0.0, 0.0}, float[2] one = {1.0, 1.0})
      => (float[1,2,3,3] y, float[2] w_bnfolded_out) {
      c1 = Conv (x, w)
      n1 = BatchNormalization (c1, s1, z, z, one)
      c2 = Conv (x, w)
      n2 = BatchNormalization (c2, s2, z, z, one)
      y = Add (n1, n2)
      w_bnfolded_out = Identity (w_bnfolded)
    })";
  SECTION("both folded: W goes, W' and W'' get distinct names") {
    auto graph = test::GraphFromText(text);
    auto r = FoldAndReload(graph);
    REQUIRE(r.folded.size() == 2);
    CHECK(r.folded[0].weight == "w_bnfolded_2");  // "w_bnfolded" is taken by an unrelated initializer
    CHECK(r.folded[1].weight == "w_bnfolded_3");
    CHECK(r.folded[0].bias == "z_bnfolded");
    CHECK(r.folded[1].bias == "z_bnfolded_2");
    CHECK(InitializerNames(r.model) ==
          Strings{"w_bnfolded", "w_bnfolded_2", "w_bnfolded_3", "z_bnfolded", "z_bnfolded_2"});
    const auto* kept = &r.model.graph().initializer(0);
    for (const auto& t : r.model.graph().initializer())
      if (t.name() == "w_bnfolded") kept = &t;
    CHECK(onnx::ParseData<float>(kept) == std::vector<float>{7.0f, 7.0f});
    CHECK(MaxRelativeDifference(r.before, r.model) < 1e-6);
  }
  SECTION("one refused: W stays as it was for the other conv") {
    auto model = test::ParseModel(text);
    auto* bn2 = model.mutable_graph()->mutable_node(3);
    bn2->set_input(1, "x_scale");  // a graph input: not a constant
    auto* in = model.mutable_graph()->add_input();
    *in = model.graph().input(3);
    in->set_name("x_scale");
    auto graph = LoadModelProto(model, "shared.onnx");
    auto r = FoldAndReload(graph);
    REQUIRE(r.folded.size() == 1);
    CHECK(Reasons(r) == Strings{"BatchNormalization_3: not_constant"});
    CHECK(NodeOf(r.model, "Conv", 1).input(1) == "w");
    const onnx::TensorProto* w = nullptr;
    for (const auto& t : r.model.graph().initializer())
      if (t.name() == "w") w = &t;
    REQUIRE(w);
    CHECK(onnx::ParseData<float>(w) == std::vector<float>{1.0f, 0.5f, -0.5f, 2.0f});
    // s1 went with the fold; z and one are still read by the refused BN.
    CHECK(InitializerNames(r.model) == Strings{"one", "s2", "w", "w_bnfolded", "w_bnfolded_2", "z", "z_bnfolded"});
  }
}

TEST_CASE("weights from Constant nodes fold, and the Constant goes when unused", "[fold_batchnorm]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3,3] x, float[2] s = {2.0, 3.0}, float[2] z = {0.5, 0.0}, float[2] one = {1.0, 4.0})
      => (float[1,2,3,3] y) {
      w = Constant <value: tensor = float[2,2,1,1] {1.0, 0.5, -0.5, 2.0}> ()
      c = Conv (x, w)
      y = BatchNormalization (c, s, z, z, one)
    })");
  auto r = FoldAndReload(graph);
  REQUIRE(r.folded.size() == 1);
  CHECK(Count(r.model, "Constant") == 0);
  CHECK(InitializerNames(r.model) == Strings{"w_bnfolded", "z_bnfolded"});
  CHECK(MaxRelativeDifference(r.before, r.model) < 1e-6);
}

TEST_CASE("refusals name the reason and the nodes, and change nothing", "[fold_batchnorm]") {
  const std::string head = R"(<ir_version: 8, opset_import: ["" : 15]>
    g (float[1,2,3,3] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 2.0},
       float[2] s = {2.0, 3.0}, float[2] z = {0.0, 0.0}, float[2] one = {1.0, 1.0}, float[2] sx)
      => (float[1,2,3,3] y) )";
  struct Case {
    const char* reason;
    std::string body;
    std::string detail;
  };
  const Case cases[] = {
      {"training_mode",
       "{ c = Conv (x, w)  y, rm, rv = BatchNormalization <training_mode: int = 1> (c, s, z, z, one) }",
       "'BatchNormalization_1' (BatchNormalization) has training_mode=1"},
      {"no_conv_producer", "{ c = Relu (x)  y = BatchNormalization (c, s, z, z, one) }",
       "reads 'c' from 'Relu_0' (Relu), not from a Conv or ConvTranspose"},
      {"no_conv_producer", "{ y = BatchNormalization (x, s, z, z, one) }", "reads 'x', a graph input"},
      {"conv_output_shared", "{ c = Conv (x, w)  n = BatchNormalization (c, s, z, z, one)  y = Add (n, c) }",
       "the output 'c' of 'Conv_0' (Conv) is read by 'Add_2' (Add) besides 'BatchNormalization_1'"},
      {"not_constant", "{ c = Conv (x, w)  y = BatchNormalization (c, sx, z, z, one) }",
       "the scale 'sx' of 'BatchNormalization_1' (BatchNormalization) is a graph input, not a constant"},
      {"not_constant", "{ w2 = Relu (w)  c = Conv (x, w2)  y = BatchNormalization (c, s, z, z, one) }",
       "the weight 'w2' of 'Conv_1' (Conv) is computed by 'Relu_0' (Relu), not a constant"},
      {"non_finite", "{ c = Conv (x, w)  y = BatchNormalization <epsilon: float = 0.0> (c, s, z, z, z) }",
       "input_var + epsilon <= 0"},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    auto graph = test::GraphFromText(head + c.body);
    auto r = Fold(graph);
    CHECK(r.folded.empty());
    REQUIRE(r.refused.size() == 1);
    CHECK(r.refused[0].reason == c.reason);
    CHECK_THAT(r.refused[0].detail, Catch::Contains(c.detail));
    CHECK_THAT(r.refused[0].batchnorm, Catch::StartsWith("BatchNormalization_"));
    CHECK(r.model.SerializeAsString() == r.before.SerializeAsString());
  }
}

TEST_CASE("more refusals: graph-output conv, used statistics, float16, mismatched shapes", "[fold_batchnorm]") {
  SECTION("the conv output is a graph output") {
    auto graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,2,3,3] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 2.0}, float[2] s = {2.0, 3.0}, float[2] z = {0.0, 0.0})
        => (float[1,2,3,3] y, float[1,2,3,3] c) { c = Conv (x, w)  y = BatchNormalization (c, s, z, z, s) })");
    auto r = FoldBatchNormIntoConv(graph);
    CHECK(Reasons(r) == Strings{"BatchNormalization_1: conv_output_is_graph_output"});
    CHECK(r.refused[0].conv == "Conv_0");
  }
  SECTION("opset 13: a running statistic that is read means training") {
    auto graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,2,3,3] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 2.0}, float[2] s = {2.0, 3.0}, float[2] z = {0.0, 0.0})
        => (float[1,2,3,3] y, float[2] rm) { c = Conv (x, w)  y, rm, rv, sm, sv = BatchNormalization (c, s, z, z, s) })");
    auto r = FoldBatchNormIntoConv(graph);
    CHECK(Reasons(r) == Strings{"BatchNormalization_1: training_mode"});
    CHECK_THAT(r.refused[0].detail, Catch::Contains("'rm', which is a graph output"));
  }
  SECTION("float16 weights") {
    auto model = test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float16[1,2,3,3] x, float16[2,2,1,1] w, float16[2] s, float16[2] z) => (float16[1,2,3,3] y) {
        c = Conv (x, w)  y = BatchNormalization (c, s, z, z, s) })");
    for (const auto& [name, dims] :
         {std::pair<std::string, std::vector<std::int64_t>>{"w", {2, 2, 1, 1}}, {"s", {2}}, {"z", {2}}}) {
      auto* t = model.mutable_graph()->add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::FLOAT16);
      for (auto d : dims) t->add_dims(d);
      t->set_raw_data(std::string(static_cast<std::size_t>(dims.size() == 4 ? 8 : 4), '\x3c'));
    }
    auto graph = LoadModelProto(model, "half.onnx");
    auto r = FoldBatchNormIntoConv(graph);
    CHECK(Reasons(r) == Strings{"BatchNormalization_1: unsupported_dtype"});
    CHECK_THAT(r.refused[0].detail, Catch::Contains("the weight 'w' of 'Conv_0' (Conv) is FLOAT16"));
  }
  SECTION("a BN parameter longer than C_out") {
    auto model = test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,2,3,3] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 2.0}, float[2] s = {2.0, 3.0},
         float[3] z = {0.0, 0.0, 0.0}) => (float[1,2,3,3] y) { c = Conv (x, w)  y = BatchNormalization (c, s, z, s, s) })");
    auto graph = LoadModelProto(model, "mismatch.onnx");
    auto r = FoldBatchNormIntoConv(graph);
    CHECK(Reasons(r) == Strings{"BatchNormalization_1: shape_mismatch"});
    CHECK_THAT(r.refused[0].detail,
               Catch::Contains("the B 'z' of 'BatchNormalization_1' (BatchNormalization) has shape [3], "
                               "but 'Conv_0' (Conv) has 2 output channels"));
  }
}

TEST_CASE("every BatchNormalization is either folded or refused", "[fold_batchnorm]") {
  // A ResNet-like stem: conv-bn-relu, then a BN after a Relu (pre-activation), then a folded one.
  auto graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 2.0}, float[2] s = {2.0, 3.0}, float[2] z = {0.1, 0.0},
       float[2] one = {1.0, 0.5}) => (float[1,2,4,4] y) {
      c1 = Conv (x, w)
      n1 = BatchNormalization (c1, s, z, z, one)
      r1 = Relu (n1)
      n2 = BatchNormalization (r1, s, z, z, one)
      c3 = Conv (n2, w)
      y = BatchNormalization (c3, one, z, s, s)
    })");
  auto r = FoldAndReload(graph);
  CHECK(r.folded.size() == 2);
  CHECK(Reasons(r) == Strings{"BatchNormalization_3: no_conv_producer"});
  CHECK(Count(r.model, "BatchNormalization") == 1);
  // w is read by no conv any more and goes; s, z and one stay for the refused BN.
  CHECK(InitializerNames(r.model) ==
        Strings{"one", "s", "w_bnfolded", "w_bnfolded_2", "z", "z_bnfolded", "z_bnfolded_2"});
  CHECK(MaxRelativeDifference(r.before, r.model) < 1e-6);
}

TEST_CASE("IR version 3 lists W' and B' as graph inputs", "[fold_batchnorm]") {
  auto model = test::ParseModel(kConvBnRelu);
  model.set_ir_version(3);
  auto graph = LoadModelProto(model, "ir3.onnx");
  auto r = FoldAndReload(graph);
  CHECK(InputNames(r.model) == Strings{"b_bnfolded", "w_bnfolded", "x"});
}
