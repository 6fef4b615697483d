// Lowering a fusion group by the name of the library pattern that fused it
// (FusedGroup::pattern_name), so that fusion is decided once, by the front
// end's pattern library (patterns/*.onnxtxt), and the backend does not
// recognize the same decompositions again.
//
// The table, pattern name -> lowering; each starts at one member (its entry
// op) and lowers the pattern's nodes as the matching recognizer did before
// (same steps, same labels):
//   Gelu                 at the Div: one "gelu" step of our kernel (EmitGeluKernel)
//   LayerNormalization   at the first ReduceMean: one layer_normalization step
//                        (EmitLayerNorm), the affine Mul and Add taken when
//                        their parameters are [C] float constants
//   SEReluSigmoid, SEReluHardSigmoid, SESiLUSigmoid, SESiLUHardSigmoid
//                        at the first Conv: the excitation (Conv, Relu or
//                        swish, Conv, gate) as one "squeeze_excite" step
//                        (EmitSqueezeExcite); the GlobalAveragePool before it
//                        and the gating Mul after it as any other node
//   MatMulAddGelu        the MatMul and the bias Add as a chain, as in any
//                        group, which takes the Gelu's five nodes, known by
//                        name (NamedPattern::gelu, backend/lower/core/chain.h), as
//                        its Gelu post-op: the matmul step, then one "gelu"
//                        step of our kernel in place on its destination (as
//                        the chain did for the Gelu MatchGelu found); where
//                        the chain does not take it, at the Div, as Gelu
// The rest of such a group, and a group whose lowering refuses (a limit of the
// backend's kernels: a ReduceMean that drops the axis, a Conv not on a 1x1
// map, ...), goes through the chain lowering without the recognizers.
// Groups of other patterns (ConvBnRelu, MatMulAdd, ...) and groups no pattern
// named (the postdom and greedy strategies) are lowered by LowerGroup as they
// are, the recognizers included (TryLayerNorm, MatchGelu, TrySqueezeExcite;
// and TryConcatNorm, whose Concat -> BatchNormalization no library pattern
// names).
#pragma once

#include <string>
#include <vector>

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// True when `pattern` has a lowering of its own in the table above.
bool HasPatternLowering(const std::string& pattern);

/// The names in the table above, sorted.
std::vector<std::string> PatternLoweringNames();

/// Lowers the fusion group `nodes` (members in topological order) that the
/// library pattern `pattern` fused ("" when none): by the table above when it
/// has an entry, else LowerGroup(b, nodes). The members' op types must be the
/// pattern's (Constant nodes aside), else the group is lowered as one no
/// pattern named: a plan file's name is not trusted blindly.
void LowerGroupByPattern(Builder& b, const std::vector<NodeId>& nodes, const std::string& pattern);

}  // namespace onnxfuse::backend
