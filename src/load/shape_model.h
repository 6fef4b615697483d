// A prepared model at other input shapes, without loading it again.
//
// A model is loaded, checked, converted, rewritten and fused once, on its
// symbolic graph (pipeline/prepare_model.h). What a new input shape changes is
// only the shape of each value: no parsing, checks, opset conversion or
// rewrites run again. Where the symbolic graph allows it, the types are its
// own with the call's numbers put for the symbols (shape_substitution.h), on
// a graph that shares the prepared graph's nodes, model and weights
// (Graph::Retyped): a new shape costs its values only. Otherwise ONNX shape
// inference (shape_inference.h) runs again, on a copy of the prepared model
// with the new input shapes pinned. That copy leaves out the data of the
// large initializers (the weights), which shape inference never reads; the
// graph it gives borrows them from the prepared graph
// (Graph::BorrowConstants), so graphs at many shapes hold the weights once.
// Small initializers keep their data, for the values data propagation reads
// (Reshape targets, Slice bounds).
//
// Declared value types the prepared graph had with symbolic or unknown dims
// are dropped and inferred again at the new shapes; fully static ones are
// kept (they hold for every input shape: a graph input a caller pins keeps
// its dims in both).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/graph.h"
#include "load/shape_substitution.h"

namespace onnxfuse {

class ShapeModel {
 public:
  /// Initializers of more elements than this are borrowed, not copied.
  static constexpr std::int64_t kCopiedElements = 4096;

  /// Keeps a copy of `prepared`'s model without its large initializers' data.
  explicit ShapeModel(std::shared_ptr<const Graph> prepared);

  /// The prepared graph with `input_shapes` (full shapes by input name; inputs
  /// not named keep their declared dims) pinned and every value's shape
  /// derived again: by putting the input dims for the symbols where that is
  /// sound (shape_substitution.h), else by ONNX inference; same nodes, in the
  /// same order, so the prepared graph's node ids and fusion groups hold for
  /// it. Throws Error: kUsage (from PinInputShapes) for a name that is no
  /// input, a rank the model does not declare or a dim it fixes; kInvalidModel, naming the model, when shape
  /// inference fails at these shapes (inputs whose dims contradict each
  /// other, e.g. an Add of lengths 7 and 9).
  Graph At(const std::map<std::string, std::vector<std::int64_t>>& input_shapes) const;

  const Graph& prepared() const { return *prepared_; }
  const std::shared_ptr<const Graph>& shared_prepared() const { return prepared_; }
  /// The prepared model without its large initializers' data (held as name,
  /// type and dims), and value_info only where it is fully static.
  const onnx::ModelProto& stripped() const { return model_; }
  /// The initializers stripped() holds without data: a graph made from it
  /// borrows them from prepared() (Graph::BorrowConstants).
  const std::vector<std::string>& borrowed() const { return borrowed_; }

 private:
  std::shared_ptr<const Graph> prepared_;
  onnx::ModelProto model_;            ///< prepared_'s model: large initializers as name, type and dims
  std::vector<std::string> borrowed_;  ///< those initializers' names
  std::optional<ShapeSubstitution> substitution_;  ///< nullopt: every shape is inferred
};

}  // namespace onnxfuse
