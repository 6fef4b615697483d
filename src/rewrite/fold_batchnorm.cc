// BatchNormalization folding (see fold_batchnorm.h): match each BN read-only,
// then rewrite the Graph through its edit API.
#include "rewrite/fold_batchnorm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <variant>

#include "eval/batch_norm_affine.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "ir/tensor_values.h"

namespace onnxfuse {

namespace {

bool IsFloating(std::int32_t dtype) { return dtype == onnx::TensorProto::FLOAT || dtype == onnx::TensorProto::DOUBLE; }

std::string DtypeName(std::int32_t dtype) {
  return onnx::TensorProto_DataType_IsValid(dtype)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(dtype))
             : "type " + std::to_string(dtype);
}

struct Refusal {
  std::string reason, detail;
};

// A BN that folds: W' and B' computed, in W's element type.
struct Fold {
  NodeId bn = kNoNode, conv = kNoNode;
  std::int32_t dtype = 0;
  std::vector<std::int64_t> weight_dims;
  std::vector<double> weight, bias;
  std::string weight_base, bias_base;  // names the new initializers derive from
};

// The operands, in the order of the checks and messages: W and b of the conv, then γ, β, μ, σ² of the BN.
enum Operand { kWeight, kConvBias, kScale, kShift, kMean, kVar, kOperands };
const char* const kRoles[kOperands] = {"weight", "bias", "scale", "B", "input_mean", "input_var"};

ValueId ExplicitInput(const Node& node, std::size_t i) { return i < node.num_explicit_inputs ? node.inputs[i] : kNoValue; }

// Checks the preconditions of fold_batchnorm.h in order, read-only; each step
// returns the refusal when its condition fails.
class Matcher {
 public:
  Matcher(const Graph& graph, NodeId bn) : graph_(graph), bn_(graph.node(bn)) { fold_.bn = bn; }

  std::variant<Fold, Refusal> Run() {
    for (auto step : {&Matcher::InferenceOnly, &Matcher::FedByConv, &Matcher::ConvOutputOnlyToBn,
                      &Matcher::ConstantOperands, &Matcher::FloatingOperands, &Matcher::ShapesAgree,
                      &Matcher::Compute})
      if (auto refusal = (this->*step)()) return std::move(*refusal);
    return std::move(fold_);
  }

 private:
  using Step = std::optional<Refusal>;

  // "the scale 's' of 'bn1' (BatchNormalization)"
  std::string Text(int i) const {
    return "the " + std::string(kRoles[i]) + " '" + graph_.value(values_[i]).name + "' of " +
           QuotedNode(i < kScale ? *conv_ : bn_);
  }

  Step InferenceOnly() {
    if (AttrInt(bn_, "training_mode", 0) != 0)
      return Refusal{"training_mode", QuotedNode(bn_) + " has training_mode=1: it normalizes with batch statistics"};
    for (std::size_t i = 1; i < bn_.outputs.size(); ++i) {
      if (bn_.outputs[i] == kNoValue) continue;
      const Value& v = graph_.value(bn_.outputs[i]);
      if (!v.consumers.empty() || v.is_graph_output)
        return Refusal{"training_mode", QuotedNode(bn_) + " writes running statistics '" + v.name + "', which " +
                                            (v.is_graph_output ? "is a graph output"
                                                               : "'" + graph_.node(v.consumers[0]).name + "' reads")};
    }
    return std::nullopt;
  }

  Step FedByConv() {
    const ValueId x = ExplicitInput(bn_, 0);
    if (x == kNoValue) return Refusal{"no_conv_producer", QuotedNode(bn_) + " has no input X"};
    const Value& mid = graph_.value(x);
    if (mid.producer == kNoNode)
      return Refusal{"no_conv_producer", QuotedNode(bn_) + " reads '" + mid.name +
                                             "', a graph input, not the output of a Conv or ConvTranspose"};
    conv_ = &graph_.node(mid.producer);
    transpose_ = conv_->op_type == "ConvTranspose";
    if (!conv_->domain.empty() || (conv_->op_type != "Conv" && !transpose_) || conv_->outputs.empty() ||
        conv_->outputs[0] != x)
      return Refusal{"no_conv_producer", QuotedNode(bn_) + " reads '" + mid.name + "' from " + QuotedNode(*conv_) +
                                             ", not from a Conv or ConvTranspose"};
    fold_.conv = mid.producer;
    return std::nullopt;
  }

  Step ConvOutputOnlyToBn() {
    const Value& mid = graph_.value(conv_->outputs[0]);
    if (mid.is_graph_output)
      return Refusal{"conv_output_is_graph_output", "the output '" + mid.name + "' of " + QuotedNode(*conv_) +
                                                        " is a graph output, so it cannot become " + QuotedNode(bn_) +
                                                        "'s normalized value"};
    if (mid.consumers.size() == 1) return std::nullopt;
    std::vector<NodeId> others = mid.consumers;
    std::sort(others.begin(), others.end());
    others.erase(std::unique(others.begin(), others.end()), others.end());
    others.erase(std::remove(others.begin(), others.end(), fold_.bn), others.end());
    std::string list;
    for (std::size_t i = 0; i < others.size(); ++i) list += (i ? ", " : "") + QuotedNode(graph_.node(others[i]));
    return Refusal{"conv_output_shared", "the output '" + mid.name + "' of " + QuotedNode(*conv_) + " is read by " +
                                             (others.empty() ? QuotedNode(bn_) + " more than once"
                                                             : list + " besides " + QuotedNode(bn_))};
  }

  Step ConstantOperands() {
    const Node* owner[kOperands] = {conv_, conv_, &bn_, &bn_, &bn_, &bn_};
    for (int i = 0; i < kOperands; ++i) {
      values_[i] = ExplicitInput(*owner[i], i < kScale ? static_cast<std::size_t>(i + 1) : static_cast<std::size_t>(i - 1));
      if (values_[i] == kNoValue) {
        if (i == kConvBias) continue;  // the conv bias is optional
        return Refusal{"not_constant", "the " + std::string(kRoles[i]) + " input of " + QuotedNode(*owner[i]) + " is missing"};
      }
      const Value& v = graph_.value(values_[i]);
      if (!graph_.IsConstant(values_[i]))
        return Refusal{"not_constant", Text(i) + " is " +
                                           (v.producer == kNoNode ? std::string("a graph input")
                                                                  : "computed by " + QuotedNode(graph_.node(v.producer))) +
                                           ", not a constant"};
      tensors_[i] = graph_.ConstantTensor(values_[i]);
      if (!tensors_[i]) return Refusal{"not_constant", Text(i) + " comes from a Constant node without a 'value' tensor"};
    }
    return std::nullopt;
  }

  Step FloatingOperands() {
    for (int i = 0; i < kOperands; ++i)
      if (tensors_[i] && !IsFloating(tensors_[i]->data_type()))
        return Refusal{"unsupported_dtype",
                       Text(i) + " is " + DtypeName(tensors_[i]->data_type()) + "; only FLOAT and DOUBLE fold"};
    return std::nullopt;
  }

  Step ShapesAgree() {
    fold_.weight_dims.assign(tensors_[kWeight]->dims().begin(), tensors_[kWeight]->dims().end());
    const auto& wdims = fold_.weight_dims;
    const bool empty = std::any_of(wdims.begin(), wdims.end(), [](std::int64_t d) { return d <= 0; });
    if (wdims.size() < 3 || empty)
      return Refusal{"shape_mismatch", Text(kWeight) +
                                           (empty ? " is empty" : " has rank " + std::to_string(wdims.size())) +
                                           "; a Conv weight has rank 3 or more and no zero dims"};
    if (AttrInt(bn_, "spatial", 1) == 0)
      return Refusal{"shape_mismatch",
                     QuotedNode(bn_) + " has spatial=0: its statistics are per location, not per channel"};
    group_ = AttrInt(*conv_, "group", 1);
    if (group_ < 1 || (transpose_ && wdims[0] % group_ != 0))
      return Refusal{"shape_mismatch", Text(kWeight) + " has " + std::to_string(wdims[0]) +
                                           " rows, which group=" + std::to_string(group_) + " does not divide"};
    const std::int64_t c_out = transpose_ ? wdims[1] * group_ : wdims[0];
    for (int i = kConvBias; i < kOperands; ++i) {
      const onnx::TensorProto* t = tensors_[i];
      if (t && (t->dims_size() != 1 || t->dims(0) != c_out))
        return Refusal{"shape_mismatch", Text(i) + " has shape " + DimsText(*t) + ", but " + QuotedNode(*conv_) +
                                             " has " + std::to_string(c_out) + " output channels"};
    }
    return std::nullopt;
  }

  static std::string DimsText(const onnx::TensorProto& t) {
    std::string dims;
    for (auto d : t.dims()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    return "[" + dims + "]";
  }

  Step Compute();

  const Graph& graph_;
  const Node& bn_;
  const Node* conv_ = nullptr;
  bool transpose_ = false;
  std::int64_t group_ = 1;
  ValueId values_[kOperands] = {kNoValue, kNoValue, kNoValue, kNoValue, kNoValue, kNoValue};
  const onnx::TensorProto* tensors_[kOperands] = {};
  Fold fold_;
};

// W' and B' in double; refused when the target type cannot hold them (σ²+ε <= 0, or overflow).
Matcher::Step Matcher::Compute() {
  std::vector<double> data[kOperands];
  for (int i = 0; i < kOperands; ++i)
    if (tensors_[i]) data[i] = DecodeTensor<double>(*tensors_[i], graph_.source_path() + ": " + Text(i));
  const eval::ChannelAffine affine = eval::BatchNormAffine(data[kScale], data[kShift], data[kMean], data[kVar],
                                                           AttrFloat(bn_, "epsilon", 1e-5f));
  fold_.dtype = tensors_[kWeight]->data_type();
  fold_.weight = std::move(data[kWeight]);
  eval::ScaleWeights(fold_.weight, fold_.weight_dims,
                     transpose_ ? eval::WeightLayout::kConvTranspose : eval::WeightLayout::kOutputMajor, group_,
                     affine.scale);
  fold_.bias = tensors_[kConvBias] ? std::move(data[kConvBias]) : std::vector<double>(affine.scale.size(), 0.0);
  eval::FoldIntoBias(fold_.bias, affine);
  const double limit = fold_.dtype == onnx::TensorProto::FLOAT ? 3.4028234663852886e38 : 1.7976931348623157e308;
  auto finite = [&](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [&](double d) { return std::fabs(d) <= limit; });
  };
  if (!finite(fold_.weight) || !finite(fold_.bias))
    return Refusal{"non_finite", "folding " + QuotedNode(bn_) + " into " + QuotedNode(*conv_) +
                                     " gives values that are infinite, NaN or beyond " + DtypeName(fold_.dtype) +
                                     " (input_var + epsilon <= 0, or overflow)"};
  // Value names, not tensor names: a Constant node's tensor may have none.
  fold_.weight_base = graph_.value(values_[kWeight]).name;
  fold_.bias_base = graph_.value(values_[tensors_[kConvBias] ? kConvBias : kShift]).name;
  return std::nullopt;
}

BatchNormRefusal RecordRefusal(const Graph& graph, NodeId bn_id, Refusal refusal) {
  const Node& bn = graph.node(bn_id);
  const ValueId x = ExplicitInput(bn, 0);
  const NodeId producer = x == kNoValue ? kNoNode : graph.value(x).producer;
  const bool has_conv = refusal.reason != "no_conv_producer" && producer != kNoNode;
  return {bn.name, has_conv ? graph.node(producer).name : "", std::move(refusal.reason), std::move(refusal.detail)};
}

// The conv takes over W', B' and the BN's output; the BN goes. Adds the names
// of the constants the pair read to `operands`, which may now be unused.
BatchNormFold Apply(Graph& graph, const Fold& f, std::set<std::string>& operands) {
  const Node& bn = graph.node(f.bn);
  const Node& conv = graph.node(f.conv);
  BatchNormFold record{bn.name, conv.name, graph.NewValueName(f.weight_base + "_bnfolded"),
                       graph.NewValueName(f.bias_base + "_bnfolded")};
  graph.AddInitializer(EncodeTensor(record.weight, f.dtype, f.weight_dims, f.weight));
  graph.AddInitializer(EncodeTensor(record.bias, f.dtype, {static_cast<std::int64_t>(f.bias.size())}, f.bias));
  graph.SetNodeOutput(f.conv, 0, graph.value(bn.outputs[0]).name);
  graph.SetNodeInput(f.conv, 1, record.weight);
  graph.SetNodeInput(f.conv, 2, record.bias);
  graph.RemoveNode(f.bn);
  for (const Node* node : {&conv, &bn})
    for (std::size_t i = 1; i < node->num_explicit_inputs; ++i)
      if (node->inputs[i] != kNoValue) operands.insert(graph.value(node->inputs[i]).name);
  return record;
}

// Initializers and Constant nodes among `names` that nothing reads any more go.
void RemoveUnusedConstants(Graph& graph, const std::set<std::string>& names) {
  for (const std::string& name : names) {
    const auto id = graph.FindValue(name);
    if (!id) continue;
    const Value& v = graph.value(*id);
    if (!v.consumers.empty() || v.is_graph_output) continue;
    if (v.initializer >= 0) graph.RemoveInitializer(*id);
    else graph.RemoveNode(v.producer);  // a Constant node
  }
  graph.CommitEdits();
}

}  // namespace

FoldResult FoldBatchNormIntoConv(Graph& graph) {
  FoldResult result;
  std::vector<Fold> folds;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    if (node.op_type != "BatchNormalization" || !node.domain.empty()) continue;
    auto match = Matcher(graph, id).Run();
    if (auto* refusal = std::get_if<Refusal>(&match))
      result.refused.push_back(RecordRefusal(graph, id, std::move(*refusal)));
    else
      folds.push_back(std::move(std::get<Fold>(match)));
  }
  if (folds.empty()) return result;
  std::set<std::string> operands;
  for (const Fold& f : folds) result.folded.push_back(Apply(graph, f, operands));
  graph.CommitEdits();
  RemoveUnusedConstants(graph, operands);
  return result;
}

}  // namespace onnxfuse
