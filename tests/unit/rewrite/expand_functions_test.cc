// Function expansion (rewrite/expand_functions.h): which nodes are replaced by
// their ONNX function bodies, the names and attributes the inlined nodes get,
// context-dependent bodies built from the node's input types, nested function
// ops, and the nodes kept whole. The numbers of expanded graphs are the ONNX
// node tests' (conformance: test_mvn, test_castlike_*, test_sce_*).
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "ir/attributes.h"
#include "rewrite/expand_functions.h"
#include "test_models.h"

using namespace onnxfuse;
using Strings = std::vector<std::string>;

namespace {

// A backend that lowers every default-domain op but the function ops named
// here and the ops in `missing`.
LoweredOp AllBut(std::set<std::string> not_lowered) {
  return [not_lowered](const std::string& domain, const std::string& op) {
    return domain.empty() && !not_lowered.count(op);
  };
}

const std::set<std::string> kFunctionOps = {"MeanVarianceNormalization", "CastLike", "SoftmaxCrossEntropyLoss",
                                            "NegativeLogLikelihoodLoss", "Range"};

int Count(const Graph& g, const std::string& op) {
  return static_cast<int>(std::count_if(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.op_type == op; }));
}

std::vector<const Node*> NodesOf(const Graph& g, const std::string& op) {
  std::vector<const Node*> found;
  for (const Node& n : g.nodes())
    if (n.op_type == op) found.push_back(&n);
  return found;
}

std::string MvnModel(const std::string& attributes, int opset = 13) {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) +
         "]>\n"
         "g (float[2,3,4,5] x) => (float[2,3,4,5] y) {\n"
         "  r = Relu(x)\n"
         "  y = MeanVarianceNormalization" + attributes + "(r)\n"
         "}\n";
}

}  // namespace

TEST_CASE("MeanVarianceNormalization becomes its body, axes from the node or the schema's default", "[expand_functions]") {
  SECTION("axes given") {
    Graph g = test::GraphFromText(MvnModel("<axes = [1]>"));
    FunctionExpansion e = ExpandFunctionOps(g, AllBut(kFunctionOps));
    REQUIRE(e.expanded.size() == 1);
    CHECK(e.expanded[0].node == "MeanVarianceNormalization_1");
    CHECK(e.expanded[0].op_type == "MeanVarianceNormalization");
    CHECK(e.expanded[0].body_nodes == 11);
    CHECK(e.rounds == 1);
    CHECK(e.kept.empty());
    CHECK(Count(g, "MeanVarianceNormalization") == 0);
    CHECK(g.num_nodes() == 12);  // Relu and the body
    for (const Node* mean : NodesOf(g, "ReduceMean")) CHECK(AttrInts(*mean, "axes") == std::vector<std::int64_t>{1});
  }
  SECTION("axes omitted: MVN's default [0, 2, 3], not ReduceMean's (every axis)") {
    Graph g = test::GraphFromText(MvnModel(""));
    ExpandFunctionOps(g, AllBut(kFunctionOps));
    auto means = NodesOf(g, "ReduceMean");
    REQUIRE(means.size() == 2);
    for (const Node* mean : means) CHECK(AttrInts(*mean, "axes") == std::vector<std::int64_t>{0, 2, 3});
  }
  SECTION("the body reads the node's input and writes its output; its own values and nodes are named after it") {
    Graph g = test::GraphFromText(MvnModel(""));
    ExpandFunctionOps(g, AllBut(kFunctionOps));
    const Node& relu = g.node(test::NodeNamed(g, "Relu_0"));
    std::set<std::string> readers;
    for (NodeId c : g.value(relu.outputs[0]).consumers) readers.insert(g.node(c).op_type);
    CHECK(readers == std::set<std::string>{"ReduceMean", "Pow", "Sub"});
    const Node& out = g.node(g.value(*g.FindValue("y")).producer);
    CHECK(out.op_type == "Div");
    for (const Node& n : g.nodes()) {
      if (&n == &relu) continue;
      CHECK(n.name.rfind("MeanVarianceNormalization_1/", 0) == 0);
      for (ValueId v : n.outputs)
        if (g.value(v).name != "y") CHECK(g.value(v).name.rfind("MeanVarianceNormalization_1/", 0) == 0);
    }
    // Shape inference ran on the reload: the inlined values are typed.
    for (const Node* mean : NodesOf(g, "ReduceMean"))
      CHECK(g.value(mean->outputs[0]).type.dims == std::vector<std::int64_t>{1, 3, 1, 1});
  }
  SECTION("a name the model already uses is not taken again") {
    onnx::ModelProto model = test::ParseModel(MvnModel(""));
    // The name the inliner would give the body's value X_RM (MVN-13's x mean).
    model.mutable_graph()->mutable_node(0)->set_output(0, "MeanVarianceNormalization_1/X_RM");
    model.mutable_graph()->mutable_node(1)->set_input(0, "MeanVarianceNormalization_1/X_RM");
    Graph g = LoadModelProto(model, "inline.onnx");
    ExpandFunctionOps(g, AllBut(kFunctionOps));  // the reload refuses a value defined twice
    CHECK(g.FindValue("MeanVarianceNormalization_1/X_RM_2").has_value());
    CHECK(Count(g, "MeanVarianceNormalization") == 0);
  }
  SECTION("at opset 17 too: the body's opset-13 Pow and Sub differ from opset 17's only in their types") {
    Graph g = test::GraphFromText(MvnModel("", 17));
    CHECK(ExpandFunctionOps(g, AllBut(kFunctionOps)).expanded.size() == 1);
    CHECK(Count(g, "MeanVarianceNormalization") == 0);
  }
}

TEST_CASE("a function op the backend lowers, or whose body it cannot run, stays as it is", "[expand_functions]") {
  SECTION("lowered: nothing changes, not even the model's bytes") {
    Graph g = test::GraphFromText(MvnModel(""));
    const std::string before = g.model().SerializeAsString();
    FunctionExpansion e = ExpandFunctionOps(g, AllBut({}));
    CHECK(e.expanded.empty());
    CHECK(e.kept.empty());
    CHECK(e.rounds == 0);
    CHECK(g.model().SerializeAsString() == before);
  }
  SECTION("a body op not lowered") {
    Graph g = test::GraphFromText(MvnModel(""));
    FunctionExpansion e = ExpandFunctionOps(g, AllBut({"MeanVarianceNormalization", "Sqrt"}));
    CHECK(e.expanded.empty());
    REQUIRE(e.kept.size() == 1);
    CHECK(e.kept[0].node == "MeanVarianceNormalization_1");
    CHECK(e.kept[0].reason == "its body calls Sqrt, which the backend does not lower");
    CHECK(Count(g, "MeanVarianceNormalization") == 1);
  }
}

TEST_CASE("CastLike's body is built for its input types", "[expand_functions]") {
  Graph g = test::GraphFromText(
      "<ir_version: 8, opset_import: [\"\" : 15]>\n"
      "g (float[3] x, double[1] like) => (double[3] y) {\n"
      "  y = CastLike(x, like)\n"
      "}\n");
  FunctionExpansion e = ExpandFunctionOps(g, AllBut(kFunctionOps));
  REQUIRE(e.expanded.size() == 1);
  REQUIRE(g.num_nodes() == 1);
  const Node& cast = g.node(0);
  CHECK(cast.op_type == "Cast");
  CHECK(AttrInt(cast, "to", 0) == onnx::TensorProto::DOUBLE);
  CHECK(g.value(cast.inputs[0]).name == "x");
  CHECK(g.value(cast.outputs[0]).name == "y");
}

namespace {

std::string SceModel(const std::string& reduction) {
  return "<ir_version: 8, opset_import: [\"\" : 13]>\n"
         "g (float[3,5] scores, int64[3] labels) => (float" + std::string(reduction == "none" ? "[3]" : "") +
         " loss) {\n"
         "  loss = SoftmaxCrossEntropyLoss<reduction = \"" + reduction + "\", ignore_index = 2>(scores, labels)\n"
         "}\n";
}

}  // namespace

TEST_CASE("SoftmaxCrossEntropyLoss expands, then the NegativeLogLikelihoodLoss its body calls", "[expand_functions]") {
  SECTION("reduction mean: the loss summed, then divided by the weights' sum") {
    Graph g = test::GraphFromText(SceModel("mean"));
    FunctionExpansion e = ExpandFunctionOps(g, AllBut(kFunctionOps));
    REQUIRE(e.expanded.size() == 2);
    CHECK(e.expanded[0].op_type == "SoftmaxCrossEntropyLoss");
    CHECK(e.expanded[1].op_type == "NegativeLogLikelihoodLoss");
    CHECK(e.expanded[1].node.rfind("SoftmaxCrossEntropyLoss_0/", 0) == 0);
    CHECK(e.rounds == 2);
    CHECK(Count(g, "SoftmaxCrossEntropyLoss") + Count(g, "NegativeLogLikelihoodLoss") == 0);
    CHECK(Count(g, "LogSoftmax") == 1);
    CHECK(Count(g, "GatherElements") == 1);
    CHECK(Count(g, "ReduceSum") == 2);
    CHECK(Count(g, "Div") == 1);
    // ignore_index passed through SCE's attribute reference into NLL's body: the mask's constant.
    bool ignore_two = false;
    for (const Node* c : NodesOf(g, "Constant")) {
      const onnx::TensorProto* t = g.ConstantTensor(c->outputs[0]);
      ignore_two |= g.value(c->outputs[0]).name.find("const_ignore_index") != std::string::npos && t &&
                    t->int64_data_size() == 1 && t->int64_data(0) == 2;
    }
    CHECK(ignore_two);
    CHECK(g.value(g.outputs()[0]).name == "loss");
  }
  SECTION("reduction none: no sum") {
    Graph g = test::GraphFromText(SceModel("none"));
    ExpandFunctionOps(g, AllBut(kFunctionOps));
    CHECK(Count(g, "NegativeLogLikelihoodLoss") == 0);
    CHECK(Count(g, "ReduceSum") == 0);
  }
  SECTION("an op of the nested body not lowered: the outer node is kept whole, with the reason") {
    Graph g = test::GraphFromText(SceModel("mean"));
    const std::string before = g.model().SerializeAsString();
    std::set<std::string> missing = kFunctionOps;
    missing.insert("GatherElements");
    FunctionExpansion e = ExpandFunctionOps(g, AllBut(missing));
    CHECK(e.expanded.empty());
    REQUIRE(e.kept.size() == 1);
    CHECK(e.kept[0].node == "SoftmaxCrossEntropyLoss_0");
    CHECK(e.kept[0].reason.find("its expansion leaves NegativeLogLikelihoodLoss") == 0);
    CHECK(e.kept[0].reason.find("its body calls GatherElements, which the backend does not lower") != std::string::npos);
    CHECK(g.model().SerializeAsString() == before);
  }
  SECTION("a round limit reached keeps the node whole too") {
    Graph g = test::GraphFromText(SceModel("mean"));
    FunctionExpansion e = ExpandFunctionOps(g, AllBut(kFunctionOps), 1);
    CHECK(e.expanded.empty());
    REQUIRE(e.kept.size() == 1);
    CHECK(e.kept[0].reason.find("function calls nested deeper than 1") != std::string::npos);
    CHECK(Count(g, "SoftmaxCrossEntropyLoss") == 1);
  }
}

TEST_CASE("Range's body: the Loop's subgraph reads the renamed values", "[expand_functions]") {
  Graph g = test::GraphFromText(
      "<ir_version: 8, opset_import: [\"\" : 11]>\n"
      "g (float start, float limit, float delta) => (float[?] y) {\n"
      "  y = Range(start, limit, delta)\n"
      "}\n");
  FunctionExpansion e = ExpandFunctionOps(g, AllBut(kFunctionOps));
  REQUIRE(e.expanded.size() == 1);
  auto loops = NodesOf(g, "Loop");
  REQUIRE(loops.size() == 1);
  const onnx::GraphProto& body = loops[0]->proto.attribute(0).g();
  std::set<std::string> read;  // what the Loop body's nodes read
  for (const auto& n : body.node()) read.insert(n.input().begin(), n.input().end());
  CHECK(read.count("delta"));  // the function's input 'delta', captured from the outer scope
  for (const auto& v : body.input()) CHECK(v.name().rfind("Range_0/", 0) == 0);
  CHECK(g.value(loops[0]->outputs.back()).name == "y");
}

TEST_CASE("a call of a model-local function (a fused model's ai.onnxfuse op) becomes its body", "[expand_functions]") {
  // y = ai.onnxfuse.AddRelu(x, z), the function in the model as the writer
  // writes it (importing the model's opset, as ONNX's checker requires).
  Graph plain = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x, float[2,3] z) => (float[2,3] y) {
      y = Relu(x)
    })");
  onnx::ModelProto model = plain.model();
  onnx::OperatorSetIdProto* fused = model.add_opset_import();
  fused->set_domain("ai.onnxfuse");
  fused->set_version(1);
  onnx::FunctionProto* f = model.add_functions();
  f->set_name("AddRelu");
  f->set_domain("ai.onnxfuse");
  f->add_input("A");
  f->add_input("B");
  f->add_output("Y");
  f->add_opset_import()->set_version(17);
  onnx::NodeProto* add = f->add_node();
  add->set_op_type("Add");
  add->add_input("A");
  add->add_input("B");
  add->add_output("s");
  onnx::NodeProto* relu = f->add_node();
  relu->set_op_type("Relu");
  relu->add_input("s");
  relu->add_output("Y");
  onnx::NodeProto* call = model.mutable_graph()->mutable_node(0);
  call->set_op_type("AddRelu");
  call->set_domain("ai.onnxfuse");
  call->set_name("fused_0");
  call->add_input("z");
  Graph g = LoadModelProto(model, "fused.onnx");

  SECTION("not lowered: inlined, its values renamed under the call's name") {
    FunctionExpansion e = ExpandFunctionOps(g, AllBut({}));
    REQUIRE(e.expanded.size() == 1);
    CHECK(e.expanded[0].node == "fused_0");
    CHECK(e.expanded[0].body_nodes == 2);
    REQUIRE(g.num_nodes() == 2);
    CHECK(g.node(0).op_type == "Add");
    CHECK(g.node(0).domain.empty());
    CHECK(g.node(0).name == "fused_0/Add_0");
    CHECK(g.value(g.node(0).outputs[0]).name == "fused_0/s");
    CHECK(g.node(1).op_type == "Relu");
    CHECK(g.value(g.node(1).outputs[0]).name == "y");
  }
  SECTION("a body op the backend does not lower: the call stays, with the reason") {
    FunctionExpansion e = ExpandFunctionOps(g, AllBut({"Add"}));
    CHECK(e.expanded.empty());
    REQUIRE(e.kept.size() == 1);
    CHECK(e.kept[0].op_type == "ai.onnxfuse.AddRelu");
    CHECK(e.kept[0].reason == "its body calls Add, which the backend does not lower");
    CHECK(g.num_nodes() == 1);
  }
}
