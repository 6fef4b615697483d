// The adapters that rewrite one node of opset 18-23 into opset-17 nodes, one
// unit per operator whose signature changed (ONNX Changelog.md, op by op).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/attributes.h"

namespace onnxfuse::load {

/// What an adapter may know and do besides its node.
struct DownContext {
  std::string source;        ///< the model file, for messages
  std::int64_t from_opset;   ///< the model's default-domain opset
  /// The tensor of an initializer or Constant output visible here; nullptr if none.
  std::function<const onnx::TensorProto*(const std::string&)> constant;
  /// The dims of a value when declared (graph input, value_info, initializer)
  /// or inferred by ONNX shape inference of the part of the main graph already
  /// converted (-1 for a symbolic dim); nullopt when its rank is not known.
  std::function<std::optional<std::vector<std::int64_t>>(const std::string&)> dims;
  /// A value name not used anywhere in the model yet, starting with `base`.
  std::function<std::string(const std::string& base)> fresh;
  /// Adds an initializer to the graph being converted.
  std::function<void(onnx::TensorProto)> add_initializer;
  /// Why the last shape inference behind `dims` failed, if it did (for messages).
  std::string inference_failure;

  /// Refuse(node, "the shape of V is neither declared nor inferable ..."), with inference_failure.
  [[noreturn]] void MissingDims(const onnx::NodeProto& node, const std::string& value) const;
  /// Throws Error(kUnsupported): "SOURCE: node 'N' (Op, opset V): WHY".
  [[noreturn]] void Refuse(const onnx::NodeProto& node, const std::string& why) const;
  /// The int64 values of constant `name`, or nullopt when it is not a constant.
  std::optional<std::vector<std::int64_t>> Ints(const std::string& name) const;
};

/// Nodes replacing `node`, and a one-line description of the rewrite.
struct Rewrite {
  std::vector<onnx::NodeProto> nodes;
  std::string what;
};

/// Adapters, by operator (each in its own adapt_*.cc).
Rewrite AdaptReduce(const onnx::NodeProto& node, DownContext& ctx);              // Reduce*-18
Rewrite AdaptSplit(const onnx::NodeProto& node, DownContext& ctx);               // Split-18
Rewrite AdaptPad(const onnx::NodeProto& node, DownContext& ctx);                 // Pad-18, -19, -21
Rewrite AdaptResize(const onnx::NodeProto& node, DownContext& ctx);              // Resize-18, -19
Rewrite AdaptGroupNormalization(const onnx::NodeProto& node, DownContext& ctx);  // GroupNormalization-18, -21
Rewrite AdaptGelu(const onnx::NodeProto& node, DownContext& ctx);                // Gelu-20
Rewrite AdaptMish(const onnx::NodeProto& node, DownContext& ctx);                // Mish-18
Rewrite AdaptPooling(const onnx::NodeProto& node, DownContext& ctx);             // AveragePool-19, LpPool-18
Rewrite AdaptNewDefaults(const onnx::NodeProto& node, DownContext& ctx);         // Cast-19, Scatter*-18, GridSample-20, ...

// --- small helpers shared by the adapters -----------------------------------
// Attributes: FindAttribute, AttrInt and AttrString of ir/attributes.h.
/// Removes attribute `name` if present.
void RemoveAttribute(onnx::NodeProto& node, const std::string& name);
void SetInts(onnx::NodeProto& node, const std::string& name, const std::vector<std::int64_t>& values);
/// A node `op_type` (inputs) -> (outputs), named `name`.
onnx::NodeProto MakeNode(const std::string& op_type, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& name);
/// An initializer: int64 [n] or float scalar.
onnx::TensorProto IntTensor(const std::string& name, const std::vector<std::int64_t>& values);
onnx::TensorProto FloatScalar(const std::string& name, float value);
/// A Constant node writing rank-0 float `value` to `output` (as torch exports scalars).
onnx::NodeProto ConstantNode(const std::string& output, float value);

}  // namespace onnxfuse::load
