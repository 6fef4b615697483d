#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "fuse/postdom_fuser.h"
#include "test_models.h"

using namespace onnxfuse;
using K = OpPatternKind;

namespace {

using Names = std::set<std::string>;

// Groups with more than one node, as sets of node names.
std::set<Names> FusedGroups(const Graph& graph, const FusionPlan& plan) {
  std::set<Names> groups;
  for (const auto& group : plan.groups) {
    if (group.nodes.size() < 2) continue;
    Names names;
    for (NodeId id : group.nodes) names.insert(graph.node(id).name);
    groups.insert(names);
  }
  return groups;
}

// node name -> reason code; also checks that no node is rejected twice.
std::map<std::string, std::string> Reasons(const Graph& graph, const FusionPlan& plan) {
  std::map<std::string, std::string> reasons;
  for (const auto& r : plan.rejections) {
    INFO(graph.node(r.node).name);
    CHECK(reasons.emplace(graph.node(r.node).name, r.reason).second);
  }
  return reasons;
}

const Rejection& RejectionOf(const Graph& graph, const FusionPlan& plan, const std::string& name) {
  NodeId id = test::NodeNamed(graph, name);
  for (const auto& r : plan.rejections)
    if (r.node == id) return r;
  FAIL("no rejection for " << name);
  throw std::logic_error("unreachable");
}

const FusedGroup& GroupOf(const Graph& graph, const FusionPlan& plan, const std::string& name) {
  return plan.groups[static_cast<std::size_t>(plan.group_of[test::NodeNamed(graph, name)])];
}

// At most one kOutEWiseFusable member per group.
void CheckOneAnchorPerGroup(const Graph& graph, const FusionPlan& plan) {
  for (const auto& group : plan.groups) {
    int anchors = 0;
    for (NodeId id : group.nodes) anchors += ClassifyNode(graph, id) == K::kOutEWiseFusable;
    CHECK(anchors <= 1);
  }
}

FusionPlan Fuse(const Graph& graph, FuserOptions options = {}) {
  FusionPlan plan = FuseByPostDominator(graph, options);
  CHECK(plan.strategy == "postdom");
  CheckOneAnchorPerGroup(graph, plan);
  return plan;
}

onnx::ValueInfoProto* AddFloat(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name) {
  auto* v = list->Add();
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return v;
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in, const std::string& out) {
  auto* node = g->add_node();
  node->set_op_type(op);
  for (const auto& name : in) node->add_input(name);
  node->add_output(out);
  return node;
}

Graph Build(onnx::ModelProto model) {
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  return Graph(std::move(model), "generated.onnx");
}

}  // namespace

TEST_CASE("TVM's diamond fuses into one group", "[postdom]") {
  auto graph = test::GraphFromText(test::kTvmDiamond);
  auto plan = Fuse(graph);
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups[0].nodes.size() == 5);
  CHECK(plan.groups[0].rule == "postdom.phase0");
  CHECK(plan.groups[0].anchor == test::NodeNamed(graph, "Conv_0"));
  CHECK(plan.groups[0].pattern == K::kOutEWiseFusable);
  CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Add_4", "graph_output"}});
  CHECK(RejectionOf(graph, plan, "Add_4").detail == "Add_4 produces the graph output 'y', which ends its group");
}

TEST_CASE("a ResNet basic block with downsample", "[postdom]") {
  auto graph = test::GraphFromText(test::kDownsampleBlock);
  auto plan = Fuse(graph);
  CHECK(FusedGroups(graph, plan) == std::set<Names>{{"Conv_0", "BatchNormalization_1", "Relu_2"},
                                                    {"Conv_3", "BatchNormalization_4", "Add_7", "Relu_8"},
                                                    {"Conv_5", "BatchNormalization_6"}});
  CHECK(plan.groups.size() == 3);
  CHECK(GroupOf(graph, plan, "Add_7").anchor == test::NodeNamed(graph, "Conv_3"));
  CHECK(GroupOf(graph, plan, "Add_7").rule == "postdom.phase0");
  CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Relu_2", "dominator_edge_not_elemwise"},
                                                                   {"BatchNormalization_6", "two_out_ewise_fusable"},
                                                                   {"Relu_8", "graph_output"}});
  const auto& relu = RejectionOf(graph, plan, "Relu_2");
  CHECK(relu.target == test::NodeNamed(graph, "Conv_3"));
  CHECK(relu.detail == "the path from Relu_2 to its post-dominator Conv_3 passes kOutEWiseFusable");
  const auto& bn = RejectionOf(graph, plan, "BatchNormalization_6");
  CHECK(bn.target == test::NodeNamed(graph, "Add_7"));
  CHECK(bn.detail == "the group of BatchNormalization_6 has the kOutEWiseFusable op Conv_5, and its post-dominator "
                     "Add_7 is in a group that already has Conv_3");
}

TEST_CASE("two convs into one residual add: only the first joins", "[postdom]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,8,8] x, float[4,4,1,1] w, float[4,4,1,1] u) => (float[1,4,8,8] y) {
      a = Conv (x, w)
      b = Conv (x, u)
      s = Add (a, b)
      y = Relu (s)
    })");
  auto plan = Fuse(graph);
  CHECK(FusedGroups(graph, plan) == std::set<Names>{{"Conv_0", "Add_2", "Relu_3"}});
  CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Conv_1", "two_out_ewise_fusable"},
                                                                   {"Relu_3", "graph_output"}});
  CHECK(RejectionOf(graph, plan, "Conv_1").target == test::NodeNamed(graph, "Add_2"));
}

TEST_CASE("a conv followed by a non-elementwise edge does not fuse", "[postdom]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,8,8] x, float[4,4,1,1] w) => (float[1,4,8,8] y) {
      c = Conv (x, w)
      t = Transpose <perm: ints = [0,1,3,2]> (c)
      y = Relu (t)
    })");
  auto plan = Fuse(graph);
  // The transpose fuses forward in phase 1; the conv stays alone.
  CHECK(FusedGroups(graph, plan) == std::set<Names>{{"Transpose_1", "Relu_2"}});
  CHECK(GroupOf(graph, plan, "Relu_2").rule == "postdom.phase1");
  CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Conv_0", "dominator_edge_not_elemwise"},
                                                                   {"Relu_2", "graph_output"}});
  const auto& conv = RejectionOf(graph, plan, "Conv_0");
  CHECK(conv.target == test::NodeNamed(graph, "Transpose_1"));
  CHECK(conv.detail == "the path from Conv_0 to its post-dominator Transpose_1 passes kInjective");
}

TEST_CASE("injective ops fuse in phase 1", "[postdom]") {
  SECTION("a chain of injective ops") {
    auto graph = test::GraphFromText(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3,4] x) => (float[4,6] y) {
        t = Transpose <perm: ints = [2,0,1]> (x)
        f = Flatten (t)
        y = Relu (f)
      })");
    auto plan = Fuse(graph);
    REQUIRE(plan.groups.size() == 1);
    CHECK(plan.groups[0].rule == "postdom.phase1");
    CHECK(plan.groups[0].pattern == K::kInjective);
    CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Relu_2", "graph_output"}});
  }
  SECTION("an elementwise op joins an injective sink already in phase 0") {
    auto graph = test::GraphFromText(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3] x) => (float[3,2] y) {
        r = Relu (x)
        t = Transpose (r)
        y = Exp (t)
      })");
    auto plan = Fuse(graph);
    REQUIRE(plan.groups.size() == 1);
    CHECK(plan.groups[0].nodes.size() == 3);
    CHECK(plan.groups[0].rule == "postdom.phase0");
  }
}

TEST_CASE("phase 2 fuses injective ops into a tuple absorbed by its consumer", "[postdom]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[4,3] y) {
      t = Transpose <perm: ints = [0,1]> (x)
      f = Flatten (x)
      s = SequenceConstruct (t, f)
      c = ConcatFromSequence <axis: int = 0> (s)
      y = Relu (c)
    })");
  auto plan = Fuse(graph);
  // In phase 1 Transpose_0 and Flatten_1 meet a tuple post-dominator; the tuple
  // joins ConcatFromSequence's group; phase 2 then brings both fields in.
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups[0].nodes.size() == 5);
  CHECK(plan.groups[0].rule == "postdom.phase1");
  CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Relu_4", "graph_output"}});
}

TEST_CASE("elementwise ops fuse into a reduction, which ends the group", "[postdom]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,8] x) => (float[2,1] y) {
      e = Exp (x)
      m = ReduceMean <axes: ints = [1]> (e)
      y = Relu (m)
    })");
  auto plan = Fuse(graph);
  CHECK(FusedGroups(graph, plan) == std::set<Names>{{"Exp_0", "ReduceMean_1"}});
  CHECK(GroupOf(graph, plan, "Exp_0").pattern == K::kCommReduce);
  CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"ReduceMean_1", "reduction_is_sink"},
                                                                   {"Relu_2", "graph_output"}});
  CHECK(RejectionOf(graph, plan, "ReduceMean_1").target == test::NodeNamed(graph, "Relu_2"));
}

TEST_CASE("a reduction on a parallel branch blocks the path", "[postdom]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,8] x) => (float[2,8] y) {
      e = Exp (x)
      s = ReduceSum <keepdims: int = 1> (e)
      y = Div (e, s)
    })");
  auto plan = Fuse(graph);
  CHECK(FusedGroups(graph, plan).empty());
  CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Exp_0", "path_not_fusable"},
                                                                   {"ReduceSum_1", "reduction_is_sink"},
                                                                   {"Div_2", "graph_output"}});
  CHECK(RejectionOf(graph, plan, "Exp_0").detail ==
        "the path from Exp_0 to its post-dominator Div_2 passes ReduceSum_1, whose group is kCommReduce");
  CHECK(RejectionOf(graph, plan, "Exp_0").target == test::NodeNamed(graph, "Div_2"));
}

TEST_CASE("a graph output in the middle of a chain stops fusion", "[postdom]") {
  auto graph = test::GraphFromText(test::ChainText({"Relu", "Exp", "Sigmoid", "Tanh"}, "4", 13, 8, {1}));
  auto plan = Fuse(graph);
  CHECK(FusedGroups(graph, plan) == std::set<Names>{{"Relu_0", "Exp_1"}, {"Sigmoid_2", "Tanh_3"}});
  CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Exp_1", "graph_output"},
                                                                   {"Tanh_3", "graph_output"}});
  CHECK(RejectionOf(graph, plan, "Exp_1").target == kNoNode);
}

TEST_CASE("opaque ops and their producers are rejected", "[postdom]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8] x, int64[1] k) => (float[1,3] y) {
      r = Relu (x)
      v, i = TopK (r, k)
      y = Exp (v)
    })");
  auto plan = Fuse(graph);
  CHECK(FusedGroups(graph, plan).empty());
  CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Relu_0", "dominator_edge_not_fusable"},
                                                                   {"TopK_1", "opaque"},
                                                                   {"Exp_2", "graph_output"}});
  CHECK(RejectionOf(graph, plan, "TopK_1").detail == "'TopK_1' (TopK) is opaque");
  CHECK(RejectionOf(graph, plan, "TopK_1").target == test::NodeNamed(graph, "Exp_2"));
  CHECK(RejectionOf(graph, plan, "Relu_0").detail == "the path from Relu_0 to its post-dominator TopK_1 passes kOpaque");
}

TEST_CASE("branches that never meet again have no post-dominator", "[postdom]") {
  auto graph = test::GraphFromText(test::kTwoBranchesToOutputs);
  auto plan = Fuse(graph);
  CHECK(plan.groups.size() == 3);
  CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Relu_0", "no_post_dominator"},
                                                                   {"Exp_1", "graph_output"},
                                                                   {"Sigmoid_2", "graph_output"}});
  CHECK(RejectionOf(graph, plan, "Relu_0").detail == "the outputs of Relu_0 go to branches that never meet again");
}

TEST_CASE("the group size limit splits a chain", "[postdom]") {
  auto graph = test::GraphFromText(test::ChainText({"Relu", "Exp", "Sigmoid", "Tanh", "Abs", "Neg"}));
  FuserOptions options;
  options.max_group_size = 3;
  auto plan = Fuse(graph, options);
  for (const auto& group : plan.groups) CHECK(group.nodes.size() <= 3);
  CHECK(FusedGroups(graph, plan) ==
        std::set<Names>{{"Relu_0", "Exp_1", "Sigmoid_2"}, {"Tanh_3", "Abs_4", "Neg_5"}});
  CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Sigmoid_2", "group_size_limit"},
                                                                   {"Neg_5", "graph_output"}});
  const auto& r = RejectionOf(graph, plan, "Sigmoid_2");
  CHECK(r.target == test::NodeNamed(graph, "Tanh_3"));
  // The detail is the last attempt's (phase 2), when Tanh_3's group already has 3 nodes.
  CHECK(r.detail == "fusing Sigmoid_2 into the group of its post-dominator Tanh_3 would make a group of 6 nodes (limit 3)");
}

TEST_CASE("the argument limit", "[postdom]") {
  SECTION("a fusion over the limit is rejected after its retry") {
    auto graph = test::GraphFromText(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x, float[4] a, float[4] b, float[4] c, float[4] d) => (float[4] y) {
        t1 = Add (x, a)
        t2 = Add (t1, b)
        t3 = Add (t2, c)
        y = Add (t3, d)
      })");
    CHECK(FusedGroups(graph, Fuse(graph)) == std::set<Names>{{"Add_0", "Add_1", "Add_2", "Add_3"}});
    FuserOptions options;
    options.max_group_args = 3;
    auto plan = Fuse(graph, options);
    CHECK(FusedGroups(graph, plan) == std::set<Names>{{"Add_0", "Add_1"}, {"Add_2", "Add_3"}});
    CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Add_1", "argument_limit"},
                                                                     {"Add_3", "graph_output"}});
    CHECK(RejectionOf(graph, plan, "Add_1").detail ==
          "fusing Add_1 into the group of its post-dominator Add_2 would give the group more than 3 distinct inputs");
  }
  SECTION("a postponed fusion succeeds once a later one has absorbed an input") {
    // Fusing Add_0 into Add_2 first would read x, a and Relu_1's output (3 > 2);
    // after Relu_1 joins Add_2, the group reads only x and a.
    auto graph = test::GraphFromText(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x, float[4] a) => (float[4] y) {
        p = Add (x, a)
        q = Relu (x)
        y = Add (p, q)
      })");
    FuserOptions options;
    options.max_group_args = 2;
    auto plan = Fuse(graph, options);
    CHECK(FusedGroups(graph, plan) == std::set<Names>{{"Add_0", "Relu_1", "Add_2"}});
    CHECK(Reasons(graph, plan) == std::map<std::string, std::string>{{"Add_2", "graph_output"}});
  }
}

TEST_CASE("a 100k-node elementwise chain fuses in groups of at most 256", "[postdom]") {
  const int n = 100000;
  onnx::ModelProto model;
  auto* g = model.mutable_graph();
  AddFloat(g->mutable_input(), "v0");
  for (int i = 0; i < n; ++i) AddNode(g, "Relu", {"v" + std::to_string(i)}, "v" + std::to_string(i + 1));
  AddFloat(g->mutable_output(), "v" + std::to_string(n));
  Graph graph = Build(std::move(model));

  auto plan = FuseByPostDominator(graph, {});
  CHECK(plan.groups.size() == 391);  // 390 full groups of 256, then 160
  CHECK(plan.groups.front().nodes.size() == 256);
  CHECK(plan.groups.back().nodes.size() == 160);
  CHECK(plan.rejections.size() == 391);
  CHECK(plan.rejections.front().reason == "group_size_limit");
  CHECK(plan.rejections.front().node == 255);
  CHECK(plan.rejections.back().reason == "graph_output");

  FuserOptions unlimited;
  unlimited.max_group_size = n;
  CHECK(FuseByPostDominator(graph, unlimited).groups.size() == 1);
}

TEST_CASE("a wide diamond fuses without deep recursion", "[postdom]") {
  // x -> Relu -> k branches (Exp -> Sigmoid) -> Sum
  const int k = 20000;
  onnx::ModelProto model;
  auto* g = model.mutable_graph();
  AddFloat(g->mutable_input(), "x");
  AddNode(g, "Relu", {"x"}, "r");
  std::vector<std::string> ends;
  for (int i = 0; i < k; ++i) {
    AddNode(g, "Exp", {"r"}, "e" + std::to_string(i));
    AddNode(g, "Sigmoid", {"e" + std::to_string(i)}, "s" + std::to_string(i));
    ends.push_back("s" + std::to_string(i));
  }
  AddNode(g, "Sum", ends, "y");
  AddFloat(g->mutable_output(), "y");
  Graph graph = Build(std::move(model));

  FuserOptions unlimited;
  unlimited.max_group_size = 1 << 30;
  auto one = FuseByPostDominator(graph, unlimited);
  REQUIRE(one.groups.size() == 1);
  CHECK(one.groups[0].nodes.size() == static_cast<std::size_t>(2 * k + 2));

  // Default limit: the Relu cannot take all branches; Sum's group takes 127 of them.
  auto plan = FuseByPostDominator(graph, {});
  const NodeId sum = static_cast<NodeId>(2 * k + 1);
  CHECK(plan.groups[static_cast<std::size_t>(plan.group_of[sum])].nodes.size() == 255);
  CHECK(plan.groups.size() == static_cast<std::size_t>(1 + 1 + (k - 127)));
  CHECK(plan.rejections.front().node == 0);
  CHECK(plan.rejections.front().reason == "group_size_limit");
}
