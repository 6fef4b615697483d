// DynamicQuantizeLinear (ONNX Operators.md, DynamicQuantizeLinear-11) as
// dynamic quantization uses it: its uint8 y and y_zero_point read only
// through Casts to float, the operands of the float products that
// rewrite/integer_products_as_float.h makes of MatMulInteger and ConvInteger:
//
//   x -> DynamicQuantizeLinear -> y -> Cast<FLOAT> -> Sub <- Cast<FLOAT> <- y_zero_point
//                              -> y_scale
//
// In fused mode the op, its Casts and those Subs run as one step of our
// kernel (backend/kernels/dynamic_quantize.h): one pass for x's range, one
// writing y - y_zero_point (or y itself, for a Cast read otherwise) as
// float32; for a MatMul that runs as an int8 matmul (int8_matmul.h), y as
// uint8 bytes and its zero point as one int32 instead. The values are the
// host evaluator's, bit for bit; the unfused plan runs the op there. Without fake quantization (Builder::fake_quantize
// false, the output check's float plans), in either mode, the step writes
// x / y_scale + y_zero_point (minus it where shifted) instead: the float
// values the quantization stands for, neither rounded nor saturated.
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// In fused mode or without fake quantization, for DynamicQuantizeLinear `id`
/// of a float activation with FloatCastsOfDynamicQuantize (ir/fake_quantization.h):
/// emits one "dynamic_quantize" step writing what its readers need (y as
/// float, y minus its zero point for each Sub of the two Casts, y_scale, the
/// zero point as float), absorbs the Casts and Subs, and returns true.
/// Otherwise emits nothing and returns false (the op runs as a host step).
bool LowerDynamicQuantize(Builder& b, NodeId id);

}  // namespace onnxfuse::backend
