#include <catch2/catch.hpp>

#include <algorithm>

#include "ir/tensor_values.h"
#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// x -> Relu -> r -> Identity -> i -> Neg -> y, and an Add reading i and a bias.
const char* const kChain = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[2] x, float[2] bias = {1.0, 2.0}) => (float[2] y, float[2] z) {
    r = Relu (x)
    i = Identity (r)
    y = Neg (i)
    z = Add (i, bias)
  })";

bool HasValueInfo(const Graph& graph, const std::string& name) {
  const auto& vis = graph.model().graph().value_info();
  return std::any_of(vis.begin(), vis.end(), [&](const auto& v) { return v.name() == name; });
}

}  // namespace

TEST_CASE("edits take effect at the commit, as a reload of the model would see them", "[graph_edit]") {
  Graph graph = test::GraphFromText(kChain);
  REQUIRE(HasValueInfo(graph, "i"));
  // Bypass the Identity: Relu writes i, the Identity goes; the Add reads a new initializer.
  const std::string name = graph.NewValueName("bias");
  CHECK(name == "bias_2");
  graph.AddInitializer(EncodeTensor(name, onnx::TensorProto::FLOAT, {2}, {3.0, 4.0}));
  graph.SetNodeOutput(test::NodeNamed(graph, "Relu_0"), 0, "i");
  graph.RemoveNode(test::NodeNamed(graph, "Identity_1"));
  graph.SetNodeInput(test::NodeNamed(graph, "Add_3"), 1, name);
  graph.RemoveInitializer(*graph.FindValue("bias"));
  CHECK(graph.num_nodes() == 4);  // not yet committed: ids still those of the old graph
  graph.CommitEdits();

  REQUIRE(graph.num_nodes() == 3);
  CHECK(graph.node(0).name == "Relu_0");
  CHECK(graph.node(1).name == "Neg_1");  // unnamed nodes are named by their new index
  CHECK(graph.node(2).name == "Add_2");
  const Value& i = graph.value(*graph.FindValue("i"));
  CHECK(i.producer == 0);
  CHECK(i.consumers == std::vector<NodeId>{1, 2});
  CHECK(i.type.ShapeString() == "[2]");
  CHECK_FALSE(graph.FindValue("r"));
  CHECK_FALSE(HasValueInfo(graph, "r"));  // left undefined by the edits
  CHECK(HasValueInfo(graph, "i"));
  CHECK_FALSE(graph.FindValue("bias"));
  CHECK(graph.IsConstant(*graph.FindValue("bias_2")));
  CHECK(DecodeTensor<float>(*graph.ConstantTensor(*graph.FindValue("bias_2")), "b") == std::vector<float>{3, 4});

  Graph reloaded = LoadModelProto(graph.model(), "reloaded.onnx");
  REQUIRE(reloaded.num_nodes() == graph.num_nodes());
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    CHECK(reloaded.node(id).name == graph.node(id).name);
    CHECK(reloaded.node(id).inputs == graph.node(id).inputs);
  }
  REQUIRE(reloaded.values().size() == graph.values().size());
  for (ValueId v = 0; v < graph.values().size(); ++v) CHECK(reloaded.value(v).name == graph.value(v).name);
}

TEST_CASE("new names avoid every name of the model, and IR 3 lists new initializers as inputs", "[graph_edit]") {
  auto model = test::ParseModel(kChain);
  model.set_ir_version(3);
  Graph graph = LoadModelProto(model, "ir3.onnx");
  CHECK(graph.NewValueName("r") == "r_2");
  CHECK(graph.NewValueName("r") == "r_3");  // a name returned once is taken
  CHECK(graph.NewValueName("fresh") == "fresh");
  graph.AddInitializer(EncodeTensor("fresh", onnx::TensorProto::FLOAT, {1}, {1.0}));
  graph.CommitEdits();
  const auto& inputs = graph.model().graph().input();
  CHECK(std::any_of(inputs.begin(), inputs.end(), [](const auto& v) { return v.name() == "fresh"; }));
  CHECK(graph.value(*graph.FindValue("fresh")).initializer >= 0);
  CHECK(graph.inputs().size() == 1);  // an initializer listed as input is no graph input
}

TEST_CASE("a commit that leaves a value read but undefined is an invalid model", "[graph_edit]") {
  Graph graph = test::GraphFromText(kChain);
  graph.RemoveNode(test::NodeNamed(graph, "Relu_0"));
  CHECK_THROWS_AS(graph.CommitEdits(), Error);
}

TEST_CASE("a copy shares the model until one of them is edited, and the edit reaches that one only",
          "[graph_edit]") {
  const Graph original = test::GraphFromText(kChain);
  Graph copy = original;
  CHECK(&copy.model() == &original.model());
  CHECK(&copy.nodes() == &original.nodes());
  copy.SetNodeOutput(test::NodeNamed(copy, "Relu_0"), 0, "i");
  copy.RemoveNode(test::NodeNamed(copy, "Identity_1"));
  copy.CommitEdits();
  CHECK(copy.num_nodes() == 3);
  CHECK(original.num_nodes() == 4);
  CHECK(original.model().graph().node_size() == 4);
  CHECK(original.node(test::NodeNamed(original, "Identity_1")).op_type == "Identity");
  // Releasing a copy's initializer leaves the data the original reads.
  Graph other = original;
  other.ReleaseInitializer(*other.FindValue("bias"));
  CHECK(other.ConstantTensor(*other.FindValue("bias")) == nullptr);
  REQUIRE(original.ConstantTensor(*original.FindValue("bias")) != nullptr);
  CHECK(original.ConstantTensor(*original.FindValue("bias"))->float_data_size() == 2);
}
