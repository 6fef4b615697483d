#include <catch2/catch.hpp>

#include "ir/attributes.h"
#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// A graph whose Transpose and Conv carry attributes; built without the loader,
// so attribute types can be made wrong after parsing (the checker would refuse them).
Graph AttributeGraph(onnx::AttributeProto::AttributeType perm_type = onnx::AttributeProto::INTS) {
  auto model = test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3,3] x, float[2,2,1,1] w) => (float[1,3,3,2] y) {
      c = Conv <group: int = 1, auto_pad: string = "NOTSET", strides: ints = [1, 1]> (x, w)
      y = Transpose <perm: ints = [0, 2, 3, 1]> (c)
    })");
  model.mutable_graph()->mutable_node(1)->mutable_attribute(0)->set_type(perm_type);
  return Graph(std::move(model), "attributes.onnx");
}

}  // namespace

TEST_CASE("attributes are read with their type, absent ones give the fallback", "[attributes]") {
  Graph graph = AttributeGraph();
  const Node& conv = graph.node(0);
  CHECK(AttrInt(conv, "group", 7) == 1);
  CHECK(AttrInt(conv, "missing", 7) == 7);
  CHECK(AttrString(conv, "auto_pad", "") == "NOTSET");
  CHECK(AttrInts(conv, "strides") == std::vector<std::int64_t>{1, 1});
  CHECK(AttrInts(conv, "dilations", {2, 2}) == std::vector<std::int64_t>{2, 2});
  CHECK(AttrFloat(conv, "alpha", 0.5f) == 0.5f);
  CHECK(FindAttr(conv, "strides") != nullptr);
  CHECK(FindAttr(conv, "pads") == nullptr);
  CHECK(AttrInt(conv.proto, "group", 7) == 1);
}

TEST_CASE("a wrong-typed attribute is an invalid model naming the node", "[attributes]") {
  Graph graph = AttributeGraph(onnx::AttributeProto::FLOATS);
  const Node& transpose = graph.node(1);
  try {
    AttrInts(transpose, "perm");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInvalidModel);
    CHECK(std::string(e.what()) == "node 'Transpose_1' (Transpose): attribute 'perm' is FLOATS, not INTS");
  }
  // Asking for another type than the attribute has is the same error.
  CHECK_THROWS_AS(AttrInt(graph.node(0), "strides", 1), Error);
  CHECK_THROWS_AS(AttrString(graph.node(0).proto, "group", ""), Error);
}
