// What the QOperator rewrites (qoperator_as_qdq.cc, contrib_qoperators.cc)
// share: the nodes and initializers of a model's QDQ form as they are
// written, and the questions they ask of the graph being rewritten.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/graph.h"
#include "rewrite/name_source.h"

namespace onnxfuse {

/// The float32 values of constant `name` (an initializer or a Constant
/// node's output), or nullopt.
std::optional<std::vector<float>> FloatConstant(const Graph& graph, const std::string& name);

/// Whether `name` is a constant of the graph (an initializer or a Constant node's output).
bool IsConstantValue(const Graph& graph, const std::string& name);

/// The rank of `name`'s declared or inferred shape; 0 when it is unknown.
std::size_t RankOf(const Graph& graph, const std::string& name);

/// Input `slot` of `proto`, "" when it is omitted (an optional input).
std::string OptionalInput(const onnx::NodeProto& proto, int slot);

/// The Casts to float among `v`'s readers; `others` is set when anything else
/// reads it too, or it is a graph output.
std::vector<NodeId> FloatCastReaders(const Graph& graph, ValueId v, bool& others);

/// Replaces `graph` by `model` with `nodes` as its main graph's nodes, loaded
/// and shape-inferred (source path and opset conversion kept): how a rewrite
/// that wrote a node list takes effect. Throws what LoadModelProto throws.
void ReloadWithNodes(Graph& graph, onnx::ModelProto model, google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes);

/// Appends the nodes of a QDQ form to a node list, with names new to the model.
class QdqWriter {
 public:
  QdqWriter(onnx::ModelProto& model, google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes)
      : model_(model), nodes_(nodes), fresh_(model) {}

  /// A node `op` of the default domain reading `inputs`, named after `base`;
  /// its output is `output`, or a new name after `base`, which it returns.
  std::string Node(const std::string& op, const std::string& base, const std::vector<std::string>& inputs,
                   const std::string& output = "", std::optional<std::int64_t> axis = std::nullopt);

  /// The node written last, to add attributes to.
  onnx::NodeProto& Last() { return *nodes_.Mutable(nodes_.size() - 1); }

  /// Adds `tensor` as an initializer named after `base`; returns its name.
  std::string Initializer(const std::string& base, onnx::TensorProto tensor);

 private:
  onnx::ModelProto& model_;
  google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes_;
  NameSource fresh_;
};

}  // namespace onnxfuse
