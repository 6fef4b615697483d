#include "backend/lower/fused/int8_conv.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "backend/kernels/quantize_linear.h"
#include "backend/lower/core/conv_geometry.h"
#include "backend/lower/core/onednn_limits.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/fused/int8_add.h"
#include "backend/lower/fused/int8_lookup.h"
#include "backend/lower/fused/int8_qdq_matmul.h"
#include "backend/lower/ops/conv.h"
#include "ir/attributes.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

using dnnl::memory;
using Kind = PostOp::Kind;

namespace {

// W's scales, one per output channel, and its int8 values, from the
// DequantizeLinear `dq` of a constant int8 tensor of `channels` output channels.
bool QuantizedWeights(Builder& b, const Node& dq, QuantizedConv& out, std::string& why) {
  why = "its weights are not the DequantizeLinear of constant int8 values with zero point 0 and one scale per "
        "tensor or per output channel";
  const ValueId w = dq.inputs.at(0), scale = dq.inputs.size() > 1 ? dq.inputs[1] : kNoValue;
  const ValueId zero = dq.inputs.size() > 2 ? dq.inputs[2] : kNoValue;
  if (!b.HasConstData(w) || scale == kNoValue || !b.HasConstData(scale) || (zero != kNoValue && !b.HasConstData(zero)))
    return false;
  out.weights = b.SharedConst(w, dq);
  const Tensor& t = *out.weights;
  if (t.DataType() != onnx::TensorProto::INT8) return false;
  if (t.dims.size() != 4) {
    why = "it is a " + std::to_string(t.dims.size() - 2) + "-D convolution: int8 is lowered for 2-D ones";
    return false;
  }
  const std::int64_t channels = t.dims[0];
  const Tensor& s = b.Const(scale, dq);
  if (s.NumElements() == 1) {
    out.weight_scales.assign(static_cast<std::size_t>(channels), s.data.at(0));
  } else {
    if (s.NumElements() != channels || AttrInt(dq, "axis", 1) != 0) return false;
    out.weight_scales = s.data;
  }
  if (!std::all_of(out.weight_scales.begin(), out.weight_scales.end(), [](float f) { return f > 0 && std::isfinite(f); }))
    return false;
  if (zero != kNoValue) {
    const Tensor& z = b.Const(zero, dq);
    if (!std::all_of(z.int_data.begin(), z.int_data.end(), [](std::int64_t v) { return v == 0; })) return false;
  }
  return SumsWithoutSaturation(t, why);
}

// One eltwise post-op: algorithm, alpha, beta.
struct Eltwise {
  dnnl::algorithm alg;
  float alpha, beta;
};

// The chain's post-ops for an int8 convolution whose result is divided by
// `out_scale` (y's scale when it is requantized, else 1), then y's zero point
// added; nullopt when one is not ReLU, Clip or linear, which commute with
// that division. Neighbouring linear steps are merged into one: oneDNN 2.6's
// int8 convolutions (jit_uni_int8, jit_uni_int8_1x1 on AVX2) applied the
// first one's alpha and beta to both (measured: x * 0.5 then + 121 gave
// x * 0.25). Nullopt too when an algorithm still comes twice, which those
// kernels get wrong alike (measured: Clip twice, 30 steps off).
std::optional<dnnl::post_ops> ScaledPostOps(const Chain& chain, double out_scale, std::int64_t zero_point) {
  std::vector<Eltwise> steps;
  const auto add = [&steps](Eltwise e) {
    if (e.alg == dnnl::algorithm::eltwise_linear && !steps.empty() && steps.back().alg == e.alg) {
      Eltwise& last = steps.back();  // e(last(v)) = e.alpha * (last.alpha * v + last.beta) + e.beta
      last = {e.alg, e.alpha * last.alpha, e.alpha * last.beta + e.beta};
    } else {
      steps.push_back(e);
    }
  };
  for (const PostOp& po : chain.post_ops) {
    if (po.kind != Kind::kEltwise) return std::nullopt;
    const auto f = [&](float v) { return static_cast<float>(v / out_scale); };
    if (po.alg == dnnl::algorithm::eltwise_relu) add({po.alg, po.alpha, 0.f});
    else if (po.alg == dnnl::algorithm::eltwise_clip) add({po.alg, f(po.alpha), f(po.beta)});
    else if (po.alg == dnnl::algorithm::eltwise_linear) add({po.alg, po.alpha, f(po.beta)});
    else return std::nullopt;
  }
  // y's zero point as a last linear step: oneDNN rounds (to nearest even)
  // and saturates after it, and round(v + z) = round(v) + z for an integer
  // z. The same as a destination zero point, which oneDNN 2.6's jit int8
  // convolution applies in a slower epilogue.
  if (zero_point != 0) add({dnnl::algorithm::eltwise_linear, 1.f, static_cast<float>(zero_point)});
  dnnl::post_ops ops;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j)
      if (steps[j].alg == steps[i].alg) return std::nullopt;
    ops.append_eltwise(1.f, steps[i].alg, steps[i].alpha, steps[i].beta);
  }
  return ops;
}

// A "quantize" step: the integer value `q` (QuantizeLinear `node`'s output)
// of the float activation `x`, in x's layout.
void EmitQuantize(Builder& b, const Node& node, ValueId x, const PerTensor& p) {
  const Arg src = IsDense(b.ActOf(x, node).md) ? b.UseAsIs(x, node) : b.UsePlain(x, node);
  const memory::desc md = WithDataType(src.md, OneDnnType(p.type));
  Act dst = b.NewAct(b.ActOf(x, node).dims, md);
  dst.elem_type = p.type, dst.scale = p.scale, dst.zero_point = p.zero_point;
  const auto count = static_cast<std::int64_t>(md.get_size());
  const Int8Type type = KernelType(p.type);
  const float scale = p.scale;
  const auto zero_point = static_cast<std::int32_t>(p.zero_point);
  b.EmitCustom("quantize", node.name, {{0, src}, {1, Arg{dst.slot, md, {}}}},
               [=](const std::vector<void*>& data) {
                 QuantizeLinear(static_cast<const float*>(data[0]), data[1], type, count, scale, zero_point);
               },
               md);
  b.SetAct(node.outputs.at(0), dst);
}

// The int8 convolution itself; false, with nothing emitted, when oneDNN has
// no fast implementation or a post-op does not commute with the scales.
bool TryInt8(Builder& b, const Chain& chain, const QuantizedConv& qc, std::string& why) {
  if (!chain.affine.scale.empty()) {
    why = "a BatchNormalization folded into it";
    return false;
  }
  const Node& node = b.graph.node(chain.anchor);
  const Node* quantize = chain.quantize != kNoNode ? &b.graph.node(chain.quantize) : nullptr;
  // y's quantization when the chain ends in QuantizeLinear; scale 1, float32 otherwise.
  PerTensor out{1.f, 0, onnx::TensorProto::FLOAT};
  if (quantize) {
    const std::optional<PerTensor> p = PerTensorOf(b, *quantize, onnx::TensorProto::UINT8);
    if (!p) return false;  // TakeQuantize read it
    out = *p;
  }
  const double out_scale = out.scale;
  std::optional<dnnl::post_ops> ops = ScaledPostOps(chain, out_scale, out.zero_point);
  if (!ops) {
    why = "its steps after it are not Relu, Clip and linear ones, each at most once";
    return false;
  }

  const Dims x = b.AnyActOf(qc.src, node).dims, &w = qc.weights->dims;
  const ConvGeometry g = ConvGeometryOf(b, node, x, w);
  const std::int64_t group = AttrInt(node, "group", 1), channels = w[0];
  Dims wdims = w;
  if (group > 1) {  // goihw: the same bytes as oihw
    wdims = {group, channels / group};
    wdims.insert(wdims.end(), w.begin() + 1, w.end());
  }
  const double src_scale = qc.src_quantization.scale;
  std::vector<float> scales(static_cast<std::size_t>(channels));
  std::vector<double> bias = BiasOf(b, node, 2, channels);
  for (std::size_t c = 0; c < scales.size(); ++c) {
    const double accumulator = src_scale * qc.weight_scales[c];  // the float value of one unit of the sum
    scales[c] = static_cast<float>(accumulator / out_scale);
    bias[c] /= accumulator;
  }
  const bool per_channel = std::any_of(scales.begin(), scales.end(), [&](float s) { return s != scales[0]; });

  using ConvPd = dnnl::convolution_forward::primitive_desc;
  dnnl::primitive_attr attr = b.Attr(*ops);
  attr.set_output_scales(per_channel ? 1 << 1 : 0, per_channel ? scales : std::vector<float>{scales[0]});
  if (qc.src_quantization.zero_point != 0)
    attr.set_zero_points(DNNL_ARG_SRC, 0, {static_cast<std::int32_t>(qc.src_quantization.zero_point)});
  const memory::desc src_md(x, OneDnnType(qc.src_quantization.type), memory::format_tag::any);
  const memory::desc dst_md(g.out, quantize ? OneDnnType(out.type) : memory::data_type::f32, memory::format_tag::any);
  ConvPd pd;
  try {
    pd = ConvPd(dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                dnnl::algorithm::convolution_direct, src_md,
                                                memory::desc(wdims, memory::data_type::s8, memory::format_tag::any),
                                                PlainDesc({channels}), dst_md, g.strides, g.dil, g.pl, g.pr),
                attr, b.engine);
  } catch (const dnnl::error&) {
    why = "oneDNN has no int8 convolution for it";
    return false;
  }
  if (IsSlowPrimitive("conv", pd)) {  // ref_int8, or gemm_s8s8s32 (a grouped 3x3): the float path is jit
    why = std::string("oneDNN has only its ") + (std::string(pd.impl_info_str()).rfind("ref", 0) == 0 ? "reference" : "gemm-based") +
          " int8 kernel for it";
    return false;
  }
  if (!Int8ConvZeroPointRight(pd.impl_info_str(), qc.src_quantization.zero_point)) {
    why = "oneDNN's gemm-based int8 convolution gets a source zero point wrong (onednn_limits.h, limit 7)";
    return false;
  }

  const Arg src = b.UseQuantized(qc.src, pd.src_desc(), node);
  std::vector<std::int8_t> plain_weights;  // w_int8 as bytes, oihw: made only when packed now
  const memory weights = b.PackedConstant(chain.anchor, "int8 weights", pd.weights_desc(), [&] {
    plain_weights.assign(qc.weights->int_data.begin(), qc.weights->int_data.end());
    const memory::desc plain(wdims, memory::data_type::s8, wdims.size() == 4 ? memory::format_tag::oihw
                                                                               : memory::format_tag::goihw);
    return memory(plain, b.engine, plain_weights.data());
  });
  // The bias in the sum's units: its own key, never a float convolution's
  // "bias" (a plan file built where this node ran in float, or the reverse).
  const memory::desc bias_md = PlainDesc({channels});
  const std::vector<float> bias_values(bias.begin(), bias.end());
  const memory bias_memory = b.PackedConstant(chain.anchor, "int8 bias", bias_md, [&] {
    return b.HostView(bias_md, bias_values.data());
  });
  Act dst = b.NewAct(g.out, pd.dst_desc());
  dst.elem_type = out.type, dst.scale = out.scale, dst.zero_point = out.zero_point;
  b.Emit(pd, "conv", ChainLabel(b, chain),
         {{DNNL_ARG_SRC, src},
          {DNNL_ARG_WEIGHTS, Arg{-1, weights.get_desc(), weights}},
          {DNNL_ARG_BIAS, Arg{-1, bias_memory.get_desc(), bias_memory}},
          {DNNL_ARG_DST, Arg{dst.slot, dst.md, {}}}},
         dst.md);
  b.SetAct(chain.out, dst);
  return true;
}

}  // namespace

Int8Type KernelType(std::int32_t type) { return type == onnx::TensorProto::UINT8 ? Int8Type::kUint8 : Int8Type::kInt8; }

std::optional<PerTensor> SourceQuantization(Builder& b, ValueId q, const Node& dq, const Node& user) {
  std::optional<PerTensor> p;
  if (b.IsInt8Act(q)) {
    const Act& a = b.AnyActOf(q, user);
    p = PerTensor{a.scale, a.zero_point, a.elem_type};
  } else {
    p = PerTensorOf(b, dq, b.graph.value(q).type.elem_type);
  }
  if (!p || !IsInt8Type(p->type) || !(p->scale > 0) || !std::isfinite(p->scale)) return std::nullopt;
  return p;
}

bool SumsWithoutSaturation(const Tensor& w, std::string& why) {
  if (HasInt8DotProduct()) return true;
  std::int64_t largest = 0;
  for (std::int64_t v : w.int_data) largest = std::max(largest, std::abs(v));
  if (largest <= 64) return true;  // see "Saturation"; onednn_limits.h, limit 6
  why = "its weights reach |w| = " + std::to_string(largest) +
        ", over 64: without VNNI oneDNN's int8 kernels would saturate their 16-bit pair sums";
  return false;
}

bool SourceRunsInt8(std::int32_t type, std::string& why) {
  // Without VNNI, oneDNN runs an s8 source as u8 (x + 128) and halves the
  // weights to keep the pair sums in 16 bits, losing their last bit: see
  // "Saturation"; onednn_limits.h, limit 6.
  if (type == onnx::TensorProto::UINT8 || HasInt8DotProduct()) return true;
  why = "its input is int8: without VNNI oneDNN runs it as uint8 with halved weights, losing a bit";
  return false;
}

void DequantizeIfOnlyInteger(Builder& b, const Node& dq, const Node& user) {
  const ValueId v = dq.outputs.at(0), q = dq.inputs.at(0);
  if (b.IsAct(v) || q == kNoValue || !b.IsInt8Act(q)) return;
  const Act& a = b.AnyActOf(q, user);
  EmitDequantize(b, q, PerTensor{a.scale, a.zero_point, a.elem_type}, v, user, dq.name);
}

const Node* DequantizeProducing(const Builder& b, ValueId v) {
  const NodeId p = b.graph.value(v).producer;
  if (p == kNoNode) return nullptr;
  const Node& node = b.graph.node(p);
  return node.op_type == "DequantizeLinear" && node.domain.empty() ? &node : nullptr;
}

void EmitDequantize(Builder& b, ValueId q, const PerTensor& p, ValueId v, const Node& user, const std::string& label) {
  const Act& a = b.AnyActOf(q, user);
  const Arg src = IsDense(a.md) ? Arg{a.slot, a.md, {}}
                                : b.UseQuantized(q, WithDataType(PlainDesc(a.dims), a.md.data_type()), user);
  const memory::desc md = WithDataType(src.md, memory::data_type::f32);
  const Act dst = b.NewAct(a.dims, md);
  const auto count = static_cast<std::int64_t>(src.md.get_size());
  const Int8Type type = KernelType(p.type);
  const float scale = p.scale;
  const auto zero_point = static_cast<std::int32_t>(p.zero_point);
  b.EmitCustom("dequantize", label, {{0, src}, {1, Arg{dst.slot, md, {}}}},
               [=](const std::vector<void*>& data) {
                 DequantizeLinear(data[0], type, static_cast<float*>(data[1]), count, scale, zero_point);
               },
               md);
  b.SetAct(v, dst);
}

std::optional<QuantizedConv> QuantizedConvOf(Builder& b, const Node& conv, std::string* why) {
  std::string reason;
  std::string& r = why ? *why : reason;
  r = "its input or weights are not DequantizeLinear outputs";
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2) return std::nullopt;
  const Node* x = DequantizeProducing(b, conv.inputs[0]);
  const Node* w = DequantizeProducing(b, conv.inputs[1]);
  if (!x || !w || x->inputs.at(0) == kNoValue) return std::nullopt;
  QuantizedConv qc;
  if (!QuantizedWeights(b, *w, qc, r)) return std::nullopt;
  r = "its input is not a per-tensor uint8 or int8 quantization";
  qc.src = x->inputs[0];
  const std::optional<PerTensor> src = SourceQuantization(b, qc.src, *x, conv);
  if (!src) return std::nullopt;
  qc.src_quantization = *src;
  if (!SourceRunsInt8(src->type, r)) return std::nullopt;
  if (conv.inputs.size() > 2 && conv.inputs[2] != kNoValue) {  // B: known at build time, or the dequantized constant
    const ValueId bias = conv.inputs[2];
    const Node* dq = DequantizeProducing(b, bias);
    const bool known = b.HasConstData(bias) || (dq && std::all_of(dq->inputs.begin(), dq->inputs.end(), [&](ValueId v) {
                                                  return v == kNoValue || b.HasConstData(v);
                                                }));
    if (!known) {
      r = "its bias is computed at run time";
      return std::nullopt;
    }
  }
  r.clear();
  return qc;
}

bool ReadsAsInt8(Builder& b, const Node& reader, ValueId v) {
  if (!b.fuse || !b.fake_quantize || !reader.domain.empty() || reader.inputs.empty()) return false;
  if (std::count(reader.inputs.begin(), reader.inputs.end(), v) != 1) return false;
  if (reader.op_type == "Add") return QuantizedAddOf(b, reader).has_value();  // either input
  if (reader.inputs[0] != v) return false;
  if (reader.op_type == "MatMul") return QuantizedMatMulOf(b, reader).has_value();
  return reader.op_type == "Conv" && QuantizedConvOf(b, reader, nullptr).has_value();
}

bool TakeQuantize(Builder& b, Chain& chain, NodeId id) {
  if (!b.fuse || !b.fake_quantize || chain.quantize != kNoNode || !chain.affine.scale.empty()) return false;
  const Node& anchor = b.graph.node(chain.anchor);
  if (anchor.op_type == "Add") return TakeQuantizeAfterAdd(b, chain, id);
  const Node& q = b.graph.node(id);
  if (q.inputs.at(0) != chain.out || b.graph.value(chain.out).is_graph_output ||
      b.graph.value(chain.out).consumers.size() != 1)
    return false;
  const auto qc = QuantizedConvOf(b, anchor, nullptr);
  if (!qc || !b.IsInt8Act(qc->src)) return false;
  const auto readers = DequantizeReaders(b.graph, q);
  if (!readers) return false;
  const auto shared = SharedQuantization(b, q, *readers);
  if (!shared || !IsInt8Type(shared->type) || !ScaledPostOps(chain, 1.0, shared->zero_point)) return false;
  chain.quantize = id;
  chain.members.push_back(id);
  chain.out = q.outputs.at(0);
  return true;
}

bool LowerQuantize(Builder& b, NodeId id) {
  const Node& q = b.graph.node(id);
  if (!b.fuse || !b.fake_quantize) return false;
  const ValueId x = q.inputs.at(0);
  if (!b.IsAct(x) || b.AnyActOf(x, q).elem_type != onnx::TensorProto::FLOAT) return false;
  const auto readers = DequantizeReaders(b.graph, q);
  if (!readers) return false;
  const auto shared = SharedQuantization(b, q, *readers);
  if (!shared || !IsInt8Type(shared->type)) return false;
  const bool int8_reader = std::any_of(readers->begin(), readers->end(), [&](const Node* dq) {
    const ValueId v = dq->outputs.at(0);
    const auto& readers_of_v = b.graph.value(v).consumers;
    return std::any_of(readers_of_v.begin(), readers_of_v.end(),
                       [&](NodeId c) { return ReadsAsInt8(b, b.graph.node(c), v); });
  });
  if (!int8_reader) return false;
  EmitQuantize(b, q, x, *shared);
  DequantizeForFloatReaders(b, q);
  return true;
}

void DequantizeForFloatReaders(Builder& b, const Node& q) {
  const auto readers = DequantizeReaders(b.graph, q);
  const auto shared = readers ? SharedQuantization(b, q, *readers) : std::nullopt;
  if (!shared)
    throw Error(ErrorKind::kInternal, "internal error: " + q.name + ": its readers changed after it was quantized");
  Absorb(b, *readers);
  for (const Node* dq : *readers) {
    const ValueId v = dq->outputs.at(0);
    const Value& value = b.graph.value(v);
    const bool float_reader = value.is_graph_output ||
                              std::any_of(value.consumers.begin(), value.consumers.end(),
                                          [&](NodeId c) { return !ReadsAsInt8(b, b.graph.node(c), v); });
    if (float_reader && !LowerInt8Lookup(b, q, *dq)) EmitDequantize(b, q.outputs[0], *shared, v, q, dq->name);
  }
}

bool EmitInt8Conv(Builder& b, const Chain& chain) {
  const Node& node = b.graph.node(chain.anchor);
  const ValueId x = node.inputs.at(0);
  const Node* dq = DequantizeProducing(b, x);
  if (!dq) return false;  // not a QDQ convolution
  const bool int8_src = b.IsInt8Act(dq->inputs.at(0));
  std::string why;
  const auto qc = QuantizedConvOf(b, node, &why);
  if (qc && int8_src && TryInt8(b, chain, *qc, why)) return true;
  if (why.empty()) why = "its input is not an integer tensor here";
  // The float convolution of the dequantized values, then QuantizeLinear.
  const std::size_t first = b.steps.size();
  if (!b.IsAct(x) && !int8_src)
    throw Error(ErrorKind::kInternal, "internal error: " + node.name + ": its input is neither float nor quantized");
  DequantizeIfOnlyInteger(b, *dq, node);
  Chain float_chain = chain;
  if (chain.quantize != kNoNode) {
    float_chain.members.pop_back();
    float_chain.quantize = kNoNode;
    float_chain.out = b.graph.node(chain.quantize).inputs.at(0);
  }
  EmitConv(b, float_chain);
  if (chain.quantize != kNoNode) {
    const Node& q = b.graph.node(chain.quantize);
    EmitQuantize(b, q, float_chain.out, *PerTensorOf(b, q, onnx::TensorProto::UINT8));
  }
  // The unfused plan (the reference) is float by design: only a fused one says why.
  for (std::size_t i = first; b.fuse && i < b.steps.size(); ++i)
    if (b.steps[i].kind == "conv") b.steps[i].note = "float, not int8: " + why;
  return true;
}

}  // namespace onnxfuse::backend
