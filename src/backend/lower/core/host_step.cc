// Host steps (see host_step.h).
#include "backend/lower/core/host_step.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <set>

#include "eval/host_eval.h"
#include "eval/host_eval_sample.h"
#include "eval/host_tensor.h"
#include "backend/lower/core/unsupported.h"
#include "backend/lower/core/views.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

namespace {

// Ops whose output has the multidirectionally broadcast dims of their inputs
// (ONNX Broadcasting.md; one input: its dims): the output dims follow from the
// inputs' even when shape inference left them open.
bool IsElementwise(const std::string& op) {
  static const std::set<std::string> kOps = {
      "Add", "Sub", "Mul", "Div", "Pow", "Mod", "BitShift", "Equal", "Less", "Greater", "LessOrEqual",
      "GreaterOrEqual", "And", "Or", "Xor", "Not", "Where", "Min", "Max", "Sum", "Mean", "Cast", "Identity",
      "Neg", "Abs", "Sign", "Ceil", "Floor", "Round", "Exp", "Log", "Sqrt", "Reciprocal", "Relu", "IsNaN", "IsInf"};
  return kOps.count(op) > 0;
}

// An input of the step: a constant captured at build time, or the data
// pointer at `arg` (index into the step's pointers) of an activation.
struct HostInput {
  std::shared_ptr<const Tensor> constant;
  int arg = -1;
  Dims dims;
  std::int32_t elem_type = onnx::TensorProto::FLOAT;
  std::int32_t data_type = 0;  // the ONNX type the stored values stand for (a zero point's uint8 or int8)
};

struct HostOutput {
  int arg = -1;  // -1: the output is not used
  Dims dims;
  std::int32_t data_type = onnx::TensorProto::FLOAT;
};

Tensor ReadInput(const HostInput& in, const std::vector<void*>& data) {
  Tensor t;
  t.dims = in.dims;
  t.elem_type = in.elem_type;
  t.data_type = in.data_type;
  const auto n = static_cast<std::size_t>(Product(in.dims));
  if (in.elem_type == onnx::TensorProto::INT64) {
    t.int_data.resize(n);
    if (n) std::memcpy(t.int_data.data(), data[static_cast<std::size_t>(in.arg)], n * sizeof(std::int64_t));
  } else {
    t.data.resize(n);
    if (n) std::memcpy(t.data.data(), data[static_cast<std::size_t>(in.arg)], n * sizeof(float));
  }
  return t;
}

void WriteOutput(const Node& node, Tensor t, const HostOutput& out, const std::vector<void*>& data) {
  if (t.dims != out.dims)
    throw Error(ErrorKind::kUnsupported, NodeLabel(node) + ": output of shape " + DimsString(t.dims) +
                                             " at run time, built for " + DimsString(out.dims) +
                                             ": shapes that depend on run-time values are not supported");
  eval::NarrowTo(t, out.data_type);
  void* dst = data[static_cast<std::size_t>(out.arg)];
  if (t.elem_type == onnx::TensorProto::INT64) {
    if (!t.int_data.empty()) std::memcpy(dst, t.int_data.data(), t.int_data.size() * sizeof(std::int64_t));
  } else if (!t.data.empty()) {
    std::memcpy(dst, t.data.data(), t.data.size() * sizeof(float));
  }
}

// Ops whose output shape follows the values of their first input (or of
// every input): no evaluation on zeros tells it.
bool ShapeFollowsValues(const std::string& op) {
  return op == "NonZero" || op == "Range" || op == "Unique" || op == "ConstantOfShape" || op == "Compress";
}

// Ops whose every input is data: the output's dims follow the inputs' dims
// whatever their values (indices included).
bool ShapeFollowsDims(const std::string& op) {
  static const std::set<std::string> kOps = {"Concat", "Gather", "GatherElements", "GatherND", "ScatterElements",
                                             "ScatterND", "Where", "Sum", "Max", "Min", "Mean", "Einsum"};
  return kOps.count(op) > 0;
}

// The output dims of a node whose inputs' values cannot steer them: run-time
// inputs that are float32, or integer data (the first input, or any input of
// a ShapeFollowsDims op), while the integers that steer shapes (TopK's k,
// Reshape's shape, Tile's repeats...) are constants. Then evaluating the node
// once now on zeros of its inputs' dims gives them (Einsum, TopK with a k the
// builder folded, a Concat of indices...): the dims of every output. nullopt
// otherwise, or when the evaluator refuses the zeros.
std::optional<std::vector<Dims>> DimsFromZeros(Builder& b, const Node& node, const std::vector<HostInput>& inputs) {
  if (ShapeFollowsValues(node.op_type)) return std::nullopt;
  std::vector<Tensor> zeros(inputs.size());
  std::vector<const Tensor*> pointers(inputs.size(), nullptr);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].constant) {
      pointers[i] = inputs[i].constant.get();
    } else if (inputs[i].arg >= 0) {
      const bool is_int = inputs[i].elem_type != onnx::TensorProto::FLOAT;
      if (is_int && i > 0 && !ShapeFollowsDims(node.op_type)) return std::nullopt;
      zeros[i].dims = inputs[i].dims;
      zeros[i].elem_type = inputs[i].elem_type;
      if (is_int) zeros[i].int_data.assign(static_cast<std::size_t>(Product(inputs[i].dims)), 0);
      else zeros[i].data.assign(static_cast<std::size_t>(Product(inputs[i].dims)), 0.f);
      pointers[i] = &zeros[i];
    }
  }
  try {
    std::vector<Dims> dims;
    for (const Tensor& t : eval::EvalOnHost(node, pointers, b.graph.opset())) dims.push_back(t.dims);
    return dims;
  } catch (const Error&) {
    return std::nullopt;
  }
}

// The output dims DimsFromZeros gives, evaluated at most once per node.
class ZeroEvaluation {
 public:
  ZeroEvaluation(Builder& b, const Node& node, const std::vector<HostInput>& inputs) : b_(b), node_(node), inputs_(inputs) {}
  /// Output k's dims, or nullptr.
  const Dims* Output(std::size_t k) {
    if (!done_) dims_ = DimsFromZeros(b_, node_, inputs_), done_ = true;
    return dims_ && k < dims_->size() ? &(*dims_)[k] : nullptr;
  }

 private:
  Builder& b_;
  const Node& node_;
  const std::vector<HostInput>& inputs_;
  bool done_ = false;
  std::optional<std::vector<Dims>> dims_;
};

// The dims of output `k`: shape inference's when fully known, else (one
// output of an elementwise op) the broadcast of the inputs' dims, else the
// dims an evaluation on zeros gives (DimsFromZeros).
Dims OutputDims(Builder& b, const Node& node, std::size_t k, const std::vector<HostInput>& inputs, ZeroEvaluation& zeros) {
  const TensorType& type = b.graph.value(node.outputs[k]).type;
  const bool known = type.has_shape && std::all_of(type.dims.begin(), type.dims.end(), [](auto d) { return d >= 0; });
  if (known && b.defaulted_inputs.empty()) return type.dims;
  if (k == 0 && IsElementwise(node.op_type)) {
    Dims out;
    for (const HostInput& in : inputs) out = BroadcastDims(out, in.dims);
    return out;
  }
  if (known) return type.dims;
  if (const Dims* dims = zeros.Output(k)) return *dims;
  const std::string output = b.graph.value(node.outputs[k]).name;
  for (std::size_t i : eval::SampleShapeInputs(node, b.graph.opset()))  // name the input the shape comes from
    if (i < node.num_explicit_inputs && node.inputs[i] != kNoValue && b.IsAct(node.inputs[i]))
      Unsupported(b, node, "input '" + b.graph.value(node.inputs[i]).name +
                               "' must be a constant known at build time: the shape of output '" + output +
                               "' depends on its values");
  Unsupported(b, node, "the shape of output '" + output + "' is not known at build time (it depends on run-time values)");
}

}  // namespace

bool NeedsHostStep(const Builder& b, const Node& node) {
  for (std::size_t i = 0; i < node.num_explicit_inputs; ++i)
    if (node.inputs[i] != kNoValue && b.IsIntAct(node.inputs[i])) return true;
  for (ValueId v : node.outputs) {
    if (v == kNoValue) continue;
    const Value& value = b.graph.value(v);
    const bool read = !value.consumers.empty() || value.is_graph_output;
    if (read && StorageTypeOf(value.type.elem_type) == onnx::TensorProto::INT64) return true;
  }
  return false;
}

void EmitHostStep(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (!eval::HostEvaluable(node)) UnsupportedOp(b, node);
  if (node.op_type == "Dropout") RefuseNonIdentityDropout(b, node);
  std::vector<std::pair<int, Arg>> args;
  std::vector<HostInput> inputs(node.num_explicit_inputs);
  for (std::size_t i = 0; i < node.num_explicit_inputs; ++i) {
    const ValueId v = node.inputs[i];
    HostInput& in = inputs[i];
    if (v == kNoValue) continue;
    if (b.IsAct(v)) {
      const Act& act = b.AnyActOf(v, node);
      const Arg arg = act.elem_type == onnx::TensorProto::FLOAT ? b.UsePlain(v, node) : Arg{act.slot, act.md, {}};
      in.arg = static_cast<int>(args.size()), in.dims = act.dims, in.elem_type = act.elem_type;
      in.data_type = b.graph.value(v).type.elem_type;
      args.emplace_back(static_cast<int>(args.size()), arg);
    } else {
      in.constant = b.SharedConst(v, node);  // the compiles at other shapes share it too
      in.dims = in.constant->dims, in.elem_type = in.constant->elem_type;
      b.weight_bytes += static_cast<std::int64_t>(in.constant->data.size() * sizeof(float) +
                                                  in.constant->int_data.size() * sizeof(std::int64_t));
    }
  }
  std::vector<HostOutput> outputs(node.outputs.size());
  ZeroEvaluation zeros(b, node, inputs);
  dnnl::memory::desc first_md;
  for (std::size_t k = 0; k < node.outputs.size(); ++k) {
    const ValueId v = node.outputs[k];
    if (v == kNoValue) continue;
    const Value& value = b.graph.value(v);
    if (value.consumers.empty() && !value.is_graph_output) continue;
    const std::int32_t storage = StorageTypeOf(value.type.elem_type);
    if (storage == onnx::TensorProto::UNDEFINED)
      Unsupported(b, node, "output '" + value.name + "' has element type " + std::to_string(value.type.elem_type) +
                               ", which the runtime does not hold");
    HostOutput& out = outputs[k];
    out.dims = OutputDims(b, node, k, inputs, zeros);
    out.data_type = value.type.elem_type;
    Act act = b.NewAct(out.dims, StorageDesc(out.dims, storage));
    act.elem_type = storage;
    out.arg = static_cast<int>(args.size());
    args.emplace_back(static_cast<int>(args.size()), Arg{act.slot, act.md, {}});
    if (k == 0) first_md = act.md;
    b.SetAct(v, act);
  }
  const std::int64_t opset = b.graph.opset();
  CustomKernel kernel = [node, inputs, outputs, opset](const std::vector<void*>& data) {
    std::vector<Tensor> read(inputs.size());
    std::vector<const Tensor*> pointers(inputs.size(), nullptr);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].constant) pointers[i] = inputs[i].constant.get();
      else if (inputs[i].arg >= 0) read[i] = ReadInput(inputs[i], data), pointers[i] = &read[i];
    }
    std::vector<Tensor> results = eval::EvalOnHost(node, pointers, opset);
    for (std::size_t k = 0; k < outputs.size(); ++k)
      if (outputs[k].arg >= 0) {
        if (k >= results.size())
          throw Error(ErrorKind::kInternal, "internal error: " + NodeLabel(node) + ": the host evaluator gave " +
                                                std::to_string(results.size()) + " outputs");
        WriteOutput(node, std::move(results[k]), outputs[k], data);
      }
  };
  b.EmitCustom("host", node.name, std::move(args), std::move(kernel), first_md, "onnxfuse:host");
}

}  // namespace onnxfuse::backend
