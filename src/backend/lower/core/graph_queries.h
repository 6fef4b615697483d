// Questions the lowerings ask about the graph around a node: who reads a
// value, and how. The matchers of the backend's own patterns (LayerNorm and
// Gelu decompositions, squeeze-and-excitation, Concat+BatchNormalization,
// the deferred scales and concats) all ask them, so they live in a unit of
// their own rather than in any one of those lowerings.
#pragma once

#include <string>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// The node of type `op` (default domain, not yet absorbed) reading `v`, when
/// it is the only read of `v` and `v` is not a graph output; else nullptr.
const Node* SoleUser(const Builder& b, ValueId v, const char* op);
/// The other input of two-input node `n`, given `v`, one of them; kNoValue
/// when `n` has other than two inputs or `v` is neither.
ValueId OtherInput(const Node& n, ValueId v);
/// True when `v` is a constant float scalar (one element) within `tol` of
/// `want`, or of any value when `want` is NaN; that scalar goes to `*value`
/// when given. `user`, the node reading `v`, is named in Builder::Const's errors.
bool ConstNear(Builder& b, ValueId v, const Node& user, double want, double tol, double* value = nullptr);
/// True when `n` is a Conv (default domain, group 1) with constant weights (and bias)
/// reading `v` once, as its data input X.
bool ConvReadsAsData(const Builder& b, const Node& n, ValueId v);
/// True for the pooling ops EmitPool lowers (MaxPool, AveragePool and their
/// Global forms): each works per channel, in any layout.
bool IsPooling(const std::string& op);
/// A GlobalAveragePool (default domain, not yet absorbed) reading `v` as its
/// input, for a producer that takes the channel means as it writes `v`; nullptr
/// when there is none.
const Node* PoolReading(const Builder& b, ValueId v);

}  // namespace onnxfuse::backend
