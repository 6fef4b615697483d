// int8 matrix products of dynamic quantization, on CPUs with VNNI: ONNX
// Runtime's quantize_dynamic form, as rewrite/integer_products_as_float.h
// and dynamic_quantize.h leave it,
//
//   x -> DynamicQuantizeLinear -> (Cast (y) - Cast (y_zero_point)) -> MatMul (., W) [-> Mul by y_scale * w_scale ...]
//
// with W a constant of integers in [-128, 127] (the int8 weights, shifted by
// their zero point), runs as one oneDNN int8 matmul: y as u8 with its zero
// point given at run time (DNNL_RUNTIME_S32_VAL, the value the
// DynamicQuantizeLinear step writes), W as s8, the sums in int32 and the
// chain's post-ops on their float value (oneDNN 2.6 developer guide,
// "Quantization" and "Matrix Multiplication"). The float product it replaces
// sums the same integers exactly while they stay below 2^24, so the two
// agree bit for bit there. Without VNNI the float product stays: oneDNN's
// int8 kernels there add pairs of products in 16 bits with saturation
// (onednn_limits.h, limit 6) and are not faster.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/lower/core/builder.h"
#include "backend/lower/core/chain.h"

namespace onnxfuse::backend {

/// True when `reader` would read `v` (the zero-point-shifted values of a
/// DynamicQuantizeLinear) as the u8 source of an int8 matmul: fused mode
/// with fake quantization on a CPU with VNNI; `reader` a MatMul reading `v`
/// as A only, of dims `v_dims` (rank >= 2); B a constant [K, N] of
/// integers in [-128, 127].
bool ReadsAsInt8MatMul(Builder& b, const Node& reader, ValueId v, const Dims& v_dims);

/// The s8 values of constant float weights that ReadsAsInt8MatMul accepted.
std::vector<std::int8_t> Int8Weights(const Tensor& weights);

/// The arguments of an int8 matmul `pd` of chain `chain`, appended to
/// `args`: the u8 activation `a` as it lies (plain, dims `a_dims`), its zero
/// point (one s32, given at run time), and the s8 weights of constant `w`
/// (dims `w_dims`) packed once in `pd`'s layout. Returns the slots it reads.
std::vector<int> BindInt8MatMul(Builder& b, const Chain& chain, const dnnl::matmul::primitive_desc& pd, ValueId a,
                                ValueId w, const Dims& a_dims, const Dims& w_dims,
                                std::vector<std::pair<int, Arg>>& args);

/// Emits MatMul chain `chain`, whose A (`a`, dims `a_dims`) is such a u8
/// activation and whose B (`w`, [K, N] expanded to `w_dims`) constant, as
/// one int8 matmul created with its M given at run time
/// (DNNL_RUNTIME_DIM_VAL): at every other sequence length oneDNN's
/// primitive cache serves the same primitive, where one made for the exact M
/// is compiled again (a brgemm kernel per length: about 0.4 ms each on a Zen
/// 4). The matmul takes the chain's leading eltwise post-ops as far as
/// oneDNN computes them right (RightPrefix); the rest (the scale, the bias, a
/// residual) run after it as FinishChain's steps: oneDNN 2.6.3's gemm:jit
/// int8 matmul with run-time dims crashes executing binary post-ops. Taken
/// when the rank is at most 4 and oneDNN has a kernel that is not `ref:`;
/// otherwise nothing is emitted and the result is false.
bool EmitInt8MatMulAnyRows(Builder& b, const Chain& chain, ValueId a, ValueId w, const Dims& a_dims,
                           const Dims& w_dims, const Dims& out_dims);

/// A copy of `attr` that takes the source's zero point at run time
/// (DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, one s32 value).
dnnl::primitive_attr WithRunTimeSrcZeroPoint(const dnnl::primitive_attr& attr);

}  // namespace onnxfuse::backend
