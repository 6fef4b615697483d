#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "onnxfuse/error.h"
#include "fuse/greedy_fuser.h"
#include "load/loader.h"
#include "test_models.h"

using namespace onnxfuse;
using Groups = std::vector<std::vector<std::string>>;
using Strings = std::vector<std::string>;

namespace {

// Member names of every group, in plan order.
Groups GroupNames(const Graph& graph, const FusionPlan& plan) {
  Groups groups;
  for (const auto& group : plan.groups) {
    groups.emplace_back();
    for (NodeId id : group.nodes) groups.back().push_back(graph.node(id).name);
  }
  return groups;
}

// "node -> target: reason" per rejection ("node -> -: reason" without target).
Strings RejectionNames(const Graph& graph, const FusionPlan& plan) {
  Strings out;
  for (const auto& r : plan.rejections)
    out.push_back(graph.node(r.node).name + " -> " + (r.target == kNoNode ? "-" : graph.node(r.target).name) +
                  ": " + r.reason);
  return out;
}

FusionPlan Fuse(const Graph& graph, FuserOptions options = {}) { return FuseGreedy(graph, options); }

// x -> Relu -> Neg -> Relu -> Neg ... (n nodes).
Graph ElementwiseChain(int n) {
  std::vector<std::string> ops;
  for (int i = 0; i < n; ++i) ops.push_back(i % 2 ? "Neg" : "Relu");
  return test::ChainGraph("v0", ops);
}


}  // namespace

TEST_CASE("a residual basic block gives the seed's groups", "[greedy]") {
  auto graph = test::GraphFromText(test::kBasicBlock);
  auto plan = Fuse(graph);

  CHECK(plan.strategy == "greedy");
  CHECK(GroupNames(graph, plan) ==
        Groups{{"Relu_0"},
               {"Conv_1", "BatchNormalization_2", "Relu_3", "Conv_4", "BatchNormalization_5"},
               {"Add_6", "Relu_7"}});
  CHECK(RejectionNames(graph, plan) == Strings{"Relu_0 -> -: fork", "BatchNormalization_5 -> Add_6: join"});
  CHECK(plan.rejections[0].detail == "the outputs of 'Relu_0' (Relu) are read by 2 nodes: 'Conv_1' (Conv), 'Add_6' (Add)");
  CHECK(plan.rejections[1].detail == "'Add_6' (Add) reads 2 non-constant values: 'n2', 'r0'");

  const auto& main_path = plan.groups[1];
  CHECK(main_path.rule == "greedy.chain");
  CHECK(main_path.anchor == test::NodeNamed(graph, "Conv_1"));
  CHECK(main_path.pattern == OpPatternKind::kOutEWiseFusable);
  CHECK(plan.groups[0].rule.empty());  // a single node has no rule
  CHECK(plan.groups[2].rule == "greedy.chain");
  CHECK(plan.groups[2].pattern == OpPatternKind::kBroadcast);
  CHECK(plan.group_of[test::NodeNamed(graph, "Relu_7")] == 2);
}

TEST_CASE("a downsampling block keeps its shortcut Conv+BN apart", "[greedy]") {
  // Stride-2 1x1 convs halve the element count (1x2x8x8 -> 1x4x4x4): below the 4x ratio.
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,8,8] x, float[4,2,1,1] w1 = {1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.5, 0.5},
       float[4,4,1,1] w2 = {1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0},
       float[4,2,1,1] wd = {0.5, 0.5, 0.5, -0.5, 1.0, 0.0, 0.0, 1.0},
       float[4] s = {1.0, 1.0, 1.0, 1.0}, float[4] b = {0.0, 0.0, 0.0, 0.0},
       float[4] m = {0.0, 0.0, 0.0, 0.0}, float[4] v = {1.0, 1.0, 1.0, 1.0})
      => (float[1,4,4,4] y) {
      r0 = Relu (x)
      c1 = Conv <strides: ints = [2, 2]> (r0, w1)
      n1 = BatchNormalization (c1, s, b, m, v)
      r1 = Relu (n1)
      c2 = Conv (r1, w2)
      n2 = BatchNormalization (c2, s, b, m, v)
      cd = Conv <strides: ints = [2, 2]> (r0, wd)
      nd = BatchNormalization (cd, s, b, m, v)
      a = Add (n2, nd)
      y = Relu (a)
    })");
  auto plan = Fuse(graph);
  CHECK(GroupNames(graph, plan) ==
        Groups{{"Relu_0"},
               {"Conv_1", "BatchNormalization_2", "Relu_3", "Conv_4", "BatchNormalization_5"},
               {"Conv_6", "BatchNormalization_7"},
               {"Add_8", "Relu_9"}});
  CHECK(RejectionNames(graph, plan) ==
        Strings{"Relu_0 -> -: fork", "BatchNormalization_5 -> Add_8: join", "BatchNormalization_7 -> Add_8: join"});
}

TEST_CASE("a graph output inside a chain ends it, a final graph output does not reject", "[greedy]") {
  auto graph = test::GraphFromText(test::ChainText({"Relu", "Sigmoid", "Tanh"}, "1,4", 13, 8, {0}));
  auto plan = Fuse(graph);
  CHECK(GroupNames(graph, plan) == Groups{{"Relu_0"}, {"Sigmoid_1", "Tanh_2"}});
  CHECK(RejectionNames(graph, plan) == Strings{"Relu_0 -> Sigmoid_1: graph_output"});
  CHECK(plan.rejections[0].detail ==
        "'Relu_0' (Relu) writes graph output 'a', which must stay visible, so the chain ends there");
}

TEST_CASE("a fork counts consumers over all outputs and names a few of them", "[greedy]") {
  SECTION("the two outputs of a Split go to different nodes") {
    auto graph = test::GraphFromText(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[1,4] x) => (float[1,2] u, float[1,2] w) {
        r = Relu (x)
        p, q = Split <axis: int = 1> (r)
        u = Relu (p)
        w = Neg (q)
      })");
    auto plan = Fuse(graph);
    CHECK(GroupNames(graph, plan) == Groups{{"Relu_0", "Split_1"}, {"Relu_2"}, {"Neg_3"}});
    CHECK(RejectionNames(graph, plan) == Strings{"Split_1 -> -: fork"});
  }
  SECTION("one output read twice by the same node is not a fork") {
    auto graph = test::GraphFromText(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[1,4] x) => (float[1,4] y) {
        r = Relu (x)
        y = Mul (r, r)
      })");
    auto plan = Fuse(graph);
    CHECK(GroupNames(graph, plan) == Groups{{"Relu_0", "Mul_1"}});
    CHECK(plan.rejections.empty());
  }
  SECTION("six consumers: four are named") {
    auto graph = test::GraphFromText(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[1,4] x) => (float[1,4] a, float[1,4] b, float[1,4] c, float[1,4] d, float[1,4] e, float[1,4] f) {
        r = Relu (x)
        a = Neg (r)
        b = Neg (r)
        c = Neg (r)
        d = Neg (r)
        e = Neg (r)
        f = Neg (r)
      })");
    auto plan = Fuse(graph);
    CHECK(plan.groups.size() == 7);
    REQUIRE(RejectionNames(graph, plan) == Strings{"Relu_0 -> -: fork"});
    CHECK(plan.rejections[0].detail ==
          "the outputs of 'Relu_0' (Relu) are read by 6 nodes: 'Neg_1' (Neg), 'Neg_2' (Neg), 'Neg_3' (Neg), "
          "'Neg_4' (Neg) and 2 more");
  }
}

TEST_CASE("constant inputs do not make a join, two activations do", "[greedy]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x, float[1,2,4,4] z, float[2,2,1,1] w = {1.0, 0.5, -0.5, 1.0}, float[2] bias = {0.5, -0.5},
       float[1,2,1,1] c = {2.0, 3.0}) => (float[1,2,4,4] y) {
      k = Constant <value = float[1] {1.0}> ()
      r = Relu (x)
      cv = Conv (r, w, bias)
      m = Mul (cv, c)
      sq = Mul (m, m)
      a = Add (sq, k)
      y = Add (a, z)
    })");
  auto plan = Fuse(graph);
  // Conv(r, W, B), Mul by an initializer, Mul(m, m) and Add of a Constant-node output all continue.
  CHECK(GroupNames(graph, plan) ==
        Groups{{"Constant_0"}, {"Relu_1", "Conv_2", "Mul_3", "Mul_4", "Add_5"}, {"Add_6"}});
  // A Constant node is a value, not computation: it stays alone without an "opaque" rejection.
  CHECK(RejectionNames(graph, plan) == Strings{"Add_5 -> Add_6: join"});
  CHECK(plan.rejections[0].detail == "'Add_6' (Add) reads 2 non-constant values: 'a', 'z'");
}

TEST_CASE("opaque nodes stay alone and are named once", "[greedy]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13, "com.example" : 1]>
    g (float[1,8] x, int64[1] k = {3}) => (float[1,3] y, int64[1,3] i, float[1,8] z) {
      t, i0 = TopK (x, k)
      r = Relu (t)
      t2, i = TopK (r, k)
      y = Relu (t2)
      z = com.example.Custom (x)
    })");
  auto plan = Fuse(graph);
  CHECK(GroupNames(graph, plan) == Groups{{"TopK_0"}, {"Relu_1"}, {"TopK_2"}, {"Relu_3"}, {"Custom_4"}});
  // TopK_0 and Custom_4 follow no chain, so they are named by themselves; TopK_2 is
  // named as the target of the chain that stopped before it, and only there.
  CHECK(RejectionNames(graph, plan) ==
        Strings{"TopK_0 -> -: opaque", "Relu_1 -> TopK_2: opaque", "Custom_4 -> -: opaque"});
  CHECK(plan.rejections[1].detail == "'TopK_2' (TopK) is opaque: it is never fused");
}

TEST_CASE("training-mode BatchNormalization is opaque and ends the chain", "[greedy]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,2,4,4] x, float[2] s = {1.0, 1.0}, float[2] b = {0.0, 0.0}, float[2] m = {0.0, 0.0},
       float[2] v = {1.0, 1.0}) => (float[1,2,4,4] y) {
      r = Relu (x)
      n, rm, rv = BatchNormalization <training_mode: int = 1> (r, s, b, m, v)
      y = Relu (n)
    })");
  auto plan = Fuse(graph);
  CHECK(GroupNames(graph, plan) == Groups{{"Relu_0"}, {"BatchNormalization_1"}, {"Relu_2"}});
  CHECK(RejectionNames(graph, plan) == Strings{"Relu_0 -> BatchNormalization_1: opaque"});
}

TEST_CASE("a significant change in element count ends the chain", "[greedy]") {
  const char* model = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,8,8] x, int64[4] reps = {1, 1, 2, 2}) => (float[1,4,2,2] y) {
      r = Relu (x)
      p = MaxPool <kernel_shape: ints = [2, 2], strides: ints = [2, 2]> (r)
      s = Sigmoid (p)
      h = MaxPool <kernel_shape: ints = [1, 2], strides: ints = [1, 2]> (s)
      gp = GlobalAveragePool (h)
      e = Relu (gp)
      y = Tile (e, reps)
    })";
  auto graph = test::GraphFromText(model);

  SECTION("4x fewer (MaxPool 2x2), 8x fewer (GlobalAveragePool) and 4x more (Tile) end it; 2x does not") {
    auto plan = Fuse(graph);
    CHECK(GroupNames(graph, plan) == Groups{{"Relu_0"},
                                            {"MaxPool_1", "Sigmoid_2", "MaxPool_3"},
                                            {"GlobalAveragePool_4", "Relu_5"},
                                            {"Tile_6"}});
    CHECK(RejectionNames(graph, plan) == Strings{"Relu_0 -> MaxPool_1: shape_change",
                                                 "MaxPool_3 -> GlobalAveragePool_4: shape_change",
                                                 "Relu_5 -> Tile_6: shape_change"});
    CHECK(plan.rejections[0].detail ==
          "'MaxPool_1' (MaxPool) turns [1,4,8,8] (256 elements) into [1,4,4,4] (64 elements), a 4x change "
          "(limit 4x)");
  }
  SECTION("greedy_shape_ratio 2 also ends it at the 2x MaxPool") {
    FuserOptions options;
    options.greedy_shape_ratio = 2.0;
    auto plan = Fuse(graph, options);
    CHECK(GroupNames(graph, plan) == Groups{{"Relu_0"},
                                            {"MaxPool_1", "Sigmoid_2"},
                                            {"MaxPool_3"},
                                            {"GlobalAveragePool_4", "Relu_5"},
                                            {"Tile_6"}});
    CHECK(plan.rejections[1].reason == "shape_change");
    CHECK(graph.node(plan.rejections[1].node).name == "Sigmoid_2");
  }
}

TEST_CASE("an unknown element count is no shape change", "[greedy]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,4,8,8] x) => (float[N,4,4,4] y) {
      r = Relu (x)
      y = MaxPool <kernel_shape: ints = [2, 2], strides: ints = [2, 2]> (r)
    })");
  auto plan = Fuse(graph);
  CHECK(GroupNames(graph, plan) == Groups{{"Relu_0", "MaxPool_1"}});
  CHECK(plan.rejections.empty());
}

TEST_CASE("a chain longer than max_group_size splits", "[greedy]") {
  auto graph = ElementwiseChain(7);
  FuserOptions options;
  options.max_group_size = 3;
  auto plan = Fuse(graph, options);
  CHECK(GroupNames(graph, plan) ==
        Groups{{"Relu_0", "Neg_1", "Relu_2"}, {"Neg_3", "Relu_4", "Neg_5"}, {"Relu_6"}});
  CHECK(RejectionNames(graph, plan) ==
        Strings{"Relu_2 -> Neg_3: group_size_limit", "Neg_5 -> Relu_6: group_size_limit"});
  CHECK(plan.rejections[1].detail == "the chain from 'Neg_3' (Neg) already has 3 nodes (max_group_size 3)");

  options.max_group_size = 1;
  CHECK(Fuse(graph, options).groups.size() == 7);

  options.max_group_size = 0;
  CHECK(test::ErrorOf([&] { Fuse(graph, options); }).kind == ErrorKind::kUsage);
}

TEST_CASE("a 200k-node elementwise chain is fused iteratively", "[greedy]") {
  constexpr int kNodes = 200000;
  auto graph = ElementwiseChain(kNodes);
  REQUIRE(graph.num_nodes() == kNodes);

  auto plan = Fuse(graph);  // default max_group_size 256
  const int full = kNodes / 256;
  REQUIRE(plan.groups.size() == static_cast<std::size_t>(full + 1));
  CHECK(plan.groups.front().nodes.size() == 256);
  CHECK(plan.groups[static_cast<std::size_t>(full) - 1].nodes.size() == 256);
  CHECK(plan.groups.back().nodes.size() == static_cast<std::size_t>(kNodes % 256));
  CHECK(plan.groups[1].nodes.front() == 256);
  CHECK(plan.rejections.size() == static_cast<std::size_t>(full));
  CHECK(plan.rejections.back().reason == "group_size_limit");

  FuserOptions unlimited;
  unlimited.max_group_size = kNodes;
  auto one = Fuse(graph, unlimited);
  REQUIRE(one.groups.size() == 1);
  CHECK(one.groups[0].nodes.size() == static_cast<std::size_t>(kNodes));
  CHECK(one.rejections.empty());
}
