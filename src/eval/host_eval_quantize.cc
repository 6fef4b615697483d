// The quantization ops on host tensors (host_eval_ops.h; ONNX Operators.md,
// QuantizeLinear-10/13, DequantizeLinear-10/13, DynamicQuantizeLinear-11,
// MatMulInteger-10, QLinearMatMul-10, ConvInteger-10, QLinearConv-10).
//
// Rounding is to the nearest integer, ties to even (std::nearbyint in the
// default rounding mode), and results saturate to the quantized type's range.
// Where ONNX leaves the float arithmetic open, it is ONNX Runtime's CPU
// kernels' (onnxruntime/core/mlas, QuantizeLinear and MlasRequantizeOutput):
// float32 throughout, x / scale rounded before the zero point is added,
// (x - zero_point) * scale, and the requantization multiplier computed as
// a_scale * b_scale / y_scale. Integer products accumulate exactly in int64.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "eval/dims.h"
#include "eval/host_eval.h"
#include "eval/host_eval_ops.h"
#include "eval/host_eval_window.h"
#include "eval/host_tensor.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::eval {

namespace {

using onnx::TensorProto;

struct QuantRange {
  std::int64_t low, high;
};

// The values a quantized tensor of ONNX type `data_type` holds.
QuantRange RangeOf(const Node& node, std::int32_t data_type) {
  const auto range = QuantizedRange(data_type);
  if (!range)
    throw Error(ErrorKind::kUnsupported, NodeLabel(node) + ": quantized element type " + std::to_string(data_type) +
                                             " (only int8, uint8, int16, uint16 and int32)");
  return {range->first, range->second};
}

// Element i of `t` as float32, whatever its storage.
float FloatAt(const Tensor& t, std::int64_t i) {
  const auto k = static_cast<std::size_t>(i);
  return IsInt64(t) ? static_cast<float>(t.int_data[k]) : t.data[k];
}

// Element i of an integer tensor, or 0 for an omitted one (a zero point).
std::int64_t IntAt(const Tensor* t, std::int64_t i) { return t ? t->int_data[static_cast<std::size_t>(i)] : 0; }

// nearbyint(v) + zero_point saturated to `range`: v is clamped first (as
// ONNX Runtime's MlasRequantizeOutput does), so no float outside int64 is
// converted; NaN saturates low.
std::int64_t Saturate(float v, std::int64_t zero_point, QuantRange range) {
  const auto low = static_cast<float>(range.low - zero_point), high = static_cast<float>(range.high - zero_point);
  const float clamped = std::isnan(v) ? low : std::min(std::max(std::nearbyint(v), low), high);
  return static_cast<std::int64_t>(clamped) + zero_point;
}

// An INT64 tensor of `dims` standing for ONNX type `data_type`.
Tensor IntTensor(Dims dims, std::int32_t data_type) {
  Tensor t;
  t.elem_type = TensorProto::INT64;
  t.data_type = data_type;
  t.dims = std::move(dims);
  t.int_data.resize(static_cast<std::size_t>(Product(t.dims)));
  return t;
}

// Which value of a scale or zero point element i of a tensor of `dims` takes:
// the one value of a per-tensor parameter (a scalar or [1]), or for a
// per-axis one (a 1-D tensor of dims[axis] values, QuantizeLinear-13 and
// DequantizeLinear-13) the value of i's index along `axis`.
class AxisIndex {
 public:
  AxisIndex(const Node& node, const Dims& dims, const Tensor& param, std::int64_t opset) {
    if (param.NumElements() == 1 && param.dims.size() <= 1) return;
    if (opset < 13 || param.dims.size() != 1)
      InvalidNode(node, "a scale of shape " + DimsString(param.dims) + " is neither a scalar nor per axis");
    const std::int64_t axis = NormAxis(AttrInt(node, "axis", 1), dims.size(), node);
    if (param.dims[0] != dims[static_cast<std::size_t>(axis)])
      InvalidNode(node, "a scale of " + std::to_string(param.dims[0]) + " values for axis " + std::to_string(axis) +
                            " of " + DimsString(dims));
    count_ = param.dims[0];
    inner_ = Product(Dims(dims.begin() + axis + 1, dims.end()));
  }
  std::int64_t operator()(std::int64_t i) const { return count_ == 0 ? 0 : i / inner_ % count_; }

 private:
  std::int64_t count_ = 0, inner_ = 1;
};

// A zero point, present, must be shaped as its scale and be an integer tensor.
const Tensor* ZeroPoint(const Node& node, const HostInputs& in, std::size_t slot, const Tensor& scale) {
  const Tensor* zero_point = in.size() > slot ? in[slot] : nullptr;
  if (!zero_point) return nullptr;
  if (!IsInt64(*zero_point)) InvalidNode(node, "a zero point that is no integer tensor");
  if (zero_point->NumElements() != scale.NumElements())
    InvalidNode(node, "zero point of shape " + DimsString(zero_point->dims) + " for a scale of shape " +
                          DimsString(scale.dims));
  return zero_point;
}

// QuantizeLinear: y = saturate(round(x / y_scale) + y_zero_point), of
// y_zero_point's type (uint8 when it is omitted).
Tensor Quantize(const Node& node, const HostInputs& in, std::int64_t opset) {
  const Tensor& x = NeedInput(node, in, 0);
  const Tensor& scale = NeedInput(node, in, 1);
  const Tensor* zero_point = ZeroPoint(node, in, 2, scale);
  const std::int32_t type = zero_point ? zero_point->DataType() : TensorProto::UINT8;
  const QuantRange range = RangeOf(node, type);
  const AxisIndex at(node, x.dims, scale, opset);
  Tensor y = IntTensor(x.dims, type);
  for (std::int64_t i = 0; i < x.NumElements(); ++i) {
    const std::int64_t p = at(i);
    y.int_data[static_cast<std::size_t>(i)] =
        Saturate(FloatAt(x, i) / scale.data[static_cast<std::size_t>(p)], IntAt(zero_point, p), range);
  }
  return y;
}

// DequantizeLinear: y = (x - x_zero_point) * x_scale, float32.
Tensor Dequantize(const Node& node, const HostInputs& in, std::int64_t opset) {
  const Tensor& x = NeedInput(node, in, 0);
  const Tensor& scale = NeedInput(node, in, 1);
  const Tensor* zero_point = ZeroPoint(node, in, 2, scale);
  if (!IsInt64(x)) InvalidNode(node, "x is no integer tensor");
  const AxisIndex at(node, x.dims, scale, opset);
  Tensor y;
  y.dims = x.dims;
  y.data.resize(static_cast<std::size_t>(x.NumElements()));
  for (std::int64_t i = 0; i < x.NumElements(); ++i) {
    const std::int64_t p = at(i);
    y.data[static_cast<std::size_t>(i)] =
        static_cast<float>(x.int_data[static_cast<std::size_t>(i)] - IntAt(zero_point, p)) *
        scale.data[static_cast<std::size_t>(p)];
  }
  return y;
}

// DynamicQuantizeLinear: uint8 y, its scale and zero point from the range of
// x widened to hold 0: scale = (max - min) / 255, zero point =
// saturate(round(-min / scale)). An x of zeros alone has scale 1 and zero
// point 0 (the formula would divide 0 by 0), as in ONNX Runtime.
std::vector<Tensor> DynamicQuantize(const Node& node, const HostInputs& in) {
  const Tensor& x = NeedInput(node, in, 0);
  if (IsInt64(x)) InvalidNode(node, "x is no float tensor");
  float low = 0, high = 0;
  for (float v : x.data) low = std::min(low, v), high = std::max(high, v);
  const QuantRange range{0, 255};
  const float scale = high == low ? 1.0f : (high - low) / 255.0f;
  const std::int64_t zero_point = Saturate(0.0f - low / scale, 0, range);
  std::vector<Tensor> out;
  out.push_back(IntTensor(x.dims, TensorProto::UINT8));
  for (std::size_t i = 0; i < x.data.size(); ++i) out[0].int_data[i] = Saturate(x.data[i] / scale, zero_point, range);
  Tensor y_scale;
  y_scale.data = {scale};
  out.push_back(std::move(y_scale));
  out.push_back(IntTensor({}, TensorProto::UINT8));
  out[2].int_data = {zero_point};
  return out;
}

// `t` minus its zero point, as INT64. The zero point is one value (a scalar
// or [1]); a 1-D tensor of t's dim `axis` (-1: of its last dim), one value
// per index along it (MatMulInteger's a_zero_point per row of a [..., M, K]:
// axis rank - 2; b_zero_point per column; ConvInteger's w_zero_point per
// output channel: axis 0); or a tensor that broadcasts to t ([..., M, 1],
// [..., 1, N], MatMulInteger-10).
Tensor MinusZeroPoint(const Node& node, const Tensor& t, const Tensor* zero_point, std::int64_t axis = -1) {
  if (!IsInt64(t)) InvalidNode(node, "an operand that is no integer tensor");
  Tensor out = IntTensor(t.dims, TensorProto::INT64);
  if (!zero_point) {
    out.int_data = t.int_data;
    return out;
  }
  if (!IsInt64(*zero_point)) InvalidNode(node, "a zero point that is no integer tensor");
  Dims dims = zero_point->dims;
  if (zero_point->NumElements() == 1) {
    dims.clear();
  } else if (dims.size() == 1 && axis >= 0 && static_cast<std::size_t>(axis) < t.dims.size()) {
    dims.assign(t.dims.size() - static_cast<std::size_t>(axis), 1);
    dims[0] = zero_point->dims[0];
  }
  if (BroadcastDims(t.dims, dims) != t.dims)
    InvalidNode(node, "zero point of shape " + DimsString(zero_point->dims) + " for an operand of shape " +
                          DimsString(t.dims));
  const std::vector<std::int64_t> at = BroadcastOffsets(t.dims, dims);
  for (std::size_t i = 0; i < out.int_data.size(); ++i)
    out.int_data[i] = t.int_data[i] - zero_point->int_data[static_cast<std::size_t>(at[i])];
  return out;
}

// The axis of a's rows: rank - 2 (a 1-D a is one row).
std::int64_t RowAxis(const Tensor& a) { return static_cast<std::int64_t>(a.dims.size()) - 2; }

// MatMulInteger: (a - a_zero_point) x (b - b_zero_point), int32.
Tensor MatMulInteger(const Node& node, const HostInputs& in) {
  const Tensor* a_zero = in.size() > 2 ? in[2] : nullptr;
  const Tensor* b_zero = in.size() > 3 ? in[3] : nullptr;
  const Tensor& a = NeedInput(node, in, 0);
  Tensor y = MatMulOf(node, MinusZeroPoint(node, a, a_zero, RowAxis(a)), MinusZeroPoint(node, NeedInput(node, in, 1), b_zero));
  y.data_type = TensorProto::INT32;
  return y;
}

// The float32 multiplier or offset of output element i of a [..., M, N]
// result from a per-tensor, per-row ([M]) or per-column ([N]) parameter.
struct MatrixParam {
  const Tensor* t = nullptr;
  std::int64_t count = 1, stride = 1;  // element i takes value i / stride % count
};

MatrixParam RowParam(const Node& node, const Tensor* t, const Dims& y, bool columns) {
  MatrixParam p{t};
  if (!t || t->NumElements() == 1) return p;
  const std::int64_t m = y.size() >= 2 ? y[y.size() - 2] : 1, n = y.empty() ? 1 : y.back();
  const std::int64_t want = columns ? n : m;
  if (t->dims.size() != 1 || t->dims[0] != want)
    InvalidNode(node, std::string("a per-") + (columns ? "column" : "row") + " parameter of shape " +
                          DimsString(t->dims) + " for a result of shape " + DimsString(y));
  p.count = want;
  p.stride = columns ? 1 : n;
  return p;
}

float FloatOf(const MatrixParam& p, std::int64_t i) { return FloatAt(*p.t, i / p.stride % p.count); }
std::int64_t IntOf(const MatrixParam& p, std::int64_t i) { return p.t ? IntAt(p.t, i / p.stride % p.count) : 0; }

// QLinearMatMul: saturate(round((a - a_zp) x (b - b_zp) * a_scale * b_scale /
// y_scale) + y_zp), of y_zero_point's type. a's and y's parameters are per
// tensor or per row, b's per tensor or per column (QLinearMatMul-10).
Tensor QLinearMatMul(const Node& node, const HostInputs& in) {
  const Tensor& a = NeedInput(node, in, 0);
  const Tensor& b = NeedInput(node, in, 3);
  const Tensor& y_zero = NeedInput(node, in, 7);
  const Tensor acc = MatMulOf(node, MinusZeroPoint(node, a, &NeedInput(node, in, 2), RowAxis(a)),
                              MinusZeroPoint(node, b, &NeedInput(node, in, 5)));
  const Dims& dims = acc.dims;
  const MatrixParam a_scale = RowParam(node, &NeedInput(node, in, 1), dims, false);
  const MatrixParam b_scale = RowParam(node, &NeedInput(node, in, 4), dims, true);
  const MatrixParam y_scale = RowParam(node, &NeedInput(node, in, 6), dims, false);
  const MatrixParam y_zp = RowParam(node, &y_zero, dims, false);
  const QuantRange range = RangeOf(node, y_zero.DataType());
  Tensor y = IntTensor(dims, y_zero.DataType());
  for (std::int64_t i = 0; i < acc.NumElements(); ++i) {
    const float multiplier = FloatOf(a_scale, i) * FloatOf(b_scale, i) / FloatOf(y_scale, i);
    y.int_data[static_cast<std::size_t>(i)] =
        Saturate(static_cast<float>(acc.int_data[static_cast<std::size_t>(i)]) * multiplier, IntOf(y_zp, i), range);
  }
  return y;
}

// The convolution of INT64 x [N, C, D1..Dk] with w [M, C / group, K1..Kk],
// exact in int64, over Conv-11's windows (strides, dilations, pads,
// auto_pad, group): [N, M, O1..Ok].
Tensor IntegerConv(const Node& node, const Tensor& x, const Tensor& w) {
  if (x.dims.size() < 3 || w.dims.size() != x.dims.size())
    InvalidNode(node, "x " + DimsString(x.dims) + " and w " + DimsString(w.dims) + " are no convolution's operands");
  const Dims kernel(w.dims.begin() + 2, w.dims.end());
  if (const Dims given = AttrInts(node, "kernel_shape", kernel); given != kernel)
    InvalidNode(node, "kernel_shape " + DimsString(given) + " for weights of shape " + DimsString(w.dims));
  const WindowGeometry g = WindowGeometryOf(node, x.dims, kernel);
  const std::int64_t group = AttrInt(node, "group", 1), channels = x.dims[1], maps = w.dims[0];
  if (group < 1 || channels % group != 0 || maps % group != 0 || w.dims[1] * group != channels)
    InvalidNode(node, "group " + std::to_string(group) + " for x " + DimsString(x.dims) + " and w " +
                          DimsString(w.dims));
  const std::size_t spatial = kernel.size();
  const Dims in_spatial(x.dims.begin() + 2, x.dims.end());
  const std::int64_t outs = Product(g.out), taps = Product(kernel), in_size = Product(in_spatial);
  // For output position o and tap t: the input's spatial offset, or -1 in the padding.
  std::vector<std::int64_t> source(static_cast<std::size_t>(outs * taps));
  for (std::int64_t o = 0; o < outs; ++o)
    for (std::int64_t t = 0; t < taps; ++t) {
      std::int64_t offset = 0, o_rest = o, t_rest = t, o_step = outs, t_step = taps;
      for (std::size_t d = 0; d < spatial && offset >= 0; ++d) {
        o_step /= g.out[d], t_step /= kernel[d];
        const std::int64_t coord = o_rest / o_step * g.strides[d] - g.pads_begin[d] + t_rest / t_step * g.dilations[d];
        o_rest %= o_step, t_rest %= t_step;
        offset = coord < 0 || coord >= in_spatial[d] ? -1 : offset * in_spatial[d] + coord;
      }
      source[static_cast<std::size_t>(o * taps + t)] = offset;
    }
  Dims out_dims = {x.dims[0], maps};
  out_dims.insert(out_dims.end(), g.out.begin(), g.out.end());
  Tensor y = IntTensor(out_dims, TensorProto::INT64);
  const std::int64_t group_channels = w.dims[1], group_maps = maps / group;
  for (std::int64_t n = 0; n < x.dims[0]; ++n)
    for (std::int64_t m = 0; m < maps; ++m) {
      const std::int64_t first_channel = m / group_maps * group_channels;
      std::int64_t* out = y.int_data.data() + (n * maps + m) * outs;
      for (std::int64_t c = 0; c < group_channels; ++c) {
        const std::int64_t* plane = x.int_data.data() + (n * channels + first_channel + c) * in_size;
        const std::int64_t* taps_of = w.int_data.data() + (m * group_channels + c) * taps;
        for (std::int64_t o = 0; o < outs; ++o) {
          const std::int64_t* from = source.data() + o * taps;
          std::int64_t sum = 0;
          for (std::int64_t t = 0; t < taps; ++t)
            if (from[t] >= 0) sum += plane[from[t]] * taps_of[t];
          out[o] += sum;
        }
      }
    }
  return y;
}

// ConvInteger: conv(x - x_zero_point, w - w_zero_point), int32; w's zero
// point per tensor or per output channel (a 1-D [M]).
Tensor ConvInteger(const Node& node, const HostInputs& in) {
  const Tensor* x_zero = in.size() > 2 ? in[2] : nullptr;
  const Tensor* w_zero = in.size() > 3 ? in[3] : nullptr;
  Tensor y = IntegerConv(node, MinusZeroPoint(node, NeedInput(node, in, 0), x_zero),
                         MinusZeroPoint(node, NeedInput(node, in, 1), w_zero, 0));
  y.data_type = TensorProto::INT32;
  return y;
}

// QLinearConv: saturate(round((conv(x - x_zp, w - w_zp) + B) * x_scale *
// w_scale / y_scale) + y_zp), of y_zero_point's type; w's scale and zero
// point per tensor or per output channel, B (int32 [M]) optional.
Tensor QLinearConv(const Node& node, const HostInputs& in) {
  const Tensor& x_scale = NeedInput(node, in, 1);
  const Tensor& w = NeedInput(node, in, 3);
  const Tensor& w_scale = NeedInput(node, in, 4);
  const Tensor& y_scale = NeedInput(node, in, 6);
  const Tensor& y_zero = NeedInput(node, in, 7);
  const Tensor* bias = in.size() > 8 ? in[8] : nullptr;
  if (x_scale.NumElements() != 1 || y_scale.NumElements() != 1 || y_zero.NumElements() != 1)
    InvalidNode(node, "x's and y's scales and zero points must be scalars");
  const Tensor acc = IntegerConv(node, MinusZeroPoint(node, NeedInput(node, in, 0), &NeedInput(node, in, 2)),
                                 MinusZeroPoint(node, w, &NeedInput(node, in, 5), 0));
  const std::int64_t maps = acc.dims[1], plane = Product(Dims(acc.dims.begin() + 2, acc.dims.end()));
  if (w_scale.NumElements() != 1 && w_scale.NumElements() != maps)
    InvalidNode(node, "w_scale of shape " + DimsString(w_scale.dims) + " for " + std::to_string(maps) + " output channels");
  if (bias && (!IsInt64(*bias) || bias->NumElements() != maps))
    InvalidNode(node, "B must be an int32 tensor of one value per output channel");
  const QuantRange range = RangeOf(node, y_zero.DataType());
  Tensor y = IntTensor(acc.dims, y_zero.DataType());
  for (std::int64_t i = 0; i < acc.NumElements(); ++i) {
    const std::int64_t m = i / plane % maps;
    const float multiplier = x_scale.data[0] * w_scale.data[static_cast<std::size_t>(w_scale.NumElements() == 1 ? 0 : m)] /
                             y_scale.data[0];
    const std::int64_t sum = acc.int_data[static_cast<std::size_t>(i)] + IntAt(bias, m);
    y.int_data[static_cast<std::size_t>(i)] = Saturate(static_cast<float>(sum) * multiplier, y_zero.int_data[0], range);
  }
  return y;
}

}  // namespace

std::optional<std::pair<std::int64_t, std::int64_t>> QuantizedRange(std::int32_t data_type) {
  using Range = std::pair<std::int64_t, std::int64_t>;
  switch (data_type) {
    case TensorProto::UINT8: return Range{0, 255};
    case TensorProto::INT8: return Range{-128, 127};
    case TensorProto::UINT16: return Range{0, 65535};
    case TensorProto::INT16: return Range{-32768, 32767};
    case TensorProto::INT32: return Range{std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
    default: return std::nullopt;
  }
}

HostOutputs EvalQuantizeOp(const Node& node, const HostInputs& in, std::int64_t opset) {
  const std::string& op = node.op_type;
  if (op == "QuantizeLinear") return One(Quantize(node, in, opset));
  if (op == "DequantizeLinear") return One(Dequantize(node, in, opset));
  if (op == "DynamicQuantizeLinear") return DynamicQuantize(node, in);
  if (op == "MatMulInteger") return One(MatMulInteger(node, in));
  if (op == "QLinearMatMul") return One(QLinearMatMul(node, in));
  if (op == "ConvInteger") return One(ConvInteger(node, in));
  if (op == "QLinearConv") return One(QLinearConv(node, in));
  return std::nullopt;
}

}  // namespace onnxfuse::eval
