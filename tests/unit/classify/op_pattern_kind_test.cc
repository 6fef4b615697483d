#include <catch2/catch.hpp>

#include <set>

#include <onnx/defs/schema.h>

#include "classify/op_pattern_kind.h"
#include "test_models.h"

using namespace onnxfuse;
using K = OpPatternKind;

TEST_CASE("the table follows TVM's registrations for the common CNN ops", "[op_pattern_kind]") {
  CHECK(KindOfOpType("", "Relu") == K::kElemWise);
  CHECK(KindOfOpType("", "Add") == K::kBroadcast);
  CHECK(KindOfOpType("", "Reshape") == K::kInjective);
  CHECK(KindOfOpType("", "ReduceMean") == K::kCommReduce);
  CHECK(KindOfOpType("", "Conv") == K::kOutEWiseFusable);
  CHECK(KindOfOpType("", "GlobalAveragePool") == K::kOutEWiseFusable);
  CHECK(KindOfOpType("", "TopK") == K::kOpaque);
  CHECK(KindOfOpType("", "NoSuchOp") == K::kOpaque);
  CHECK(KindOfOpType("com.microsoft", "Relu") == K::kOpaque);
  CHECK(KindOfOpType("ai.onnx", "Relu") == K::kElemWise);
}

TEST_CASE("every default-domain operator of opsets up to 17 has an explicit entry", "[op_pattern_kind]") {
  // Opaque is also the answer for unknown names, so check explicit listing through a
  // name we know is unlisted: only ops whose kind is not opaque, or that are listed
  // as opaque, may appear. We enumerate the registry and require a deliberate choice.
  const std::set<std::string> deliberately_opaque = {
      "Bernoulli", "BlackmanWindow", "Compress", "Constant", "ConstantOfShape", "CumSum", "DFT", "Det",
      "DynamicQuantizeLinear", "GRU", "GridSample", "HammingWindow", "HannWindow", "If",
      "InstanceNormalization", "LRN", "LSTM", "Loop", "LpNormalization", "MaxRoiPool", "MaxUnpool",
      "MeanVarianceNormalization", "MelWeightMatrix", "Multinomial", "NegativeLogLikelihoodLoss",
      "NonMaxSuppression", "NonZero", "Optional", "OptionalGetElement", "OptionalHasElement", "RNN",
      "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Range", "RoiAlign", "STFT",
      "Scan", "Scatter", "ScatterElements", "ScatterND", "SequenceAt", "SequenceEmpty", "SequenceErase",
      "SequenceInsert", "SequenceLength", "SequenceMap", "SoftmaxCrossEntropyLoss", "SplitToSequence",
      "StringNormalizer", "TfIdfVectorizer", "TopK", "Unique"};
  int checked = 0;
  for (const auto& schema : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
    if (!schema.domain().empty() || schema.since_version() > 17) continue;
    ++checked;
    INFO(schema.Name());
    if (KindOfOpType("", schema.Name()) == K::kOpaque) CHECK(deliberately_opaque.count(schema.Name()) == 1);
  }
  CHECK(checked > 170);
}

TEST_CASE("BatchNormalization is elementwise in inference and opaque in training", "[op_pattern_kind]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,4,8,8] x, float[4] s, float[4] b, float[4] m, float[4] v) => (float[1,4,8,8] y, float[1,4,8,8] z) {
      y = BatchNormalization <epsilon: float = 0.001> (x, s, b, m, v)
      z, rm, rv = BatchNormalization <training_mode: int = 1> (x, s, b, m, v)
    })");
  CHECK(ClassifyNode(graph, 0) == K::kElemWise);
  CHECK(ClassifyNode(graph, 1) == K::kOpaque);
}

TEST_CASE("a broadcast edge whose shapes are equal is elementwise", "[op_pattern_kind]") {
  auto graph = test::GraphFromText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,8,8] x, float[1,4,8,8] y, float[1,4,1,1] c) => (float[1,4,8,8] out) {
      s = Add (x, y)
      out = Mul (s, c)
    })");
  NodeId add = 0, mul = 1;
  ValueId x = *graph.FindValue("x"), s = *graph.FindValue("s"), c = *graph.FindValue("c");
  CHECK(EdgePattern(graph, x, add, ClassifyNode(graph, add)) == K::kElemWise);
  CHECK(EdgePattern(graph, s, mul, ClassifyNode(graph, mul)) == K::kElemWise);
  CHECK(EdgePattern(graph, c, mul, ClassifyNode(graph, mul)) == K::kBroadcast);
}
