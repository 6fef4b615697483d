// A node's inputs as the arguments of its primitive: an activation in the
// layout the op reads (OpInput), and the bias and weights of the anchors that
// have them (Conv, ConvTranspose, Gemm, MatMul, and the Conv over a deferred
// concat), with the chain's folded BatchNormalization applied. Shared by
// those lowerings, so they live apart from any one of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "backend/lower/core/chain.h"

namespace onnxfuse::backend {

/// Input `i` of a non-anchor op in the layout it reads: as produced when fusing
/// (plain, or a convolution's channels-last / channel-blocked layout, which
/// oneDNN's elementwise, pooling, resampling and concat kernels take), plain
/// otherwise; other strided views (transposes) are made plain first.
Arg OpInput(Builder& b, const Node& node, std::size_t i);

/// A convolution's weights (input 1 of the chain's anchor, [O, C/group, kh,
/// kw], row-major) with the chain's folded BatchNormalization scaling each
/// output channel (eval::ScaleWeights):
/// their dims at once, their values decoded only when a lowering packs them.
/// Replaying a plan file, the packed weights are stored, so loading one never
/// decodes the model's copy (the cold start).
class ConvWeights {
 public:
  ConvWeights(Builder& b, const Chain& chain);
  const Dims& dims() const { return dims_; }
  /// The folded values, computed on first use. Throws what Builder::Const throws.
  const std::vector<float>& data();

 private:
  Builder& b_;
  const Chain& chain_;
  Dims dims_;
  std::optional<std::vector<float>> data_;
};

/// Input `input` of `node` (a bias) as `n` doubles times `scale`; zeros when absent.
std::vector<double> BiasOf(Builder& b, const Node& node, std::size_t input, std::int64_t n, double scale = 1.0);

/// A primitive's bias (one value per output channel, BatchNormalization folded
/// in) as a packed constant of `anchor` (Builder::PackedConstant): dims [O],
/// or [1, O] with `as_row` (matmul's bias).
dnnl::memory BiasMemory(Builder& b, NodeId anchor, const std::vector<double>& bias, bool as_row = false);

/// True when input `input` of `node` is present and not known at build time
/// (a graph input or a value computed at run time): its weights, bias or
/// parameters are then reordered at run time (RuntimeOperand) instead of
/// prepacked.
bool IsRuntimeInput(const Builder& b, const Node& node, std::size_t input);
/// Input `v` of `node` for a primitive that reads it in layout `want`, at run
/// time: its plain row-major bytes (a float32 constant first becomes an
/// activation, Builder::ConstAsAct) described by `view` (as many elements:
/// a reshape such as oihw -> goihw, or strides: a transposed operand), used as
/// they are when `want` is `view`, else reordered into a fresh slot in `want`
/// by one reorder step per inference labelled `label`.
Arg RuntimeOperand(Builder& b, ValueId v, const Node& node, const dnnl::memory::desc& view,
                   const dnnl::memory::desc& want, const std::string& label);

}  // namespace onnxfuse::backend
