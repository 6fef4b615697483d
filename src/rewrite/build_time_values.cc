#include "rewrite/build_time_values.h"

#include <algorithm>
#include <exception>
#include <map>
#include <set>
#include <string>

#include "eval/dims.h"
#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "ir/attributes.h"
#include "ir/tensor_io.h"
#include "ir/tensor_values.h"

namespace onnxfuse {

namespace {

using Known = std::optional<Tensor>;

// Exporters' condition chains are a handful of nodes deep; the bound keeps a
// hostile chain from recursing without end.
constexpr int kMaxDepth = 64;

// The operators whose results are known when their inputs are (the list in
// build_time_values.h, less Shape, Size, Squeeze, Unsqueeze and Reshape,
// which take their dims from shape inference).
const std::set<std::string>& EvaluatedOps() {
  static const std::set<std::string> kOps = {
      "Constant", "Identity", "Gather", "Concat", "Cast", "Not", "And", "Or", "Xor", "Equal", "Less", "Greater",
      "LessOrEqual", "GreaterOrEqual", "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Ceil", "Floor", "Relu", "Min",
      "Max", "ReduceProd", "ReduceSum", "ReduceMin", "ReduceMax"};
  return kOps;
}

// The operators whose result is one of their inputs' elements, or its negation,
// absolute value, ceiling or floor: exact at float precision when the inputs
// are. The host evaluator holds DOUBLE values as float, so a DOUBLE result is
// known only from these (a sum or product of doubles rounded to float could
// decide an If the other way).
bool SelectsElements(const std::string& op) {
  static const std::set<std::string> kOps = {"Constant", "Identity", "Gather", "Concat", "Cast", "Squeeze",
                                             "Unsqueeze", "Reshape", "Neg", "Abs", "Ceil", "Floor",
                                             "Relu", "Min", "Max", "ReduceMin", "ReduceMax"};
  return kOps.count(op) > 0;
}

// Whether a float holds every element exactly (integers up to 2^24 and beyond
// when their low bits are zero; float storage always).
bool HeldExactly(const Tensor& t) {
  return std::all_of(t.int_data.begin(), t.int_data.end(), [](std::int64_t v) {
    const float f = static_cast<float>(v);
    return f >= -0x1p63f && f < 0x1p63f && static_cast<std::int64_t>(f) == v;
  });
}

Known FromTensor(const onnx::TensorProto& proto) {
  std::vector<std::int64_t> dims(proto.dims().begin(), proto.dims().end());
  if (std::any_of(dims.begin(), dims.end(), [](auto d) { return d < 0; }) || eval::Product(dims) > kMaxKnownElements)
    return std::nullopt;
  if (proto.data_location() == onnx::TensorProto::EXTERNAL ||
      StorageTypeOf(proto.data_type()) == onnx::TensorProto::UNDEFINED)
    return std::nullopt;
  const std::string where = "constant '" + proto.name() + "'";
  if (proto.data_type() == onnx::TensorProto::DOUBLE) {
    const auto values = DecodeTensor<double>(proto, where);
    if (std::any_of(values.begin(), values.end(),
                    [](double v) { return static_cast<double>(static_cast<float>(v)) != v; }))
      return std::nullopt;  // held as float, it would be another number
  }
  return TensorFromProto(proto, where);
}

// The ONNX element type of a node's result: what the op defines it as.
std::int32_t ResultType(const Node& node, const std::vector<const Tensor*>& inputs) {
  static const std::set<std::string> kBool = {"Not", "And", "Or", "Xor", "Equal", "Less", "Greater", "LessOrEqual",
                                              "GreaterOrEqual"};
  if (kBool.count(node.op_type)) return onnx::TensorProto::BOOL;
  if (node.op_type == "Cast") return static_cast<std::int32_t>(AttrInt(node, "to", 0));
  // Constant: the type of its value, known once evaluated.
  return inputs.empty() || !inputs[0] ? onnx::TensorProto::UNDEFINED : inputs[0]->DataType();
}

class Evaluator {
 public:
  explicit Evaluator(const Graph& graph) : graph_(graph) {}

  Known Value(ValueId id, int depth) {
    if (id == kNoValue || depth > kMaxDepth) return std::nullopt;
    if (auto it = memo_.find(id); it != memo_.end()) return it->second;
    Known result = Compute(id, depth);
    memo_[id] = result;
    return result;
  }

 private:
  Known Compute(ValueId id, int depth) {
    const onnxfuse::Value& value = graph_.value(id);
    if (const onnx::TensorProto* t = graph_.ConstantTensor(id)) return FromTensor(*t);
    if (value.producer == kNoNode) return std::nullopt;
    const Node& node = graph_.node(value.producer);
    if (!node.domain.empty()) return std::nullopt;
    const std::string& op = node.op_type;
    if (op == "Shape" || op == "Size") return ShapeOf(node);
    if (op == "Squeeze" || op == "Unsqueeze" || op == "Reshape") {
      Known data = node.num_explicit_inputs > 0 ? Value(node.inputs[0], depth + 1) : std::nullopt;
      return data ? Retyped(*data, value) : std::nullopt;
    }
    if (!EvaluatedOps().count(op)) return std::nullopt;
    std::vector<Known> known;
    bool partial_shape = false;
    for (std::size_t i = 0; i < node.num_explicit_inputs; ++i) {
      if (node.inputs[i] == kNoValue) {
        known.emplace_back();
        continue;
      }
      known.push_back(Value(node.inputs[i], depth + 1));
      if (known.back()) continue;
      // x.size(1) of an input whose other dims are symbolic: Gather from a
      // Shape needs only the dims it picks.
      if (op == "Gather" && i == 0) known.back() = PartialShape(node.inputs[0]), partial_shape = true;
      if (!known.back()) return std::nullopt;
    }
    std::vector<const Tensor*> inputs;
    for (const Known& k : known) inputs.push_back(k ? &*k : nullptr);
    Known result = Evaluate(node, inputs);
    if (result && partial_shape &&
        std::any_of(result->int_data.begin(), result->int_data.end(), [](std::int64_t d) { return d < 0; }))
      return std::nullopt;  // it picked a dim shape inference left unknown
    return result;
  }

  // The node's first output through the host evaluator, narrowed to the
  // op's result type; nullopt for what the evaluator refuses (an integer
  // division by zero, an index out of range, ...) and for results over the
  // size bound.
  Known Evaluate(const Node& node, const std::vector<const Tensor*>& inputs) const {
    if (!SmallResult(node, inputs)) return std::nullopt;
    std::int32_t type = ResultType(node, inputs);
    if (type == onnx::TensorProto::DOUBLE &&
        (!SelectsElements(node.op_type) ||
         !std::all_of(inputs.begin(), inputs.end(), [](const Tensor* t) { return !t || HeldExactly(*t); })))
      return std::nullopt;
    try {
      std::vector<Tensor> outputs = eval::EvalOnHost(node, inputs, graph_.opset());
      if (outputs.empty() || outputs[0].NumElements() > kMaxKnownElements) return std::nullopt;
      if (type == onnx::TensorProto::UNDEFINED) type = outputs[0].DataType();  // Constant
      if (StorageTypeOf(type) == onnx::TensorProto::UNDEFINED) return std::nullopt;
      eval::NarrowTo(outputs[0], type);
      return std::move(outputs[0]);
    } catch (const std::exception&) {
      return std::nullopt;  // a value it cannot evaluate is unknown, not an error
    }
  }

  // Whether the result stays within the size bound, known before evaluating:
  // elementwise ops broadcast their operands, Gather picks from 1-D data (the
  // form of shape arithmetic), Reduce* reduces a non-empty tensor (the
  // identity of an empty reduction is left to run time).
  static bool SmallResult(const Node& node, const std::vector<const Tensor*>& inputs) {
    const std::string& op = node.op_type;
    if (op == "Gather") return inputs.size() == 2 && inputs[0] && inputs[0]->dims.size() == 1;
    if (op.rfind("Reduce", 0) == 0) return !inputs.empty() && inputs[0] && inputs[0]->NumElements() > 0;
    if (op == "Concat" || op == "Cast" || op == "Constant") return true;
    std::vector<std::int64_t> dims;
    for (const Tensor* t : inputs) {
      if (!t) continue;
      const std::size_t rank = std::max(dims.size(), t->dims.size());
      const auto a = eval::ExpandRank(dims, rank), b = eval::ExpandRank(t->dims, rank);
      dims.assign(rank, 0);
      for (std::size_t d = 0; d < rank; ++d) dims[d] = std::max(a[d], b[d]);
    }
    return eval::Product(dims) <= kMaxKnownElements;
  }

  // Size of a value whose shape inference fixed every dim, or its Shape where
  // the dims it gives are fixed (opset 15's start/end clamp like Slice's).
  Known ShapeOf(const Node& node) const {
    if (node.inputs.empty() || node.inputs[0] == kNoValue) return std::nullopt;
    const TensorType& type = graph_.value(node.inputs[0]).type;
    if (!type.has_shape) return std::nullopt;
    auto known = [&](std::int64_t from, std::int64_t to) {
      return std::all_of(type.dims.begin() + from, type.dims.begin() + to, [](auto d) { return d >= 0; });
    };
    if (node.op_type == "Size") {
      if (!known(0, static_cast<std::int64_t>(type.dims.size()))) return std::nullopt;
      return Int64Tensor({}, {eval::Product(type.dims)});
    }
    const auto rank = static_cast<std::int64_t>(type.dims.size());
    auto clamp = [&](std::int64_t i) { return std::clamp(i < 0 ? i + rank : i, std::int64_t{0}, rank); };
    const std::int64_t start = clamp(AttrInt(node, "start", 0)), end = clamp(AttrInt(node, "end", rank));
    if (start < end && !known(start, end)) return std::nullopt;
    if (start >= end) return Int64Tensor({0}, {});
    return Int64Tensor({end - start}, std::vector<std::int64_t>(type.dims.begin() + start, type.dims.begin() + end));
  }

  // The output of a Shape node (no start/end) with -1 for the dims shape inference left unknown.
  Known PartialShape(ValueId id) const {
    if (id == kNoValue || graph_.value(id).producer == kNoNode) return std::nullopt;
    const Node& shape = graph_.node(graph_.value(id).producer);
    if (shape.op_type != "Shape" || !shape.domain.empty() || FindAttr(shape, "start") || FindAttr(shape, "end") ||
        shape.inputs.empty() || shape.inputs[0] == kNoValue)
      return std::nullopt;
    const TensorType& type = graph_.value(shape.inputs[0]).type;
    if (!type.has_shape) return std::nullopt;
    std::vector<std::int64_t> dims;
    for (auto d : type.dims) dims.push_back(d < 0 ? -1 : d);
    return Int64Tensor({static_cast<std::int64_t>(dims.size())}, dims);
  }

  // Squeeze / Unsqueeze / Reshape keep the elements; the dims are those shape
  // inference gave the output (their axes or shape input need not be known).
  static Known Retyped(Tensor a, const onnxfuse::Value& out) {
    if (!out.type.has_shape || eval::Product(out.type.dims) != a.NumElements()) return std::nullopt;
    a.dims = out.type.dims;
    return a;
  }

  static Tensor Int64Tensor(std::vector<std::int64_t> dims, std::vector<std::int64_t> values) {
    Tensor t;
    t.elem_type = t.data_type = onnx::TensorProto::INT64;
    t.dims = std::move(dims);
    t.int_data = std::move(values);
    return t;
  }

  const Graph& graph_;
  std::map<ValueId, Known> memo_;
};

}  // namespace

std::optional<KnownTensor> KnownValue(const Graph& graph, ValueId value) {
  Known t = Evaluator(graph).Value(value, 0);
  if (!t) return std::nullopt;
  return KnownTensor{t->DataType(), t->dims, eval::HostValues(*t)};
}

std::optional<double> KnownScalar(const Graph& graph, ValueId value) {
  auto known = KnownValue(graph, value);
  if (!known || known->values.size() != 1) return std::nullopt;
  return known->values[0];
}

}  // namespace onnxfuse
