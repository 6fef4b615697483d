// Gemm and MatMul chains as matmul primitives or our own GEMM and GEMV
// (backend/lower/ops/matmul.cc).
#pragma once

#include "backend/lower/core/chain.h"

namespace onnxfuse::backend {

/// Gemm (2-D A, constant B; transA, transB, alpha, beta) as a matmul: alpha
/// and a folded BatchNormalization in the prepacked B; C of one value per
/// output as the bias, a [M, 1] or [M, N] C as a binary post-op; on AVX2 our
/// own GEMM or GEMV first (EmitOwnGemm).
void EmitGemm(Builder& b, const Chain& chain);
/// MatMul (A computed at run time, B constant or not, batch dims broadcast)
/// as a matmul: [B.., M, K] x constant [K, N] as one 2-D product, on AVX2 our
/// own GEMM or GEMV first (EmitOwnGemm); a transposed operand read in place
/// where a fast kernel takes its strides.
void EmitMatMul(Builder& b, const Chain& chain);
/// True for a MatMul with a 1-D operand: it starts no chain (its result drops a dim).
bool IsMatMulOfVector(const Builder& b, const Node& node);
/// MatMul with a 1-D operand (ONNX MatMul, numpy.matmul semantics): a 1-D A
/// read as [1, K], a 1-D B as [K, 1], batch dims broadcast, one matmul whose
/// [.., M, N] result is the output without the added dim (the same bytes).
/// Operands run-time or constant. Error(kInvalidModel) when K or the batch
/// dims disagree, Error(kUnsupported) for a scalar operand.
void EmitMatMulOfVector(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
