// Lowering by the name of a library pattern, so that fusion is decided once,
// by the front end's pattern library (patterns/*.onnxtxt), and the backend
// does not recognize the same decompositions again. Names come from a group
// a pattern fused (FusedGroup::pattern_name, the pattern strategy) and from
// the pattern regions the library found in a postdom or greedy plan
// (FusedGroup::regions, fuse/pattern_regions.h), whose nodes may lie in
// several groups.
//
// The table, pattern name -> lowering; each starts at one member (its entry
// op), when the group being lowered reaches it, and lowers the pattern's
// nodes, wherever they lie, into:
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
//                        name (NamedPattern::gelus, backend/lower/core/chain.h),
//                        as its Gelu post-op: the matmul step, then one "gelu"
//                        step of our kernel in place on its destination;
//                        where the chain does not take it, at the Div, as Gelu
// A chain that reaches the Div of a Gelu pattern or region takes it the same
// way. The rest of a group, and a pattern whose lowering refuses (a limit of
// the backend's kernels: a ReduceMean that drops the axis, a Conv not on a 1x1
// map, ...), goes through the chain lowering node by node. Groups of other
// patterns (ConvBnRelu, MatMulAdd, ...) are lowered by LowerGroup as they are;
// so is Concat -> BatchNormalization (TryConcatNorm), which no library
// pattern names.
#pragma once

#include <string>
#include <vector>

#include "backend/lower/core/builder.h"
#include "fuse/fusion_plan.h"

namespace onnxfuse::backend {

/// True when `pattern` has a lowering of its own in the table above.
bool HasPatternLowering(const std::string& pattern);

/// The names in the table above, sorted.
std::vector<std::string> PatternLoweringNames();

/// Lowers the fusion group `nodes` (members in topological order) that the
/// library pattern `pattern` fused ("" when none), with the pattern regions
/// `regions` (those of the whole plan: a region is lowered by the group that
/// holds its entry node): the group and each region by the table above when it
/// has an entry, the rest by LowerGroup. The nodes' op types must be the
/// pattern's (Constant nodes aside), else the name is ignored: a plan file's
/// names are not trusted blindly.
void LowerGroupByPattern(Builder& b, const std::vector<NodeId>& nodes, const std::string& pattern,
                         const std::vector<PatternRegion>& regions = {});

}  // namespace onnxfuse::backend
