#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "report/dot_writer.h"
#include "onnxfuse/error.h"
#include "temp_dir.h"
#include "test_models.h"

using namespace onnxfuse;
namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

namespace {


// A plan with the given group label per node (in node order) and rule per label.
FusionPlan PlanOf(const Graph& graph, const std::vector<int>& labels, const Strings& rules) {
  return MakeFusionPlan(graph, ClassifyAll(graph), labels, rules, "test");
}

// DOT node ids ("n3") inside "subgraph cluster_g<id> { ... }", or {} when there is no such cluster.
Strings ClusterMembers(const std::string& dot, int group) {
  const std::string open = "subgraph cluster_g" + std::to_string(group) + " {\n";
  const auto begin = dot.find(open);
  if (begin == std::string::npos) return {};
  const auto end = dot.find("\n  }\n", begin);
  std::istringstream body(dot.substr(begin + open.size(), end - begin - open.size()));
  Strings members;
  for (std::string line; std::getline(body, line);) {
    std::smatch m;
    if (std::regex_search(line, m, std::regex("^    (n[0-9]+) \\["))) members.push_back(m[1]);
  }
  return members;
}

// Lines "a -> b ..." of the DOT text.
Strings Edges(const std::string& dot) {
  Strings edges;
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);)
    if (line.find(" -> ") != std::string::npos) edges.push_back(line);
  return edges;
}

int CountContaining(const Strings& lines, const std::string& needle) {
  int n = 0;
  for (const auto& line : lines) n += line.find(needle) != std::string::npos;
  return n;
}

std::string DotId(const Graph& graph, const std::string& name) {
  return "n" + std::to_string(test::NodeNamed(graph, name));
}

// The attribute list of DOT node `id` ("n3 [ ... ]").
std::string NodeLine(const std::string& dot, const std::string& id) {
  const auto begin = dot.find(" " + id + " [");
  REQUIRE(begin != std::string::npos);
  return dot.substr(begin + 1, dot.find('\n', begin) - begin - 1);
}

ErrorKind KindOf(const std::function<void()>& f, std::string* message) {
  try {
    f();
  } catch (const Error& e) {
    *message = e.what();
    return e.kind();
  }
  FAIL("no Error thrown");
  return ErrorKind::kInternal;
}

// x -> Relu -> Relu ... with the nodes named `node_names`: names the text syntax cannot spell.
Graph NamedChain(const std::string& input_name, const Strings& node_names) {
  return test::ChainGraph(input_name, Strings(node_names.size(), "Relu"), node_names);
}

}  // namespace

TEST_CASE("a residual block: one cluster per fused group, internal edges dashed, shapes on stored tensors",
          "[dot_writer]") {
  auto graph = test::GraphFromText(test::kBasicBlock);
  // Relu_0 alone; Conv+BN+Relu; Conv+BN+Add+Relu.
  auto plan = PlanOf(graph, {0, 1, 1, 1, 2, 2, 2, 2}, {"", "test.head", "test.residual"});
  const std::string dot =
      ToDot(graph, plan, {"", "Conv_BatchNormalization_Relu", "Conv_BatchNormalization_Add_Relu"});
  INFO(dot);

  CHECK(dot.rfind("digraph onnxfuse {\n", 0) == 0);
  CHECK(dot.find("rankdir=TB") != std::string::npos);
  CHECK(ClusterMembers(dot, 0).empty());  // a single node is no cluster
  CHECK(ClusterMembers(dot, 1) ==
        Strings{DotId(graph, "Conv_1"), DotId(graph, "BatchNormalization_2"), DotId(graph, "Relu_3")});
  CHECK(ClusterMembers(dot, 2) == Strings{DotId(graph, "Conv_4"), DotId(graph, "BatchNormalization_5"),
                                          DotId(graph, "Add_6"), DotId(graph, "Relu_7")});
  CHECK(dot.find("label=\"Conv_BatchNormalization_Relu\\ntest.head\"") != std::string::npos);
  CHECK(dot.find("label=\"Conv_BatchNormalization_Add_Relu\\ntest.residual\"") != std::string::npos);

  // Ops are boxes "OpType (constant inputs)\nname"; initializers are not drawn.
  CHECK(NodeLine(dot, DotId(graph, "Conv_1")) == DotId(graph, "Conv_1") + " [label=\"Conv (W)\\nConv_1\"];");
  CHECK(NodeLine(dot, DotId(graph, "BatchNormalization_2")).find("BatchNormalization (4 const)") !=
        std::string::npos);
  CHECK(NodeLine(dot, DotId(graph, "Relu_0")) == DotId(graph, "Relu_0") + " [label=\"Relu\\nRelu_0\"];");
  CHECK(dot.find("w1") == std::string::npos);
  CHECK(dot.find("\"running_mean\"") == std::string::npos);
  // Graph input and output are ellipses with their shapes.
  const std::string x = "in" + std::to_string(*graph.FindValue("x"));
  const std::string y = "out" + std::to_string(*graph.FindValue("y"));
  CHECK(NodeLine(dot, x) == x + " [shape=ellipse, fillcolor=\"#f2f2f2\", label=\"x\\n[1,2,8,8]\"];");
  CHECK(NodeLine(dot, y) == y + " [shape=ellipse, fillcolor=\"#f2f2f2\", label=\"y\\n[1,2,8,8]\"];");

  // One edge per (tensor, reader) and one into y: 10. Five tensors never leave their
  // group (c1, n1, c2, n2, a): dashed. The five stored ones carry their shape.
  const Strings edges = Edges(dot);
  CHECK(edges.size() == 10);
  CHECK(CountContaining(edges, "style=dashed") == 5);
  CHECK(CountContaining(edges, "label=\"[1,2,8,8]\"") == 5);
  CHECK(CountContaining(edges, x + " -> " + DotId(graph, "Relu_0")) == 1);
  CHECK(CountContaining(edges, DotId(graph, "Relu_0") + " -> " + DotId(graph, "Add_6") + " [label") == 1);
  CHECK(CountContaining(edges, DotId(graph, "Relu_3") + " -> " + DotId(graph, "Conv_4") + " [label") == 1);
  CHECK(CountContaining(edges, DotId(graph, "Relu_7") + " -> " + y) == 1);
}

TEST_CASE("a tensor a group also writes out is drawn solid inside the group", "[dot_writer]") {
  auto graph = test::GraphFromText(test::ChainText({"Relu", "Sigmoid", "Tanh"}, "1,4", 13, 8, {0}));
  auto plan = PlanOf(graph, {0, 0, 0}, {"test.all"});
  const std::string dot = ToDot(graph, plan, {});
  INFO(dot);
  const Strings edges = Edges(dot);
  // x->Relu, Relu->Sigmoid (a is a graph output: stored), Sigmoid->Tanh (dashed), a->out, y->out.
  CHECK(edges.size() == 5);
  CHECK(CountContaining(edges, "style=dashed") == 1);
  CHECK(CountContaining(edges, DotId(graph, "Relu_0") + " -> " + DotId(graph, "Sigmoid_1") +
                                   " [color=\"#888888\"]") == 1);
  // Without a function name the cluster is named as the writer names its op.
  CHECK(dot.find("label=\"Relu_Sigmoid_Tanh\\ntest.all\"") != std::string::npos);
}

TEST_CASE("Constant nodes are not drawn, opaque nodes are grey, one kind of group has one colour",
          "[dot_writer]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x, float[2,2,1,1] w = {1.0, 0.0, 0.0, 1.0}) => (float[1,32] y, int64[4,?] z) {
      c1 = Conv (x, w)
      r1 = Relu (c1)
      c2 = Conv (r1, w)
      r2 = Relu (c2)
      shape = Constant <value: tensor = int64[2] {1, 32}> ()
      y = Reshape (r2, shape)
      z = NonZero (x)
    })");
  auto plan = PlanOf(graph, {0, 0, 1, 1, 2, 3, 4}, {"test.a", "test.b", "", "", ""});
  const std::string dot = ToDot(graph, plan, {"Conv_Relu", "Conv_Relu_2"});
  INFO(dot);

  const std::string constant = DotId(graph, "Constant_4");
  CHECK(dot.find(" " + constant + " ") == std::string::npos);
  CHECK(NodeLine(dot, DotId(graph, "Reshape_5")).find("label=\"Reshape (shape)\\nReshape_5\"") !=
        std::string::npos);
  CHECK(NodeLine(dot, DotId(graph, "NonZero_6")).find("fillcolor=\"#d0d0d0\"") != std::string::npos);
  CHECK(NodeLine(dot, DotId(graph, "Reshape_5")).find("fillcolor") == std::string::npos);

  // "Conv_Relu_2" is the writer's clash suffix: the same kind, the same colour.
  auto fill_of = [&dot](int group) {
    const auto begin = dot.find("subgraph cluster_g" + std::to_string(group) + " {");
    const auto at = dot.find("fillcolor=\"", begin) + 11;
    return dot.substr(at, dot.find('"', at) - at);
  };
  CHECK(fill_of(0).size() == 7);
  CHECK(fill_of(0) == fill_of(1));
  // ... and in any other graph.
  auto other = test::GraphFromText(test::kBasicBlock);
  const std::string other_dot =
      ToDot(other, PlanOf(other, {0, 1, 1, 2, 3, 3, 4, 4}, {"", "t", "", "t", "t"}), {"", "Conv_Relu"});
  CHECK(other_dot.find("fillcolor=\"" + fill_of(0) + "\"") != std::string::npos);
}

TEST_CASE("names are escaped for DOT and long PyTorch names shortened", "[dot_writer]") {
  auto graph = NamedChain("x\"1\\2", {"say \"hi\" \\ bye", "/layer1/layer1.0/conv1/Relu",
                                      std::string("bad\x01utf8\xff") + "\xc3\xa9",
                                      "/encoder/layers/encoder_layer_0/self_attention/Relu", "/Relu",
                                      std::string(40, 'x')});
  auto plan = PlanOf(graph, {0, 1, 2, 3, 4, 5}, {"", "", "", "", "", ""});
  const std::string dot = ToDot(graph, plan, {});
  INFO(dot);
  CHECK(dot.find("label=\"x\\\"1\\\\2\\n[1,4]\"") != std::string::npos);
  CHECK(dot.find("label=\"Relu\\nsay \\\"hi\\\" \\\\ bye\"") != std::string::npos);
  CHECK(dot.find("label=\"Relu\\nlayer1.0/conv1\", tooltip=\"/layer1/layer1.0/conv1/Relu\"") != std::string::npos);
  CHECK(dot.find("label=\"Relu\\nbad?utf8?\xc3\xa9\"") != std::string::npos);
  CHECK(dot.find("label=\"Relu\\nencoder_layer_0/self_attention\", tooltip") != std::string::npos);
  CHECK(dot.find("n4 [label=\"Relu\", tooltip=\"/Relu\"]") != std::string::npos);
  CHECK(dot.find("label=\"Relu\\n\xe2\x80\xa6" + std::string(31, 'x') + "\"") != std::string::npos);

  // dot accepts the text and shows the names as written.
  test::TempDir dir("dot");
  const auto svg = dir.path / "names.svg";
  RenderSvg(dot, svg.string());
  const std::string text = test::FileContents(svg);
  CHECK(text.find("say &quot;hi&quot; \\ bye") != std::string::npos);
  CHECK(text.find("x&quot;1\\2") != std::string::npos);
}

TEST_CASE("RenderSvg writes the picture through dot", "[dot_writer]") {
  auto graph = test::GraphFromText(test::kBasicBlock);
  auto plan = PlanOf(graph, {0, 1, 1, 1, 2, 2, 2, 2}, {"", "test.head", "test.residual"});
  const std::string dot = ToDot(graph, plan, {"", "Conv_BatchNormalization_Relu", "Conv_Add_Relu"});
  test::TempDir dir("dot");
  const auto svg = dir.path / "block.svg";
  RenderSvg(dot, svg.string());
  REQUIRE(fs::exists(svg));
  const std::string text = test::FileContents(svg);
  CHECK(text.find("<svg") != std::string::npos);
  CHECK(text.find("Conv_BatchNormalization_Relu") != std::string::npos);
  CHECK(text.find("test.residual") != std::string::npos);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);  // no temp file left
}

TEST_CASE("RenderSvg: a dot failure is an I/O error and leaves the target as it was", "[dot_writer]") {
  test::TempDir dir("dot");
  const auto svg = dir.path / "old.svg";
  std::ofstream(svg) << "old";
  std::string message;
  CHECK(KindOf([&] { RenderSvg("digraph { a -> }\n", svg.string()); }, &message) == ErrorKind::kIo);
  CHECK(message.find(svg.string() + ": dot -Tsvg exited with status 1") == 0);
  CHECK(message.find("syntax error") != std::string::npos);
  CHECK(test::FileContents(svg) == "old");
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}

TEST_CASE("RenderSvg without Graphviz says so", "[dot_writer]") {
  test::TempDir dir("dot");
  const std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", dir.path.c_str(), 1);  // an empty folder: no dot
  std::string message;
  const ErrorKind kind = KindOf([&] { RenderSvg("digraph {}\n", (dir.path / "x.svg").string()); }, &message);
  ::setenv("PATH", saved.c_str(), 1);
  CHECK(kind == ErrorKind::kUnsupported);
  CHECK(message == (dir.path / "x.svg").string() + ": Graphviz 'dot' is not installed");
  CHECK(!fs::exists(dir.path / "x.svg"));
}
