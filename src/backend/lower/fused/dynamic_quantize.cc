#include "backend/lower/fused/dynamic_quantize.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "backend/kernels/dynamic_quantize.h"
#include "backend/kernels/quantize_linear.h"
#include "backend/lower/core/kernel_operand.h"
#include "backend/lower/fused/int8_matmul.h"
#include "ir/fake_quantization.h"

namespace onnxfuse::backend {

namespace {

// The Subs reading the Cast output `c` as (c - cz), cz the output of one of
// `z_casts`, when they are all of c's readers and c is no graph output:
// then only the shifted values are needed. Empty otherwise.
std::vector<const Node*> ShiftingSubs(const Graph& graph, ValueId c, const std::vector<const Node*>& z_casts) {
  const Value& value = graph.value(c);
  if (value.is_graph_output || value.consumers.empty()) return {};
  std::vector<const Node*> subs;
  for (NodeId s : value.consumers) {
    const Node& n = graph.node(s);
    const bool of_z = n.inputs.size() == 2 && std::any_of(z_casts.begin(), z_casts.end(), [&](const Node* z) {
                        return z->outputs.at(0) == n.inputs[1];
                      });
    if (n.op_type != "Sub" || !n.domain.empty() || n.inputs[0] != c || !of_z) return {};
    subs.push_back(&n);
  }
  return subs;
}

bool Read(const Graph& graph, ValueId v) {
  return v != kNoValue && (graph.value(v).is_graph_output || !graph.value(v).consumers.empty());
}

}  // namespace

bool LowerDynamicQuantize(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (!b.fuse && b.fake_quantize) return false;  // the unfused plan as the model asks: the host step
  const auto casts = FloatCastsOfDynamicQuantize(b.graph, node);
  const ValueId x = node.inputs.at(0);
  if (!casts || !b.IsAct(x) || b.AnyActOf(x, node).elem_type != onnx::TensorProto::FLOAT) return false;
  const std::vector<const Node*>* y_casts = &casts->first;
  const std::vector<const Node*>* z_casts = &casts->second;

  // What the readers need: y as float, y - z as float (or, for int8
  // matmuls, y as u8 with z as s32), y_scale, z as float.
  const Dims dims = b.AnyActOf(x, node).dims;
  std::vector<ValueId> plain, shifted, quantized, zero_points;
  std::vector<const Node*> absorbed(y_casts->begin(), y_casts->end());
  absorbed.insert(absorbed.end(), z_casts->begin(), z_casts->end());
  for (const Node* cast : *y_casts) {
    if (!Read(b.graph, cast->outputs[0])) continue;
    const std::vector<const Node*> subs = ShiftingSubs(b.graph, cast->outputs[0], *z_casts);
    if (subs.empty()) plain.push_back(cast->outputs[0]);
    for (const Node* sub : subs) {
      const ValueId v = sub->outputs[0];
      const auto& readers = b.graph.value(v).consumers;
      const bool int8 = !b.graph.value(v).is_graph_output && !readers.empty() &&
                        std::all_of(readers.begin(), readers.end(), [&](NodeId r) {
                          return ReadsAsInt8MatMul(b, b.graph.node(r), v, dims);
                        });
      (int8 ? quantized : shifted).push_back(v);
      absorbed.push_back(sub);
    }
  }
  for (const Node* cast : *z_casts) {
    const ValueId cz = cast->outputs[0];
    const Value& value = b.graph.value(cz);
    const bool only_subs = !value.is_graph_output && std::all_of(value.consumers.begin(), value.consumers.end(), [&](NodeId c) {
      return std::find(absorbed.begin(), absorbed.end(), &b.graph.node(c)) != absorbed.end();
    });
    if (!only_subs) zero_points.push_back(cz);
  }
  if (plain.empty() && shifted.empty() && quantized.empty()) return false;
  const ValueId scale_value = node.outputs[1];

  std::vector<std::pair<int, Arg>> args;
  const KernelOperand<float> in = FloatKernelOperand(b, x, node, args);
  auto output = [&](const Dims& d, dnnl::memory::data_type type = dnnl::memory::data_type::f32) {
    const Act act = b.NewAct(d, PlainDesc(d, type));
    args.emplace_back(static_cast<int>(args.size()), Arg{act.slot, act.md, {}});
    return std::make_pair(act, static_cast<int>(args.size()) - 1);
  };
  std::optional<std::pair<Act, int>> y_plain, y_shifted, y_u8, z_s32, scale, zero_point;
  if (!plain.empty()) y_plain = output(dims);
  if (!shifted.empty()) y_shifted = output(dims);
  if (!quantized.empty()) y_u8 = output(dims, dnnl::memory::data_type::u8), z_s32 = output({}, dnnl::memory::data_type::s32);
  if (Read(b.graph, scale_value)) scale = output(b.graph.value(scale_value).type.dims);
  if (!zero_points.empty()) zero_point = output(b.graph.value(zero_points[0]).type.dims);
  auto at = [](const std::optional<std::pair<Act, int>>& o) { return o ? o->second : -1; };
  const int plain_arg = at(y_plain), shifted_arg = at(y_shifted), u8_arg = at(y_u8), s32_arg = at(z_s32),
            scale_arg = at(scale), zero_arg = at(zero_point);
  const std::int64_t count = Product(dims);
  const auto values = b.fake_quantize ? DynamicQuantizeToFloat : DynamicScaleToFloat;
  CustomKernel kernel = [=](const std::vector<void*>& data) {
    auto ptr = [&](int arg) { return static_cast<float*>(data[static_cast<std::size_t>(arg)]); };
    const float* xs = in.Data(data);
    const DynamicQuantization q = DynamicQuantizationOf(xs, count);
    if (plain_arg >= 0) values(xs, ptr(plain_arg), count, q, 0.0f);
    if (shifted_arg >= 0) values(xs, ptr(shifted_arg), count, q, static_cast<float>(q.zero_point));
    if (u8_arg >= 0) {  // the same y, as bytes (quantize_linear.h), and its zero point
      QuantizeLinear(xs, data[static_cast<std::size_t>(u8_arg)], Int8Type::kUint8, count, q.scale, q.zero_point);
      *static_cast<std::int32_t*>(data[static_cast<std::size_t>(s32_arg)]) = q.zero_point;
    }
    if (scale_arg >= 0) *ptr(scale_arg) = q.scale;
    if (zero_arg >= 0) *ptr(zero_arg) = static_cast<float>(q.zero_point);
  };
  const Act& first = y_shifted ? y_shifted->first : y_plain ? y_plain->first : y_u8->first;
  b.EmitCustom("dynamic_quantize", node.name, std::move(args), std::move(kernel), first.md, "onnxfuse:dynamic_quantize");
  for (ValueId v : plain) b.SetAct(v, y_plain->first);
  for (ValueId v : shifted) b.SetAct(v, y_shifted->first);
  for (ValueId v : quantized) {
    Act act = y_u8->first;
    act.elem_type = onnx::TensorProto::UINT8;
    act.zero_point_slot = z_s32->first.slot;
    b.SetAct(v, act);
  }
  for (ValueId v : zero_points) b.SetAct(v, zero_point->first);
  if (scale) b.SetAct(scale_value, scale->first);
  Absorb(b, absorbed);
  return true;
}

}  // namespace onnxfuse::backend
