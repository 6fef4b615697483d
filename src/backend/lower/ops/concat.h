// Concat, and reading a Concat's parts without materializing it
// (backend/lower/ops/concat.cc).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "backend/lower/core/chain.h"

namespace onnxfuse::backend {

/// Concat as a concat primitive or memcpy runs; fused, Concat ->
/// BatchNormalization (-> Relu) as TryConcatNorm's one pass, or deferred for
/// readers that take its parts.
void EmitConcat(Builder& b, NodeId node);
/// The non-empty parts of a Concat along channels (axis 1) of run-time
/// tensors that agree on every other dim, and the concatenation's dims.
struct ChannelParts {
  std::vector<ValueId> values;
  Dims out;
};
/// `node`'s ChannelParts; nullopt for any other Concat.
std::optional<ChannelParts> ChannelPartsOf(const Builder& b, const Node& node);
/// A Conv chain reading a deferred concat (Builder::deferred_concats): one
/// convolution per concatenated part with that part's slice of the weights,
/// accumulating (`sum` post-op) into one destination, the last one with the
/// bias and the chain's post-ops. False, with nothing emitted, when the chain
/// has other than eltwise post-ops or a part would run a slow implementation.
bool EmitConvOverConcatParts(Builder& b, const Chain& chain);
/// Emits the concat deferred for `v` after all, for a reader that cannot take
/// the parts.
void EmitDeferredConcat(Builder& b, ValueId v);
/// A pooling `node` reading a deferred concat pools each part (pooling works
/// per channel: pool(concat(a, b)) = concat(pool(a), pool(b))); its output is
/// deferred in turn when only group-1 Convs read it, else concatenated, now
/// from the smaller pooled parts. `pool(part)` emits the
/// pooling of one part and returns its destination.
void PoolConcatParts(Builder& b, const Node& node, const std::function<Act(const Act& part)>& pool);

}  // namespace onnxfuse::backend
