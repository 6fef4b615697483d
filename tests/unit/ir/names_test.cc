// The names a model uses and fresh ones that avoid them (src/ir/names.cc),
// shared by graph rewrites (Graph::NewValueName, NameSource) and the opset
// adapters.
#include <catch2/catch.hpp>

#include <string>
#include <unordered_set>

#include "ir/names.h"
#include "test_models.h"

using namespace onnxfuse;

TEST_CASE("CollectNames: every name of a graph and of its subgraphs", "[names]") {
  const onnx::ModelProto model = test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x, bool c, float[2] w = {1.0, 2.0}) => (float[2] y) {
      t = Add (x, w)
      y = If (c) <then_branch = g1 () => (float[2] a) { a = Relu (t) },
                  else_branch = g2 () => (float[2] b) { b = Neg (t) }>
    })");
  std::unordered_set<std::string> names;
  CollectNames(model.graph(), names);
  for (const char* name : {"x", "c", "w", "y", "t", "a", "b"}) CHECK(names.count(name) == 1);
  CHECK(names.count("z") == 0);
}

TEST_CASE("FreshName: the base, else the first free numbered name, which is then taken", "[names]") {
  std::unordered_set<std::string> taken = {"x", "x_2"};
  CHECK(FreshName("y", taken) == "y");
  CHECK(FreshName("y", taken) == "y_2");
  CHECK(FreshName("x", taken) == "x_3");
  CHECK(FreshName("x", taken, 1) == "x_1");
  CHECK(taken.count("x_1") == 1);
}
