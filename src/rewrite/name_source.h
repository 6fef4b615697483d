// Fresh value and node names for a model that the rewrite passes add to it
// (control-flow inlining, function expansion): ONNX requires every name a
// graph defines to be unique across the model, subgraphs included (IR.md,
// "Names Within a Graph"), so a new name avoids all of them.
#pragma once

#include <string>
#include <unordered_set>

#include <onnx/onnx_pb.h>

namespace onnxfuse {

/// Names that nothing in the model uses (values and nodes, of the main graph
/// and every subgraph; initializers, sparse ones included) and that no earlier
/// call returned.
class NameSource {
 public:
  explicit NameSource(const onnx::ModelProto& model);
  /// `base`, else "<base>_2", "<base>_3", ...
  std::string Fresh(const std::string& base);

 private:
  std::unordered_set<std::string> taken_;
};

}  // namespace onnxfuse
