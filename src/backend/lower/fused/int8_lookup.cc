#include "backend/lower/fused/int8_lookup.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "backend/kernels/byte_lookup.h"
#include "backend/lower/fused/int8_conv.h"
#include "backend/lower/fused/quantize_dequantize.h"
#include "eval/host_eval.h"
#include "ir/fake_quantization.h"

namespace onnxfuse::backend {

namespace {

// Elementwise ops whose result at an element depends on that element of
// their inputs alone (ONNX Operators.md), float in, float out.
const std::set<std::string>& Elementwise() {
  static const std::set<std::string> ops = {
      "Abs",  "Add",         "Celu",     "Clip", "Div",       "Elu",      "Erf",  "Exp",     "Gelu",
      "HardSigmoid", "HardSwish", "LeakyRelu", "Log",  "Max",  "Min",       "Mish",     "Mul",  "Neg",     "Pow",
      "Reciprocal", "Relu",  "Selu",     "Sigmoid", "Softplus", "Softsign", "Sqrt", "Sub", "Tanh", "ThresholdedRelu"};
  return ops;
}

struct Region {
  std::vector<NodeId> nodes;  ///< in graph (topological) order
  NodeId quantize = kNoNode;
};

// The region after `dq`'s output, or nullopt.
std::optional<Region> RegionAfter(Builder& b, const Node& dq) {
  const Graph& g = b.graph;
  std::set<ValueId> inside = {dq.outputs.at(0)};
  std::set<NodeId> nodes;
  Region region;
  std::vector<ValueId> pending = {dq.outputs[0]};
  while (!pending.empty()) {
    const ValueId v = pending.back();
    pending.pop_back();
    if (g.value(v).is_graph_output || g.value(v).consumers.empty()) return std::nullopt;
    for (NodeId c : g.value(v).consumers) {
      if (nodes.count(c) || c == region.quantize) continue;
      const Node& n = g.node(c);
      if (!n.domain.empty()) return std::nullopt;
      if (n.op_type == "QuantizeLinear") {
        if (region.quantize != kNoNode || n.inputs.at(0) != v) return std::nullopt;
        region.quantize = c;
        continue;
      }
      if (!Elementwise().count(n.op_type) || n.outputs.size() != 1) return std::nullopt;
      for (ValueId in : n.inputs)  // the region's values, or scalar constants
        if (in != kNoValue && !inside.count(in) && !(b.IsConst(in) && Product(b.ConstDims(in, n)) == 1))
          return std::nullopt;
      nodes.insert(c);
      inside.insert(n.outputs[0]);
      pending.push_back(n.outputs[0]);
    }
  }
  if (region.quantize == kNoNode || nodes.empty()) return std::nullopt;
  // The quantized value is the region's only way out.
  const ValueId last = g.node(region.quantize).inputs[0];
  if (g.value(last).consumers.size() != 1) return std::nullopt;
  region.nodes.assign(nodes.begin(), nodes.end());  // NodeIds: graph order
  return region;
}

// q2 for each value of q: DequantizeLinear, the region, QuantizeLinear on the host.
std::optional<std::array<std::int64_t, 256>> Table(Builder& b, const Node& dq, const Region& region,
                                                   std::int32_t q_type) {
  std::map<ValueId, Tensor> values;
  Tensor q;
  q.elem_type = onnx::TensorProto::INT64;
  q.data_type = q_type;
  q.dims = {256};
  const std::int64_t low = q_type == onnx::TensorProto::UINT8 ? 0 : -128;
  for (std::int64_t i = 0; i < 256; ++i) q.int_data.push_back(low + i);
  values[dq.inputs[0]] = q;
  std::vector<NodeId> order = {b.graph.value(dq.outputs[0]).producer};
  order.insert(order.end(), region.nodes.begin(), region.nodes.end());
  order.push_back(region.quantize);
  for (NodeId id : order) {
    const Node& n = b.graph.node(id);
    std::vector<const Tensor*> inputs;
    for (ValueId v : n.inputs) {
      if (v == kNoValue) {
        inputs.push_back(nullptr);
        continue;
      }
      if (!values.count(v)) values[v] = b.Const(v, n);
      inputs.push_back(&values.at(v));
    }
    std::vector<Tensor> out = eval::EvalOnHost(n, inputs, b.graph.opset());
    for (std::size_t i = 0; i < out.size() && i < n.outputs.size(); ++i)
      if (n.outputs[i] != kNoValue) values[n.outputs[i]] = std::move(out[i]);
  }
  const Tensor& result = values.at(b.graph.node(region.quantize).outputs.at(0));
  if (result.int_data.size() != 256) return std::nullopt;
  std::array<std::int64_t, 256> table{};
  std::copy(result.int_data.begin(), result.int_data.end(), table.begin());
  return table;
}

}  // namespace

bool LowerInt8Lookup(Builder& b, const Node& q_node, const Node& dq) {
  if (!b.fuse || !b.fake_quantize) return false;
  const ValueId q = q_node.outputs.at(0);
  if (!b.IsInt8Act(q)) return false;
  const std::optional<Region> region = RegionAfter(b, dq);
  if (!region) return false;
  const Node& quantize = b.graph.node(region->quantize);
  const auto readers = DequantizeReaders(b.graph, quantize);
  const auto out = readers ? SharedQuantization(b, quantize, *readers) : std::nullopt;
  if (!out || !IsInt8Type(out->type)) return false;
  const Act& in = b.AnyActOf(q, dq);
  std::optional<std::array<std::int64_t, 256>> table;
  try {
    table = Table(b, dq, *region, in.elem_type);
  } catch (const Error&) {  // an op the host evaluator refuses here: the float steps run it
    return false;
  }
  if (!table) return false;

  const Arg src = IsDense(in.md) ? Arg{in.slot, in.md, {}}
                                 : b.UseQuantized(q, WithDataType(PlainDesc(in.dims), in.md.data_type()), dq);
  const dnnl::memory::desc md = WithDataType(src.md, OneDnnType(out->type));
  Act dst = b.NewAct(in.dims, md);
  dst.elem_type = out->type, dst.scale = out->scale, dst.zero_point = out->zero_point;
  // Indexed by q's byte: table[i] is for q = i (uint8) or i - 128 (int8).
  std::array<std::uint8_t, 256> bytes{};
  const int offset = in.elem_type == onnx::TensorProto::UINT8 ? 0 : 128;
  for (int byte = 0; byte < 256; ++byte) {
    const int value = in.elem_type == onnx::TensorProto::UINT8 ? byte : static_cast<std::int8_t>(byte);
    bytes[static_cast<std::size_t>(byte)] = static_cast<std::uint8_t>((*table)[static_cast<std::size_t>(value + offset)]);
  }
  const auto count = static_cast<std::int64_t>(src.md.get_size());
  std::string label = dq.name;
  for (NodeId id : region->nodes) label += "+" + b.graph.node(id).name;
  label += "+" + quantize.name;
  b.EmitCustom("lookup", label, {{0, src}, {1, Arg{dst.slot, md, {}}}},
               [=](const std::vector<void*>& data) {
                 LookupBytes(bytes, static_cast<const std::uint8_t*>(data[0]), static_cast<std::uint8_t*>(data[1]),
                             count);
               },
               md, "onnxfuse:lookup");
  b.SetAct(quantize.outputs.at(0), dst);
  std::vector<const Node*> absorbed;
  for (NodeId id : region->nodes) absorbed.push_back(&b.graph.node(id));
  absorbed.push_back(&quantize);
  Absorb(b, absorbed);
  DequantizeForFloatReaders(b, quantize);
  return true;
}

}  // namespace onnxfuse::backend
