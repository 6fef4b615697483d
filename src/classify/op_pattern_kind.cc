#include "classify/op_pattern_kind.h"

#include <string>
#include <unordered_map>

namespace onnxfuse {

namespace {

using K = OpPatternKind;

// Every default-domain operator of ONNX opsets 1-17, listed once. Unlisted (newer
// or misspelled) ops are opaque. Sources: TVM Relay's TOpPattern registrations for
// the equivalent Relay op (REFERENCES.md); where Relay has no equivalent, the
// definition in the ONNX spec decides (e.g. HardSwish: out[i] = f(in[i]) is kElemWise).
const std::unordered_map<std::string, OpPatternKind>& KindTable() {
  static const std::unordered_map<std::string, OpPatternKind> table = [] {
    std::unordered_map<std::string, OpPatternKind> t;
    auto set = [&t](K kind, std::initializer_list<const char*> ops) {
      for (const char* op : ops) t.emplace(op, kind);
    };
    set(K::kElemWise,
        {"Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cast", "CastLike", "Ceil", "Celu",
         "Clip", "Cos", "Cosh", "Dropout", "Elu", "Erf", "Exp", "Floor", "HardSigmoid", "HardSwish",
         "Identity", "IsInf", "IsNaN", "LeakyRelu", "Log", "Neg", "Not", "Reciprocal", "Relu", "Round",
         "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Tan",
         "Tanh", "ThresholdedRelu",
         // Inference BatchNormalization: per-channel y = x*a + b with constant a, b.
         // ClassifyNode makes training-mode BN opaque.
         "BatchNormalization"});
    set(K::kBroadcast,
        {"Add", "And", "BitShift", "DequantizeLinear", "Div", "Equal", "Expand", "Greater",
         "GreaterOrEqual", "Less", "LessOrEqual", "Max", "Mean", "Min", "Mod", "Mul", "Or", "PRelu",
         "Pow", "QuantizeLinear", "Sub", "Sum", "Unsqueeze", "Where", "Xor"});
    set(K::kInjective,
        {"Concat", "ConcatFromSequence", "DepthToSpace", "EyeLike", "Flatten", "Gather",
         "GatherElements", "GatherND", "OneHot", "Pad", "Reshape", "Resize", "ReverseSequence", "Shape",
         "Size", "Slice", "SpaceToDepth", "Split", "Squeeze", "Tile", "Transpose", "Trilu", "Upsample"});
    set(K::kCommReduce,
        {"ArgMax", "ArgMin", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
         "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"});
    set(K::kOutEWiseFusable,
        {"AveragePool", "Conv", "ConvInteger", "ConvTranspose", "Einsum", "Gemm", "GlobalAveragePool",
         "GlobalLpPool", "GlobalMaxPool", "Hardmax", "LayerNormalization", "LogSoftmax", "LpPool",
         "MatMul", "MatMulInteger", "MaxPool", "QLinearConv", "QLinearMatMul", "Softmax"});
    set(K::kTuple, {"SequenceConstruct"});
    set(K::kOpaque,
        {"Bernoulli", "BlackmanWindow", "Compress", "Constant", "ConstantOfShape", "CumSum", "DFT", "Det",
         "DynamicQuantizeLinear", "GRU", "GridSample", "HammingWindow", "HannWindow", "If",
         "InstanceNormalization", "LRN", "LSTM", "Loop", "LpNormalization", "MaxRoiPool", "MaxUnpool",
         "MeanVarianceNormalization", "MelWeightMatrix", "Multinomial", "NegativeLogLikelihoodLoss",
         "NonMaxSuppression", "NonZero", "Optional", "OptionalGetElement", "OptionalHasElement", "RNN",
         "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Range", "RoiAlign",
         "STFT", "Scan", "Scatter", "ScatterElements", "ScatterND", "SequenceAt", "SequenceEmpty",
         "SequenceErase", "SequenceInsert", "SequenceLength", "SequenceMap", "SoftmaxCrossEntropyLoss",
         "SplitToSequence", "StringNormalizer", "TfIdfVectorizer", "TopK", "Unique"});
    return t;
  }();
  return table;
}

}  // namespace

std::string_view ToString(OpPatternKind kind) {
  switch (kind) {
    case K::kElemWise: return "kElemWise";
    case K::kBroadcast: return "kBroadcast";
    case K::kInjective: return "kInjective";
    case K::kCommReduce: return "kCommReduce";
    case K::kOutEWiseFusable: return "kOutEWiseFusable";
    case K::kTuple: return "kTuple";
    case K::kOpaque: return "kOpaque";
  }
  return "kOpaque";
}

OpPatternKind KindOfOpType(std::string_view domain, std::string_view op_type) {
  if (!domain.empty() && domain != "ai.onnx") return K::kOpaque;
  const auto& table = KindTable();
  auto it = table.find(std::string(op_type));
  return it == table.end() ? K::kOpaque : it->second;
}

OpPatternKind ClassifyNode(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  OpPatternKind kind = KindOfOpType(node.domain, node.op_type);
  if (node.op_type == "BatchNormalization") {
    // Opset 14+ spells training as an attribute; before opset 9 (and at opset 7's
    // is_test=0) extra outputs carried the batch statistics. Either way, not inference.
    for (const auto& attr : node.proto.attribute())
      if ((attr.name() == "training_mode" && attr.i() != 0)) return K::kOpaque;
    if (node.outputs.size() > 1) {
      for (std::size_t i = 1; i < node.outputs.size(); ++i)
        if (node.outputs[i] != kNoValue) return K::kOpaque;
    }
  }
  return kind;
}

OpPatternKind EdgePattern(const Graph& graph, ValueId value, NodeId consumer, OpPatternKind consumer_kind) {
  if (consumer_kind != K::kBroadcast) return consumer_kind;
  const Node& node = graph.node(consumer);
  for (ValueId out : node.outputs) {
    if (out == kNoValue) continue;
    if (!graph.value(value).type.SameShape(graph.value(out).type)) return consumer_kind;
  }
  return K::kElemWise;
}

}  // namespace onnxfuse
