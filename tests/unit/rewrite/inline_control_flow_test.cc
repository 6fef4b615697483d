// The control-flow pass (src/rewrite/inline_control_flow.cc): which If, Loop
// and Scan nodes it expands, the graph it leaves (no control node, the outer
// names kept, a model ONNX's checker accepts), the values it computes (the
// constant models are evaluated by build_time_values after the rewrite), and
// the refusals of what stays.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <onnx/checker.h>

#include "ir/attributes.h"
#include "onnxfuse/error.h"
#include "rewrite/build_time_values.h"
#include "rewrite/inline_control_flow.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

int Count(const Graph& graph, const std::string& op) {
  const auto& nodes = graph.nodes();
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [&](const Node& n) { return n.op_type == op; }));
}

std::vector<double> ValuesOf(const Graph& graph, const std::string& name) {
  auto id = graph.FindValue(name);
  REQUIRE(id);
  auto known = KnownValue(graph, *id);
  REQUIRE(known);
  return known->values;
}

void RequireValidModel(const Graph& graph) {
  onnx::ModelProto model = graph.model();
  REQUIRE_NOTHROW(onnx::checker::check_model(model));
}

// An If choosing between x + one and x - one by `cond_text` (ONNX text lines defining bool c).
std::string IfModel(const std::string& inputs, const std::string& cond_text) {
  return R"(<ir_version: 8, opset_import: ["" : 13]>
    g ()" + inputs + R"() => (float[2] y) {
      one = Constant <value = float[2] {1.0, 2.0}> ()
      )" + cond_text + R"(
      y = If (c) <then_branch = then_g () => (float[2] t) { t = Add (x, one) },
                  else_branch = else_g () => (float[2] e) { e = Sub (x, one) }>
    })";
}

}  // namespace

TEST_CASE("InlineControlFlow replaces an If with a constant condition by its branch", "[rewrite][control_flow]") {
  for (bool cond : {true, false}) {
    Graph graph = test::GraphFromText(IfModel("float[2] x", std::string("c = Constant <value = bool {") +
                                                                (cond ? "1" : "0") + "}> ()"));
    ControlFlowResult result = InlineControlFlow(graph);
    REQUIRE(result.expanded.size() == 1);
    CHECK(result.expanded[0].node == "If_2");
    CHECK(result.expanded[0].detail == (cond ? "then_branch inlined" : "else_branch inlined"));
    CHECK(result.refused.empty());
    CHECK(Count(graph, "If") == 0);
    REQUIRE(Count(graph, cond ? "Add" : "Sub") == 1);
    // The branch reads x and one of the enclosing graph, and writes the If's output.
    const Node& op = graph.node(test::NodeNamed(graph, "If_2/" + std::string(cond ? "Add_0" : "Sub_0")));
    CHECK(graph.value(op.inputs[0]).name == "x");
    CHECK(graph.value(op.inputs[1]).name == "one");
    CHECK(graph.value(op.outputs[0]).name == "y");
    CHECK(graph.value(op.outputs[0]).is_graph_output);
    CHECK(Count(graph, "Constant") == 1);  // the condition's Constant was read by the If only
    RequireValidModel(graph);
  }
}

TEST_CASE("InlineControlFlow decides an If from a shape comparison", "[rewrite][control_flow]") {
  // torch.jit.script's `if x.shape[1] > 1:` with the other dims symbolic.
  Graph graph = test::GraphFromText(IfModel("float[N,2] x0", R"(
      x = ReduceMean <axes = [0], keepdims = 0> (x0)
      s = Shape (x0)
      k = Constant <value = int64 {1}> ()
      d = Gather <axis = 0> (s, k)
      c = Greater (d, k))"));
  ControlFlowResult result = InlineControlFlow(graph);
  REQUIRE(result.expanded.size() == 1);
  CHECK(result.expanded[0].detail == "then_branch inlined");
  CHECK(Count(graph, "Add") == 1);
  CHECK(Count(graph, "Greater") == 0);  // the comparison fed the If only
  RequireValidModel(graph);
}

TEST_CASE("InlineControlFlow refuses an If decided at run time and leaves the graph", "[rewrite][control_flow]") {
  Graph graph = test::GraphFromText(IfModel("float[2] x, bool c", ""));
  const std::string before = graph.model().SerializeAsString();
  ControlFlowResult result = InlineControlFlow(graph);
  CHECK(result.expanded.empty());
  REQUIRE(result.refused.size() == 1);
  CHECK(result.refused[0].reason == "condition_not_constant");
  CHECK(result.refused[0].detail ==
        "node 'If_1' (If): its condition: input 'c' must be a constant known at build time (an If decided at run "
        "time is not supported)");
  CHECK(graph.model().SerializeAsString() == before);
  auto error = test::ErrorOf([&] { RequireNoControlFlow(graph, result); });
  CHECK(error.kind == ErrorKind::kUnsupported);
  CHECK(error.message == graph.source_path() + ": " + result.refused[0].detail);
}

TEST_CASE("InlineControlFlow selects between both branches of an If decided at run time when asked", "[rewrite][control_flow]") {
  Graph graph = test::GraphFromText(IfModel("float[2] x, bool c", ""));
  ControlFlowResult result = InlineControlFlow(graph, ControlFlowOptions{/*select_run_time_if=*/true});
  REQUIRE(result.expanded.size() == 1);
  CHECK(result.expanded[0].detail == "both branches, selected by Where at run time");
  CHECK(Count(graph, "If") == 0);
  CHECK(Count(graph, "Add") == 1);
  CHECK(Count(graph, "Sub") == 1);
  const Node& where = graph.node(graph.value(*graph.FindValue("y")).producer);
  REQUIRE(where.op_type == "Where");
  CHECK(graph.value(where.inputs[0]).name == "c");
  CHECK(graph.node(graph.value(where.inputs[1]).producer).op_type == "Add");  // then
  CHECK(graph.node(graph.value(where.inputs[2]).producer).op_type == "Sub");  // else
  RequireValidModel(graph);

  // Outputs whose shape is not static (the branches may differ): refused even when asked.
  Graph symbolic = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[N] x, bool c) => (float[N] y) {
      y = If (c) <then_branch = then_g () => (float[N] t) { t = Neg (x) },
                  else_branch = else_g () => (float[N] e) { e = Abs (x) }>
    })");
  ControlFlowResult refused = InlineControlFlow(symbolic, ControlFlowOptions{true});
  REQUIRE(refused.refused.size() == 1);
  CHECK(refused.refused[0].reason == "shapes_not_static");
  CHECK(Count(symbolic, "If") == 1);
}

TEST_CASE("InlineControlFlow keeps as an If only the run-time If whose untaken branch does not hold", "[rewrite][control_flow]") {
  // Valid for every N, but at N = 3 If_bad's then_branch expands [3, 2, 1]
  // to [2, 2, 3], which does not broadcast: computing both of its branches
  // would not load. If_good is still selected between; If_bad stays, to run
  // the branch c picks.
  LoadOptions pinned;
  pinned.input_shapes = {{"x", {3, 1, 3}}};
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[N,1,3] x, bool c, float[1,2,3] w = {1.0,1.0,1.0,1.0,1.0,1.0}, int64[3] k = {2,2,3})
        => (float[N,2,3] y, float[N,2,3] z) {
      v = Mul (x, w)
      y = If (c) <then_branch = bad_then () => (float[N,2,3] a) {
                    m = ReduceMean <axes = [2], keepdims = 1> (v)
                    a = Expand (m, k)
                  }, else_branch = bad_else () => (float[N,2,3] b) { b = Identity (v) }>
      z = If (c) <then_branch = good_then () => (float[N,2,3] t) { t = Neg (v) },
                  else_branch = good_else () => (float[N,2,3] e) { e = Abs (v) }>
    })", pinned);
  std::string bad, good;
  for (const Node& n : graph.nodes())
    if (n.op_type == "If") (n.outputs[0] == *graph.FindValue("y") ? bad : good) = n.name;
  ControlFlowResult result = InlineControlFlow(graph, ControlFlowOptions{/*select_run_time_if=*/true});
  REQUIRE(result.expanded.size() == 1);
  CHECK(result.expanded[0].node == good);
  CHECK(result.expanded[0].detail == "both branches, selected by Where at run time");
  REQUIRE(result.refused.size() == 1);
  CHECK(result.refused[0].node == bad);
  CHECK(result.refused[0].reason == "condition_not_constant");
  CHECK(Count(graph, "If") == 1);
  CHECK(Count(graph, "Where") == 1);
  CHECK(graph.node(graph.value(*graph.FindValue("y")).producer).op_type == "If");
}

TEST_CASE("InlineControlFlow unrolls a Loop: carried values, iteration numbers, scan outputs", "[rewrite][control_flow]") {
  // v_{i+1} = v_i * 2 + i; the scan output stacks v_{i+1} along a new axis 0.
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g () => (float[2] y, float[4,2] s) {
      v0 = Constant <value = float[2] {1.0, -3.0}> ()
      m = Constant <value = int64 {4}> ()
      t = Constant <value = bool {1}> ()
      two = Constant <value = float {2.0}> ()
      y, s = Loop (m, t, v0) <body = body_g (int64 i, bool ci, float[2] v) => (bool co, float[2] vo, float[2] so) {
        co = Identity (ci)
        f = Cast <to = 1> (i)
        d = Mul (v, two)
        vo = Add (d, f)
        so = Identity (vo)
      }>
    })");
  ControlFlowResult result = InlineControlFlow(graph);
  REQUIRE(result.expanded.size() == 1);
  CHECK(result.expanded[0].detail == "unrolled 4 iterations");
  CHECK(Count(graph, "Loop") == 0);
  CHECK(Count(graph, "Mul") == 4);
  CHECK(Count(graph, "Identity") == 4);  // the scan outputs' copies; the cond outputs are read by nothing
  CHECK(Count(graph, "Unsqueeze") == 4);
  CHECK(Count(graph, "Concat") == 1);
  CHECK(graph.value(*graph.FindValue("s")).type.dims == std::vector<std::int64_t>{4, 2});
  RequireValidModel(graph);
  std::vector<double> v = {1, -3};
  for (int i = 0; i < 4; ++i)
    for (double& e : v) e = e * 2 + i;
  CHECK(ValuesOf(graph, "y") == v);  // s through the backend: tests/unit/app/run_job_test.cc
  // Each copy reads its own iteration number.
  for (int i = 0; i < 4; ++i)
    CHECK(ValuesOf(graph, "Loop_4/iter" + std::to_string(i)) == std::vector<double>{static_cast<double>(i)});
}

TEST_CASE("InlineControlFlow expands an If inside a Loop body once the iteration number is known", "[rewrite][control_flow]") {
  // Iteration 1 subtracts, the others add: the inner If's condition is Equal(i, 1).
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g () => (float[1] y) {
      v0 = Constant <value = float[1] {10.0}> ()
      m = Constant <value = int64 {3}> ()
      one = Constant <value = int64 {1}> ()
      y = Loop (m, , v0) <body = body_g (int64 i, bool ci, float[1] v) => (bool co, float[1] vo) {
        co = Identity (ci)
        f = Cast <to = 1> (i)
        b = Equal (i, one)
        vo = If (b) <then_branch = then_g () => (float[1] ts) { ts = Sub (v, f) },
                     else_branch = else_g () => (float[1] ea) { ea = Add (v, f) }>
      }>
    })");
  ControlFlowResult result = InlineControlFlow(graph);
  REQUIRE(result.expanded.size() == 4);  // the Loop, then its three If copies
  CHECK(result.expanded[0].op_type == "Loop");
  CHECK(result.expanded[1].op_type == "If");
  CHECK(Count(graph, "If") == 0);
  CHECK(Count(graph, "Sub") == 1);
  CHECK(Count(graph, "Add") == 2);
  RequireValidModel(graph);
  CHECK(ValuesOf(graph, "y") == std::vector<double>{10 + 0 - 1 + 2});
}

TEST_CASE("InlineControlFlow unrolls a Scan along axis 1, reversed, stacking along axis 1 in reverse", "[rewrite][control_flow]") {
  // Running sums of the columns of x [2,3] from the last to the first; the
  // scan output prepends, so its column j is the sum of x's columns j..2.
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g () => (float[2] total, float[2,3] sums) {
      x = Constant <value = float[2,3] {1.0, 2.0, 3.0, 10.0, 20.0, 30.0}> ()
      z = Constant <value = float[2] {0.5, 0.5}> ()
      total, sums = Scan (z, x) <num_scan_inputs = 1, scan_input_axes = [1], scan_input_directions = [1],
                                 scan_output_axes = [-1], scan_output_directions = [1],
                                 body = body_g (float[2] acc, float[2] col) => (float[2] acc_out, float[2] seen) {
        acc_out = Add (acc, col)
        seen = Identity (acc_out)
      }>
    })");
  ControlFlowResult result = InlineControlFlow(graph);
  REQUIRE(result.expanded.size() == 1);
  CHECK(result.expanded[0].detail == "unrolled 3 iterations");
  CHECK(Count(graph, "Scan") == 0);
  CHECK(Count(graph, "Gather") == 3);
  RequireValidModel(graph);
  // Iteration t reads column 2 - t of x; the scan output's items are concatenated
  // along axis 1 (the -1 of rank 2), the last iteration's first.
  std::vector<double> columns;
  for (const Node& n : graph.nodes())
    if (n.op_type == "Gather") {
      CHECK(AttrInt(n, "axis", 0) == 1);
      columns.push_back(ValuesOf(graph, graph.value(n.inputs[1]).name).at(0));
    }
  CHECK(columns == std::vector<double>{2, 1, 0});
  const Node& concat = graph.node(test::NodeNamed(graph, "Scan_2/Concat"));
  CHECK(AttrInt(concat, "axis", 0) == 1);
  REQUIRE(concat.inputs.size() == 3);
  const Node& last = graph.node(graph.value(concat.inputs[0]).producer);  // Unsqueeze of the last iteration's output
  CHECK(graph.value(last.inputs[0]).name.rfind("Scan_2/t2/", 0) == 0);
  CHECK(graph.value(*graph.FindValue("sums")).type.dims == std::vector<std::int64_t>{2, 3});
  // total and sums through the backend: tests/unit/app/run_job_test.cc
}

TEST_CASE("InlineControlFlow refuses the loops whose count is not known at build time", "[rewrite][control_flow]") {
  auto loop = [](const std::string& inputs, const std::string& m, const std::string& cond_out) {
    return R"(<ir_version: 8, opset_import: ["" : 13]>
      g ()" + inputs + R"() => (float[1] y) {
        v0 = Constant <value = float[1] {1.0}> ()
        )" + m + R"(
        y = Loop (m, , v0) <body = body_g (int64 i, bool ci, float[1] v) => (bool co, float[1] vo) {
          vo = Add (v, v)
          )" + cond_out + R"(
        }>
      })";
  };
  const std::string pass = "co = Identity (ci)";
  struct Case {
    std::string text, reason, because;
  } cases[] = {
      {loop("int64 m", "", pass), "trip_count_not_constant", "its trip count: input 'm' must be a constant known at build time"},
      {loop("float[1] x", "m = Constant <value = int64 {5000}> ()", pass), "too_many_iterations",
       "its trip count 5000 is over the 1024 iterations unrolled"},
      {loop("float[1] x", "m = Constant <value = int64 {9223372036854775807}> ()", pass), "too_many_iterations",
       "its trip count 9.22337e+18 is over"},
      {loop("float[1] x", "m = Constant <value = int64 {3}> ()",
            "lim = Constant <value = float {4.0}> ()\n r = ReduceMax <keepdims = 0> (vo)\n co = Less (r, lim)"),
       "condition_computed_in_body", "its body computes the condition 'co', so it may stop before M"},
  };
  for (const auto& c : cases) {
    Graph graph = test::GraphFromText(c.text);
    ControlFlowResult result = InlineControlFlow(graph);
    CHECK(result.expanded.empty());
    REQUIRE(result.refused.size() == 1);
    CHECK(result.refused[0].reason == c.reason);
    CHECK(result.refused[0].detail.rfind("node 'Loop_", 0) == 0);
    CHECK(result.refused[0].detail.find(c.because) != std::string::npos);
    CHECK(Count(graph, "Loop") == 1);
  }
}

TEST_CASE("InlineControlFlow leaves a graph without control flow as it is", "[rewrite][control_flow]") {
  Graph graph = test::GraphFromText(test::kBasicBlock);
  const std::string before = graph.model().SerializeAsString();
  ControlFlowResult result = InlineControlFlow(graph);
  CHECK(result.expanded.empty());
  CHECK(result.refused.empty());
  CHECK(graph.model().SerializeAsString() == before);
  CHECK_NOTHROW(RequireNoControlFlow(graph, result));
}
