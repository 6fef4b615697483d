// int8 convolutions of the QDQ format, as ONNX Runtime's static quantizer
// writes them (and QOperator QLinearConv, which rewrite/qoperator_as_qdq.h
// turns into it):
//
//   x_q -> DequantizeLinear -> Conv(W = DequantizeLinear(w_int8), B) [-> Relu | Clip] [-> QuantizeLinear -> y_q]
//
// runs as one oneDNN int8 convolution: u8 or s8 source with its zero point,
// s8 weights, per-output-channel output scales x_scale * w_scale[c] /
// y_scale, the chain's ReLU or Clip in the quantized domain, and a u8 or s8
// destination with y's zero point (or float32 when no QuantizeLinear ends
// the chain). ONNX defines the float result as x_scale * w_scale[c] *
// sum((x_q - x_zero_point) * w_q) + B (Operators.md, DequantizeLinear-13,
// Conv-11); oneDNN computes output_scale[c] * (sum + bias[c]) with the bias
// in the sum's units (oneDNN 2.6 developer guide, "Quantization"): the bias
// passed is B[c] / (x_scale * w_scale[c]).
//
// The integer activations between such convolutions are Acts of storage type
// UINT8 or INT8 (builder.h); a DequantizeLinear read by anything else is
// made float by one pass of our kernel (backend/kernels/quantize_linear.h).
//
// Saturation: oneDNN's int8 kernels for CPUs without VNNI (AVX2, AVX-512
// without VNNI) add pairs of u8 x s8 products in 16 bits with saturation
// (vpmaddubsw), so 255 * (|w_a| + |w_b|) must stay below 32768. There the
// int8 path is taken only when every weight has |w| <= 64 (7-bit weights, as
// ONNX Runtime's quantizer writes with reduce_range) and the source is u8:
// for an s8 source oneDNN adds 128 and halves the weights there, dropping
// their last bit (measured: results two steps off). Otherwise the
// convolution runs in float32 on the dequantized values, exactly.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/kernels/quantize_linear.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/fused/quantize_dequantize.h"

namespace onnxfuse::backend {

/// The quantized operands of a 2-D Conv whose X and W are DequantizeLinear
/// outputs of the QDQ format.
struct QuantizedConv {
  ValueId src = kNoValue;  ///< the integer tensor X dequantizes
  PerTensor src_quantization;
  /// w_int8, [C_out, C_in / group, kH, kW] (int_data; shared with the Builder, not copied)
  std::shared_ptr<const Tensor> weights;
  std::vector<float> weight_scales;  ///< one per output channel
};

/// The quantized operands of Conv `conv` when it can run as an int8
/// convolution: X the output of a DequantizeLinear of one constant per-tensor
/// u8 or s8 quantization; W a DequantizeLinear of a constant int8 tensor of
/// rank 4 with zero points 0 and one scale, or one per output channel
/// (axis 0); B absent or known at build time; on a CPU without VNNI, a u8
/// X and every |w| <= 64 (see "Saturation"). nullopt otherwise, with the
/// reason in `why` (when not null).
std::optional<QuantizedConv> QuantizedConvOf(Builder& b, const Node& conv, std::string* why);

/// The producer of `v` when it is a DequantizeLinear of the default domain, else nullptr.
const Node* DequantizeProducing(const Builder& b, ValueId v);

/// The per-tensor quantization of integer tensor `q`, which DequantizeLinear
/// `dq` reads: its Act's when computed already (the DequantizeLinear's
/// constants may be released by then), else the DequantizeLinear's
/// constants; nullopt unless u8 or s8 with a positive, finite scale.
std::optional<PerTensor> SourceQuantization(Builder& b, ValueId q, const Node& dq, const Node& user);

/// The kernels' Int8Type of UINT8 or INT8 (onnx::TensorProto::DataType).
Int8Type KernelType(std::int32_t type);

/// Without VNNI (see "Saturation"): true when the int8 weights `w` keep
/// |w| <= 64; otherwise false with the reason in `why`. True with VNNI.
bool SumsWithoutSaturation(const Tensor& w, std::string& why);

/// Without VNNI: true only for a uint8 source (an int8 one would lose a bit),
/// otherwise false with the reason in `why`. True with VNNI.
bool SourceRunsInt8(std::int32_t type, std::string& why);

/// When `dq`'s output is not yet a float Act and its input is an integer Act
/// (its readers all looked int8 when it was made, and one falls back to
/// float): a dequantize step at that Act's own quantization makes it one.
void DequantizeIfOnlyInteger(Builder& b, const Node& dq, const Node& user);

/// A "dequantize" step: the float value `v` from the integer Act `q` of
/// quantization `p`, for `user`; `label` names the step.
void EmitDequantize(Builder& b, ValueId q, const PerTensor& p, ValueId v, const Node& user, const std::string& label);

/// True when `reader` reads `v` once and would read it as an integer tensor,
/// in fused mode with fake quantization: as X of an int8 convolution
/// (QuantizedConvOf), as A of an int8 matmul (int8_qdq_matmul.h,
/// QuantizedMatMulOf), or as either input of a quantized Add (int8_add.h).
bool ReadsAsInt8(Builder& b, const Node& reader, ValueId v);

/// At QuantizeLinear `q`: for an Add anchor, TakeQuantizeAfterAdd
/// (int8_add.h). When `chain` is an int8 convolution's (its source
/// an integer Act, no folded BatchNormalization, only ReLU, Clip and linear
/// post-ops) and `q` quantizes its output, read by nothing else, to a
/// per-tensor u8 or s8 quantization its DequantizeLinear readers share:
/// makes `q` the chain's end (Chain::quantize, Chain::out its output) and
/// returns true. Otherwise changes nothing and returns false.
bool TakeQuantize(Builder& b, Chain& chain, NodeId q);

/// In fused mode with fake quantization, for a QuantizeLinear `q` of a float
/// activation whose DequantizeLinear readers share its per-tensor u8 or s8
/// quantization and one of whose outputs an int8 convolution reads
/// (ReadsAsInt8): emits a "quantize" step writing the integer tensor, then
/// DequantizeForFloatReaders; returns true. Otherwise nothing, false.
bool LowerQuantize(Builder& b, NodeId q);

/// After `q`'s integer output is computed: absorbs its DequantizeLinear
/// readers and, for each whose output something other than an int8
/// convolution reads (or that is a graph output), emits a "dequantize" step
/// writing that float output.
void DequantizeForFloatReaders(Builder& b, const Node& q);

/// Emits a Conv chain whose X is a DequantizeLinear output: as one int8
/// convolution when its operands allow (QuantizedConvOf), X is an integer
/// Act and oneDNN has a fast int8 kernel for it; otherwise as the float
/// convolution (between a dequantize and a quantize step where X or the end
/// are integer tensors), whose conv step's Step::note says why it is not
/// int8. False, with nothing done, for any other Conv: EmitConv's.
bool EmitInt8Conv(Builder& b, const Chain& chain);

}  // namespace onnxfuse::backend
