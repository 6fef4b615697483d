// fold_batchnorm: fold inference BatchNormalization into the Conv or
// ConvTranspose that feeds it, as standard ONNX (no custom ops).
//
// Before:                                  After:
//   c = Conv (x, W[, b])                     y = Conv (x, W', B')
//   y = BatchNormalization (c, γ, β, μ, σ²)
//
// Math: BN as the per-channel affine map y = s_k · c + t_k, folded into the
// conv's weights and bias by eval/batch_norm_affine.h (the formula and its
// source are there; the backend's lowerings fold through it too), computed in
// double and stored in the weight's element type:
//   W'[output channel k] = W[output channel k] · s_k
//   B'_k                 = b_k · s_k + t_k       (b = 0 without a conv bias)
// Output channel k of the weight:
//   Conv           W is (C_out, C_in/group, k1, k2, ...): channel k is W[k, ...],
//                  whatever the group count.
//   ConvTranspose  W is (C_in, C_out/group, k1, k2, ...): with G = group and
//                  k = g·(C_out/G) + j, channel k is W[i, j, ...] for the input
//                  channels i of group g, g·C_in/G <= i < (g+1)·C_in/G.
//                  (onnx/optimizer PR #106 is the bug of treating dim 0 as C_out.)
//
// Preconditions (ONNX Runtime's conv_bn_fusion conditions, core/optimizer), each
// a refusal reason when it fails:
//   "training_mode"               BN has training_mode=1 (opset 14+), or one of its optional
//                                 outputs (running/saved mean and var) is read or is a graph output.
//   "no_conv_producer"            BN's input X is not output 0 of a default-domain Conv or
//                                 ConvTranspose (a graph input, a Concat, another BN, ...).
//   "conv_output_is_graph_output" the conv's output is itself a graph output.
//   "conv_output_shared"          the conv's output is read by a node other than the BN, or by
//                                 the BN more than once (subgraph captures count as reads).
//   "not_constant"                W, the conv bias (if any), γ, β, μ or σ² is not an initializer
//                                 or the `value` tensor of a Constant node (Graph::IsConstant).
//   "unsupported_dtype"           one of those tensors is not FLOAT or DOUBLE (FLOAT16 and BFLOAT16
//                                 are refused: this pass reads and writes no 16-bit encodings).
//   "shape_mismatch"              W has rank < 3 or a zero dim; γ, β, μ, σ² or b is not 1-D of
//                                 length C_out; ConvTranspose's C_in is not divisible by group;
//                                 opset 7-8 spatial=0.
//   "non_finite"                  a folded value is infinite or NaN in W's type (σ² + ε <= 0, or
//                                 W·s overflows FLOAT): the fold would not compute what BN does.
// Unlike ORT, a BN whose output is a graph output is folded: the conv takes over the name.
// Checks run in that order; the first failing one is recorded. Every
// BatchNormalization of the graph ends up in exactly one of `folded` or
// `refused`, so the report can say why each remaining BN stayed.
//
// Rewrite (of the Graph, through its edit API: the Graph and its model() change
// together, and stay what a reload of that model would give):
//   - the BN node is removed; the conv writes the BN's output name, so every
//     value name downstream (and graph outputs) stays the same;
//   - W' and B' are new initializers (raw_data, W's dtype) named "<W>_bnfolded" and
//     "<conv bias>_bnfolded" (without a conv bias: "<β>_bnfolded"), with "_2", "_3", ...
//     appended when the name is taken anywhere in the model (subgraphs included);
//     the original tensors are never modified in place, so a W shared with another
//     conv stays as it is for that conv;
//   - initializers and Constant nodes that held W, b, γ, β, μ, σ² and are read by
//     nothing after the rewrite are removed (from graph.initializer, and from
//     graph.input where an IR < 4 or exporter listing put them); anything still
//     read elsewhere, and unrelated unused initializers, are kept;
//   - value_info of the conv's former output and of BN's optional outputs is dropped;
//   - for IR version < 4, W' and B' are also listed in graph.input (required there).
// Opsets, IR version, metadata, functions and the loader's opset-conversion
// record are kept. One pass folds one BN per conv; a BN fed by another BN is
// refused ("no_conv_producer"). Unnamed nodes are named by their index, as the
// loader names them, so a node after a folded BN may get a new name.
//
// Tensor data is decoded by DecodeTensor (ir/tensor_values.h); the loader has
// validated it against its dims, so a mismatch there is Error(kInvalidModel).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxfuse {

/// One folded BatchNormalization. Node names are those of the Graph before the fold.
struct BatchNormFold {
  std::string batchnorm;
  std::string conv;    ///< the Conv or ConvTranspose that absorbed it
  std::string weight;  ///< name of the new W' initializer
  std::string bias;    ///< name of the new B' initializer
};

/// One BatchNormalization that stays, and why. Node names are those of the Graph before the fold.
struct BatchNormRefusal {
  std::string batchnorm;
  std::string conv;    ///< the producer that would have absorbed it, "" if none
  std::string reason;  ///< stable code, see the list above
  std::string detail;  ///< one sentence naming the nodes and values involved
};

struct FoldResult {
  std::vector<BatchNormFold> folded;      ///< in node order
  std::vector<BatchNormRefusal> refused;  ///< in node order
};

/// Folds every inference BatchNormalization of `graph` whose input comes from a
/// Conv or ConvTranspose into that op's weights and bias, in place. Whatever
/// cannot be folded is a refusal, and without folds the graph is not touched.
FoldResult FoldBatchNormIntoConv(Graph& graph);

}  // namespace onnxfuse
