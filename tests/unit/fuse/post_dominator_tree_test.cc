#include <catch2/catch.hpp>

#include <string>

#include "fuse/post_dominator_tree.h"
#include "test_models.h"

using namespace onnxfuse;
using K = OpPatternKind;

namespace {

PostDominatorTree TreeOf(const Graph& graph) {
  std::vector<OpPatternKind> kinds;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) kinds.push_back(ClassifyNode(graph, id));
  return BuildPostDominatorTree(graph, kinds);
}

// A chain of `n` Relu nodes built directly (no parsing, no shape inference).
Graph ReluChain(int n) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  auto* g = model.mutable_graph();
  g->set_name("chain");
  auto* in = g->add_input();
  in->set_name("v0");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < n; ++i) {
    auto* node = g->add_node();
    node->set_op_type("Relu");
    node->add_input("v" + std::to_string(i));
    node->add_output("v" + std::to_string(i + 1));
  }
  auto* out = g->add_output();
  out->set_name("v" + std::to_string(n));
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return Graph(std::move(model), "chain.onnx");
}

}  // namespace

TEST_CASE("on a chain each node's parent is its consumer", "[post_dominator_tree]") {
  auto graph = test::GraphFromText(test::ChainText({"Relu", "Exp", "Sigmoid"}, "1,4"));
  auto tree = TreeOf(graph);
  REQUIRE(tree.nodes.size() == 3);
  // Sigmoid_2 produces the graph output: extern_ref, a root with pattern kOpaque.
  CHECK(tree.nodes[2].parent == kNoNode);
  CHECK(tree.nodes[2].depth == 1);
  CHECK(tree.nodes[2].pattern == K::kOpaque);
  CHECK(tree.nodes[1].parent == 2);
  CHECK(tree.nodes[1].depth == 2);
  CHECK(tree.nodes[1].pattern == K::kElemWise);
  CHECK(tree.nodes[0].parent == 1);
  CHECK(tree.nodes[0].depth == 3);
  CHECK(tree.nodes[0].pattern == K::kElemWise);
}

TEST_CASE("on TVM's diamond the conv's parent is the final add", "[post_dominator_tree]") {
  auto graph = test::GraphFromText(test::kTvmDiamond);
  auto tree = TreeOf(graph);
  const NodeId conv = test::NodeNamed(graph, "Conv_0"), add = test::NodeNamed(graph, "Add_1"),
               relu = test::NodeNamed(graph, "Relu_2"), mul = test::NodeNamed(graph, "Mul_3"),
               out = test::NodeNamed(graph, "Add_4");
  CHECK(tree.nodes[out].parent == kNoNode);
  CHECK(tree.nodes[relu].parent == out);
  CHECK(tree.nodes[mul].parent == out);
  CHECK(tree.nodes[add].parent == relu);
  CHECK(tree.nodes[add].depth == 3);
  CHECK(tree.nodes[conv].parent == out);
  CHECK(tree.nodes[conv].depth == 2);
  // Every edge on the way is between equal shapes: broadcast ops are elementwise there.
  CHECK(tree.nodes[conv].pattern == K::kElemWise);
  CHECK(tree.nodes[mul].pattern == K::kElemWise);
}

TEST_CASE("the tree edge pattern is the max over all paths to the post-dominator", "[post_dominator_tree]") {
  SECTION("an injective op on one branch") {
    auto graph = test::GraphFromText(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[1,3,16,16] x, float[3,3,3,3] w) => (float[1,3,14,14] y) {
        c = Conv (x, w)
        r = Relu (c)
        t = Transpose <perm: ints = [0,1,3,2]> (c)
        u = Transpose <perm: ints = [0,1,3,2]> (t)
        y = Add (r, u)
      })");
    auto tree = TreeOf(graph);
    const NodeId conv = test::NodeNamed(graph, "Conv_0"), out = test::NodeNamed(graph, "Add_4");
    CHECK(tree.nodes[conv].parent == out);
    CHECK(tree.nodes[conv].pattern == K::kInjective);
    CHECK(tree.nodes[test::NodeNamed(graph, "Transpose_2")].pattern == K::kInjective);
    CHECK(tree.nodes[test::NodeNamed(graph, "Relu_1")].pattern == K::kElemWise);
  }
  SECTION("a reduction and a broadcast edge") {
    auto graph = test::GraphFromText(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[1,3,8,8] x) => (float[1,3,8,8] y) {
        e = Exp (x)
        m = ReduceMean <axes: ints = [1], keepdims: int = 1> (e)
        y = Div (e, m)
      })");
    auto tree = TreeOf(graph);
    const NodeId exp = 0, mean = 1, div = 2;
    CHECK(tree.nodes[mean].parent == div);
    CHECK(tree.nodes[mean].pattern == K::kBroadcast);  // [1,1,8,8] into a [1,3,8,8] output
    CHECK(tree.nodes[exp].parent == div);
    CHECK(tree.nodes[exp].depth == 2);
    CHECK(tree.nodes[exp].pattern == K::kCommReduce);
  }
}

TEST_CASE("a ResNet block with downsample joins at the residual add", "[post_dominator_tree]") {
  auto graph = test::GraphFromText(test::kDownsampleBlock);
  auto tree = TreeOf(graph);
  const std::vector<std::pair<std::string, std::string>> parent_of = {
      {"Conv_0", "BatchNormalization_1"}, {"BatchNormalization_1", "Relu_2"}, {"Relu_2", "Conv_3"},
      {"Conv_3", "BatchNormalization_4"}, {"BatchNormalization_4", "Add_7"}, {"Conv_5", "BatchNormalization_6"},
      {"BatchNormalization_6", "Add_7"},  {"Add_7", "Relu_8"}};
  for (const auto& [child, parent] : parent_of) {
    INFO(child);
    CHECK(tree.nodes[test::NodeNamed(graph, child)].parent == test::NodeNamed(graph, parent));
  }
  CHECK(tree.nodes[test::NodeNamed(graph, "Relu_8")].parent == kNoNode);
  CHECK(tree.nodes[test::NodeNamed(graph, "Relu_2")].pattern == K::kOutEWiseFusable);
  CHECK(tree.nodes[test::NodeNamed(graph, "BatchNormalization_6")].pattern == K::kElemWise);
  CHECK(tree.nodes[test::NodeNamed(graph, "Conv_0")].depth == 7);
  CHECK(tree.nodes[test::NodeNamed(graph, "Conv_5")].depth == 4);
}

TEST_CASE("graph outputs and branches that never meet give no parent", "[post_dominator_tree]") {
  SECTION("a graph output in the middle of a chain") {
    auto graph = test::GraphFromText(test::ChainText({"Relu", "Exp", "Sigmoid"}, "4", 13, 8, {1}));
    auto tree = TreeOf(graph);
    CHECK(IsExternRef(graph, 1));
    CHECK_FALSE(IsExternRef(graph, 0));
    CHECK(tree.nodes[1].parent == kNoNode);  // extern_ref even though Sigmoid_2 consumes it
    CHECK(tree.nodes[1].pattern == K::kOpaque);
    CHECK(tree.nodes[0].parent == 1);
  }
  SECTION("two branches to two graph outputs") {
    auto graph = test::GraphFromText(test::kTwoBranchesToOutputs);
    auto tree = TreeOf(graph);
    CHECK(tree.nodes[0].parent == kNoNode);
    CHECK(tree.nodes[0].depth == 1);
  }
  SECTION("a branch into the post-dominator of a sibling") {
    // a -> {b -> c, c}: the LCA of b and c is c.
    auto graph = test::GraphFromText(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[4] y) {
        a = Relu (x)
        b = Exp (a)
        c = Add (a, b)
        y = Neg (c)
      })");
    auto tree = TreeOf(graph);
    CHECK(tree.nodes[0].parent == 2);
    CHECK(tree.nodes[0].depth == 3);
    CHECK(tree.nodes[1].parent == 2);
  }
}

TEST_CASE("a 200k-node chain builds without recursion", "[post_dominator_tree]") {
  const int n = 200000;
  Graph graph = ReluChain(n);
  auto tree = TreeOf(graph);
  REQUIRE(tree.nodes.size() == static_cast<std::size_t>(n));
  CHECK(tree.nodes[0].depth == n);
  CHECK(tree.nodes[0].parent == 1);
  CHECK(tree.nodes[n - 1].parent == kNoNode);
  CHECK(tree.nodes[n / 2].parent == static_cast<NodeId>(n / 2 + 1));
}

TEST_CASE("kinds of the wrong size are an internal error", "[post_dominator_tree]") {
  Graph graph = ReluChain(3);
  CHECK_THROWS(BuildPostDominatorTree(graph, {OpPatternKind::kElemWise}));
}
