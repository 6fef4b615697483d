// Fresh names for a model (src/rewrite/name_source.cc): every name the model
// uses, in subgraphs too and node names included, is avoided.
#include <catch2/catch.hpp>

#include "rewrite/name_source.h"
#include "test_models.h"

using namespace onnxfuse;

TEST_CASE("NameSource avoids every value and node name of the model and its subgraphs, and its own", "[rewrite][name_source]") {
  onnx::ModelProto model = test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[2] x, bool c) => (float[2] y) {
    y = If (c) <then_branch = then_g () => (float[2] t) { t = Neg (x) },
                else_branch = else_g () => (float[2] e) { e = Abs (x) }>
  })");
  model.mutable_graph()->mutable_node(0)->set_name("step");
  NameSource names(model);
  CHECK(names.Fresh("x") == "x_2");
  CHECK(names.Fresh("t") == "t_2");        // a then-branch output
  CHECK(names.Fresh("e") == "e_2");        // an else-branch output
  CHECK(names.Fresh("step") == "step_2");  // a node name
  CHECK(names.Fresh("x") == "x_3");        // its own earlier answer
  CHECK(names.Fresh("new") == "new");
}
