// Shape values with symbols: what Shape -> Gather -> Unsqueeze -> Concat
// compute from a model's symbolic input dims, and the output dims of the
// Slice they bound, which libonnx 1.12's inference leaves without a rank.
//
// A Hugging Face encoder slices its position ids to the sequence length:
//   ends = Unsqueeze(Gather(Shape(input_ids), 1))   -> [sequence]
//   position_ids = Slice(arange[1, 512], starts=[0], ends, axes=[1])
// ONNX 1.12 reads a Slice's starts and ends only from initializers, so the
// slice, and every value after it, stays untyped on the symbolic graph the
// fusion is decided on once for every length. Here the slice's output is
// typed [1, sequence]: its end is the symbol, its start 0 and its step 1.
//
// That type assumes the slice does not clamp (sequence <= 512): the fusion
// decided on it is checked at each input shape, where the model's shapes are
// inferred again with concrete dims (load/shape_model.h), and a longer
// sequence clamps there and is refused by the Add that needs both lengths
// equal, as ONNX Runtime refuses it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxfuse/tensor.h"

namespace onnxfuse {

/// One dim, or one element of a shape value: a known integer `value`
/// (`symbol` empty), or a symbol (an ONNX dim_param) plus `value` (an
/// element computed as past + 1). Only offsets of 0 are dims a type can name.
struct SymbolicDim {
  std::int64_t value = 0;
  std::string symbol;
  bool operator==(const SymbolicDim& other) const { return value == other.value && symbol == other.symbol; }
};
using SymbolicDims = std::vector<SymbolicDim>;

/// The dims of a value's declared or inferred type, when its rank is known and
/// each dim is a value or a symbol; nullopt otherwise (a dim libonnx's
/// inference named "unk__N" counts as unknown).
std::optional<SymbolicDims> DimsOfType(const onnx::TypeProto& type);

class SymbolicShapeValues {
 public:
  /// A value's type, as DimsOfType gives it (nullopt: unknown).
  using TypeOf = std::function<std::optional<SymbolicDims>(const std::string&)>;
  /// A value known as a concrete tensor (an initializer, a constant computed
  /// from constants), or nullptr.
  using ValueOf = std::function<const Tensor*(const std::string&)>;

  /// Visits the nodes of a graph in order. Records the shape value `node`
  /// computes (Shape of a value of symbolic dims; Gather, Unsqueeze,
  /// Squeeze, Concat, Identity and Cast of such values; Add and Sub of one
  /// element and a known integer), and returns the
  /// output dims these values decide, where a symbol is among them:
  ///   - a Slice's: start 0, step 1 and a symbolic end give that symbol; a
  ///     start and an end of the same symbol, their difference (past to
  ///     past + 1: 1); a start and an end both known, the extent ONNX's
  ///     Slice defines;
  ///   - a Reshape's: its shape value's dims, a 0 copying the input's, a -1
  ///     what the element count leaves when its symbols cancel (input
  ///     [1, S, 4, 64] to [1, S, -1]: 256).
  /// nullopt otherwise.
  std::optional<SymbolicDims> Visit(const onnx::NodeProto& node, const TypeOf& type_of, const ValueOf& value_of);

 private:
  /// The elements of a shape value recorded here, or nullopt.
  std::optional<SymbolicDims> Recorded(const std::string& name) const;
  /// The elements of a 0-D or 1-D integer value: recorded here, or a known tensor's.
  std::optional<SymbolicDims> Elements(const std::string& name, const ValueOf& value_of) const;
  std::optional<SymbolicDims> SliceDims(const onnx::NodeProto& node, const TypeOf& type_of,
                                        const ValueOf& value_of) const;
  std::optional<SymbolicDims> ReshapeDims(const onnx::NodeProto& node, const TypeOf& type_of,
                                          const ValueOf& value_of) const;

  std::map<std::string, SymbolicDims> values_;
};

}  // namespace onnxfuse
