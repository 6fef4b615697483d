// Copies of a body in the enclosing graph (src/rewrite/subgraph_copy.cc):
// inputs bound, defined names fresh, outer reads kept, nested subgraphs'
// reads of the body's names renamed with them.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "onnxfuse/error.h"
#include "rewrite/subgraph_copy.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

const onnx::ModelProto& Model() {
  static const onnx::ModelProto model = test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[2] x, bool c) => (float[2] y, float[2] w, float[2] u) {
    k = Constant <value = float[2] {1.0, 2.0}> ()
    m = Constant <value = int64 {2}> ()
    y, w, u = Loop (m, c, x) <body = body_g (int64 i, bool ci, float[2] v) => (bool co, float[2] vo, float[2] v2, float[2] k2) {
      co = Identity (ci)
      s = Add (v, k)
      vo = If (ci) <then_branch = then_g () => (float[2] t) { t = Mul (s, v) },
                    else_branch = else_g () => (float[2] e) { e = Identity (s) }>
      v2 = Identity (v)
      k2 = Identity (k)
    }>
  })");
  return model;
}

const onnx::GraphProto& Body() { return Model().graph().node(2).attribute(0).g(); }

}  // namespace

TEST_CASE("CopyBody binds inputs, renames what the body defines and keeps outer reads", "[rewrite][subgraph_copy]") {
  NameSource names(Model());
  BodyCopy copy = CopyBody(Body(), {"iter", "cond", "x"}, "L/", names, "node 'L' (Loop)");
  REQUIRE(copy.nodes.size() == 5);
  CHECK(copy.nodes[0].name() == "L/Identity_0");
  CHECK(copy.nodes[0].input(0) == "cond");
  CHECK(copy.nodes[0].output(0) == "L/co");
  const onnx::NodeProto& add = copy.nodes[1];
  CHECK(add.input(0) == "x");   // the body input v, bound
  CHECK(add.input(1) == "k");   // read from the enclosing graph
  CHECK(add.output(0) == "L/s");
  // The nested If's branch reads the renamed s and the bound v; its own name t stays.
  const onnx::NodeProto& mul = copy.nodes[2].attribute(0).g().node(0);
  const onnx::NodeProto& then_mul = copy.nodes[2].attribute(0).name() == "then_branch" ? mul : copy.nodes[2].attribute(1).g().node(0);
  CHECK(then_mul.op_type() == "Mul");
  CHECK(then_mul.input(0) == "L/s");
  CHECK(then_mul.input(1) == "x");
  CHECK(then_mul.output(0) == "t");
  CHECK(copy.nodes[2].input(0) == "cond");
  CHECK(copy.outputs == std::vector<std::string>{"L/co", "L/vo", "L/v2", "L/k2"});

  // A second copy gets other names.
  BodyCopy again = CopyBody(Body(), {"iter", "cond", "L/vo"}, "L/", names, "node 'L' (Loop)");
  CHECK(again.nodes[1].output(0) == "L/s_2");
  CHECK(again.nodes[1].input(0) == "L/vo");
  CHECK(again.nodes[0].name() == "L/Identity_0_2");
}

TEST_CASE("CopyBody refuses a binding of the wrong arity, RenameValues renames reads and writes", "[rewrite][subgraph_copy]") {
  NameSource names(Model());
  auto error = test::ErrorOf([&] { CopyBody(Body(), {"a"}, "L/", names, "node 'L' (Loop)"); });
  CHECK(error.kind == ErrorKind::kInvalidModel);
  CHECK(error.message == "node 'L' (Loop): its body 'body_g' takes 3 inputs, the node gives 1");

  std::vector<onnx::NodeProto> nodes(Model().graph().node().begin(), Model().graph().node().end());
  RenameValues(nodes, {{"k", "k_new"}, {"y", "y_new"}});
  CHECK(nodes[0].output(0) == "k_new");
  CHECK(nodes[2].output(0) == "y_new");
  CHECK(nodes[2].attribute(0).g().node(1).input(1) == "k_new");  // the body's read of k
  CHECK(nodes[2].attribute(0).g().output(3).name() == "k2");
  CHECK(names.Fresh("k") == "k_2");
  CHECK(names.Fresh("fresh") == "fresh");
}
