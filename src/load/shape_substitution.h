// A prepared model's shapes at new input dims by putting numbers for its
// symbols, where that is sound, instead of running shape inference again.
//
// ShapeModel (shape_model.h) infers every value's shape again at each new
// input shape: for a small transformer, ONNX inference and the seeding around
// it are about a third of what a new sequence length costs. Often they only
// repeat what the symbolic graph already says: an encoder's values are
// [1, sequence, 256], [1, 4, sequence, sequence], ... and at sequence = 37
// they are those dims with 37 put for the symbol.
//
// That holds when, on the prepared (symbolic) graph:
//   - every value's dims are known numbers or symbols the graph inputs declare;
//   - every node's output dims follow from its input dims by its op's shape
//     rule for *every* value of the symbols (symbolic_shape_rules.h), checked
//     here once per model:
//       * elementwise ops with broadcasting (ONNX Broadcasting.md): each input
//         dim is 1 or the output's, the output's is some input's; a symbol
//         meeting a different number (S against 5) holds for one value of S
//         only, and is refused;
//       * ops whose first output has their first input's dims (unary math,
//         activations, Cast, Softmax, LayerNormalization, Dropout, ...);
//       * MatMul (numpy.matmul: equal K, broadcast batch dims), Gemm,
//         Transpose, Gather, Shape, Size, Unsqueeze and Squeeze with constant
//         axes, Concat, Flatten, reductions with constant axes;
//       * Reshape and Slice, whose dims follow the elements of shape values
//         (Shape -> Gather -> Concat ...): the dims SymbolicShapeValues
//         derives from those elements (symbolic_shape_values.h). A Slice
//         whose constant start s and symbolic extent e would clamp at a
//         data dim D is only exact while s + e <= D: each call checks it;
//       * any node whose input and output dims are all numbers and that reads
//         no shape value following a symbol: it is the same at every shape.
//   - A node no rule covers (Expand, Range, If, a custom domain, ...) with
//     symbolic dims makes the model not substitutable: ShapeModel infers.
//
// A call falls back to inference (At returns nullopt) when an input's dims
// contradict its declaration, a symbol gets two values or is not given, a
// symbol's value is below 1, or a Slice would clamp: inference then gives
// the shapes, or the error, it always gave.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "load/symbolic_shape_values.h"

namespace onnxfuse {

class ShapeSubstitution {
 public:
  /// The substitution for `prepared` (a graph with symbolic input dims), or
  /// nullopt when some value or node is not covered; `why` then names the
  /// first such node or value.
  static std::optional<ShapeSubstitution> Of(const Graph& prepared, std::string* why = nullptr);

  /// Each value's dims (by ValueId of the prepared graph; nullopt for a value
  /// without a type there) at `input_shapes` (full dims by input name; an
  /// input not named keeps its declared dims), or nullopt when the
  /// substitution does not hold at these shapes (see the header).
  std::optional<std::vector<std::optional<std::vector<std::int64_t>>>> At(
      const std::map<std::string, std::vector<std::int64_t>>& input_shapes) const;

  /// A Slice's axis whose extent follows a symbol: exact while
  /// start + extent <= data dim, which At checks.
  struct NoClamp {
    std::int64_t start = 0;
    SymbolicDim extent;
    std::int64_t data_dim = 0;
  };

 private:
  std::vector<std::optional<SymbolicDims>> dims_;  ///< by ValueId
  std::vector<std::pair<std::string, SymbolicDims>> inputs_;  ///< each graph input's declared dims
  std::vector<NoClamp> no_clamp_;
};

}  // namespace onnxfuse
