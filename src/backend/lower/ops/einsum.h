// Einsum (backend/lower/ops/einsum.cc): the forms that are a transpose (with
// sums) or a batched matrix product with transposes, on oneDNN's reorder,
// reduction and matmul.
#pragma once

#include <string>
#include <vector>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// An Einsum equation taken apart (ONNX Operators.md, Einsum): one label
/// string per operand and the output's; an implicit output ("ij,jk") is the
/// labels that occur once, in alphabetical order.
struct EinsumEquation {
  std::vector<std::string> inputs;
  std::string output;
};
/// Parses `equation` (spaces ignored). Throws std::invalid_argument saying
/// why for what this backend does not take: an ellipsis, a label other than
/// a letter, a label repeated within one operand or in the output (a
/// diagonal), an output label no operand has.
EinsumEquation ParseEinsum(const std::string& equation);

/// Einsum of one operand (a transpose: one reorder, then a reduction_sum over
/// the labels not in the output, if any: "ij->ji", "ij->i", "ij->"), or of
/// two operands where every label is either
///   batch: in both operands and the output,
///   M: in the first operand and the output, N: in the second and the output,
///   K: in both operands, not in the output (summed),
/// as A transposed to [batch.., M.., K..] and B to [batch.., K.., N..] (reorder
/// steps when not already so), one matmul [b, m, k] x [b, k, n] on the
/// products of each group's dims, and the result transposed to the output's
/// label order ("bij,bjk->bik", "bhid,bhjd->bhij", "ij,jk", "i,i->"). Float32
/// operands, run-time or constant. Returns false, with nothing emitted, for
/// any other form (a sum over a label of one of two operands only, more than
/// two operands, a diagonal, an ellipsis, extents that broadcast): the caller
/// leaves those to the host evaluator (host_eval_einsum.cc, a host step).
/// Error(kInvalidModel) when the operand count or an operand's rank differs
/// from the equation's.
bool LowerEinsum(Builder& b, NodeId node);

}  // namespace onnxfuse::backend
