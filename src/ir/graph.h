// The graph IR: the forward dataflow graph of one ONNX model.
//
// Nodes and values are owned by the Graph in plain vectors and referred to by
// index (`NodeId`, `ValueId`); analyses (pattern kinds, post-dominator tree,
// groups) are side tables keyed by those ids. Nodes are stored in a topological
// order (the loader sorts them), so iterating `nodes()` visits every producer
// before its consumers: the "post-DFS order" of TVM's IndexedForwardGraph.
//
// The Graph also keeps the loaded `onnx::ModelProto` (with shape-inferred
// value_info and nodes in the sorted order) so writers can copy metadata,
// initializers and the original NodeProtos unchanged. Graph-level rewrites
// (BatchNormalization folding) edit both through the "Rewriting" methods.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/opset_conversion.h"

namespace onnxfuse {

using NodeId = std::uint32_t;
using ValueId = std::uint32_t;
inline constexpr NodeId kNoNode = std::numeric_limits<NodeId>::max();
inline constexpr ValueId kNoValue = std::numeric_limits<ValueId>::max();

/// Element type and shape of a tensor value, as far as shape inference knows it.
struct TensorType {
  std::int32_t elem_type = 0;            ///< onnx::TensorProto::DataType; 0 = unknown
  bool has_shape = false;                ///< false: rank unknown
  std::vector<std::int64_t> dims;        ///< -1 where the dim is unknown or symbolic
  std::vector<std::string> dim_params;   ///< symbol (e.g. "N") where dims[i] == -1, else ""

  /// Number of elements, or nullopt when the shape is unknown or symbolic (or its product overflows int64).
  std::optional<std::int64_t> NumElements() const;
  /// Size in bytes of a dense tensor of this type, or nullopt when unknown (or over 2^63).
  std::optional<std::int64_t> SizeInBytes() const;
  /// "[1,64,56,56]", with symbols by name and "?" for unknown dims; "[?]" for unknown rank.
  std::string ShapeString() const;
  /// True when both shapes are equal at every input shape: the same rank, and
  /// each dim the same known value or the same symbol (ONNX IR: one dim_param
  /// names one value throughout a model). An unknown, anonymous dim is equal
  /// to nothing. Element types are not compared.
  bool SameShape(const TensorType& other) const;
};

/// One tensor edge of the dataflow graph (SSA: at most one producer).
struct Value {
  std::string name;
  TensorType type;
  NodeId producer = kNoNode;       ///< kNoNode for graph inputs and initializers
  std::vector<NodeId> consumers;   ///< one entry per (node, input slot) use, in node order
  bool is_graph_input = false;     ///< listed in graph.input (may also be an initializer)
  bool is_graph_output = false;    ///< listed in graph.output
  int initializer = -1;            ///< index into graph.initializer, or -1
};

/// One operator application. `proto` is the original NodeProto (attributes, names).
struct Node {
  std::string name;                ///< node name; the loader names unnamed nodes "<op_type>_<index>"
  std::string op_type;
  std::string domain;              ///< "" for the default ONNX domain ("ai.onnx" is normalised to "")
  std::vector<ValueId> inputs;     ///< explicit inputs (kNoValue for an omitted optional input),
                                   ///< then values captured by subgraphs (If/Loop/Scan bodies)
  std::size_t num_explicit_inputs = 0;
  std::vector<ValueId> outputs;    ///< kNoValue for an omitted optional output
  onnx::NodeProto proto;
};

class Graph {
 public:
  /// Takes ownership of a model whose graph is already topologically sorted and
  /// shape-inferred, and builds nodes, values and use-lists from it.
  /// Throws Error(kInvalidModel) for a value produced twice or used before it is defined.
  Graph(onnx::ModelProto model, std::string source_path);

  /// `base` at other input shapes (load/shape_model.h): its nodes and values,
  /// each value v with `dims[v]` typed as those dims (its element type kept,
  /// no symbols), the others as in base. Copies no protobuf: the nodes and the
  /// model are base's, shared, and every initializer is borrowed from base
  /// (BorrowConstants), so a graph per input shape costs its values only.
  /// model() is base's model with these types, made the first time it is
  /// asked for. `dims` has one entry per value of base (ValueId).
  static Graph Retyped(std::shared_ptr<const Graph> base,
                       const std::vector<std::optional<std::vector<std::int64_t>>>& dims);

  const std::vector<Node>& nodes() const { return *nodes_; }
  const std::vector<Value>& values() const { return values_; }
  const Node& node(NodeId id) const { return nodes_->at(id); }
  const Value& value(ValueId id) const { return values_.at(id); }
  std::size_t num_nodes() const { return nodes_->size(); }

  const std::vector<ValueId>& inputs() const { return inputs_; }    ///< graph inputs that are not initializers
  const std::vector<ValueId>& outputs() const { return outputs_; }  ///< graph outputs, in order
  std::optional<ValueId> FindValue(const std::string& name) const;

  /// Initializer or `Constant`-node output: its value is known when the model is loaded.
  bool IsConstant(ValueId id) const;
  /// The tensor of an initializer or of a Constant node's `value` attribute; nullptr otherwise
  /// (and for an initializer whose data was released).
  const onnx::TensorProto* ConstantTensor(ValueId id) const;
  /// Frees an initializer's data (its name, type and dims stay, IsConstant stays
  /// true, ConstantTensor returns nullptr), for a consumer that keeps its own
  /// copy: the executable plan's prepacked weights. model() is no longer a
  /// complete model afterwards. No effect on other values.
  void ReleaseInitializer(ValueId id);
  bool IsReleased(ValueId id) const { return values_.at(id).initializer >= 0 && released_.count(id) > 0; }
  /// Shares `owner`'s constants: each initializer named in `names`, held here
  /// as its name, type and dims only, reads its data from owner's initializer
  /// of that name (ConstantTensor), which owner keeps alive. For a graph made
  /// from a copy of owner's model without its weights (load/shape_model.h), so
  /// that graphs of one model at many shapes hold its weights once.
  /// ReleaseInitializer of a borrowed constant drops the borrow only.
  /// Throws Error(kInvalidModel) for a name that is no initializer of both.
  void BorrowConstants(std::shared_ptr<const Graph> owner, const std::vector<std::string>& names);
  /// The graph whose initializer constant `id` reads (BorrowConstants), or nullptr.
  const Graph* BorrowedFrom(ValueId id) const { return borrowed_.count(id) ? constants_owner_.get() : nullptr; }

  /// Distinct nodes consuming any output of `id` (each consumer listed once, in node order).
  std::vector<NodeId> Consumers(NodeId id) const;

  /// The model: as loaded and edited; for a Retyped graph, its base's with
  /// this graph's value types (graph inputs, outputs and value_info).
  const onnx::ModelProto& model() const;
  const std::string& source_path() const { return source_path_; }
  /// Version of the default ("" / "ai.onnx") operator set the model imports.
  std::int64_t opset() const { return opset_; }
  /// What the loader's opset conversion did (from == to when nothing).
  const OpsetConversion& conversion() const { return conversion_; }
  void set_conversion(OpsetConversion conversion) { conversion_ = std::move(conversion); }

  // --- Rewriting (ir/graph_edit.cc). An edit changes model() at once; nodes(),
  // values(), ids and use-lists keep describing the graph before the edits until
  // CommitEdits(), so a pass edits by the ids it matched. CommitEdits re-derives
  // them from model() as the constructor does: ids, names and types are then
  // those a reload of model() would give (node ids shift past removed nodes, an
  // unnamed node is named by its new index; value types come from value_info).
  // No shape inference runs: an edit must keep every value's type. Edits are for
  // passes that run before ReleaseInitializer.

  /// A value name that nothing in the model (subgraphs included) uses and no
  /// earlier call returned since the last commit: `base`, else "<base>_2", "<base>_3", ...
  std::string NewValueName(const std::string& base);
  /// Adds `tensor` as an initializer; its name must be new (NewValueName). For IR
  /// version < 4 it is also listed in graph.input, as IR 3 requires.
  void AddInitializer(onnx::TensorProto tensor);
  /// Input `slot` of `node` reads the value named `value` (which must be defined
  /// at the commit); slot == the node's input count appends an input.
  void SetNodeInput(NodeId node, std::size_t slot, const std::string& value);
  /// Output `slot` of `node` writes the value named `value`; its former
  /// producer must be removed in the same commit.
  void SetNodeOutput(NodeId node, std::size_t slot, const std::string& value);
  /// Removes `node` at the commit.
  void RemoveNode(NodeId node);
  /// Removes initializer `id` (from graph.initializer, and from graph.input where listed) at the commit.
  void RemoveInitializer(ValueId id);
  /// Applies the removals, drops the value_info of values the edits left
  /// undefined, and re-derives nodes, values and use-lists. Throws
  /// Error(kInvalidModel) as the constructor does when a value is read but no
  /// longer defined, or defined twice.
  void CommitEdits();

 private:
  ValueId InternValue(const std::string& name, std::unordered_map<std::string, ValueId>& by_name);
  /// Builds nodes, values, use-lists, inputs and outputs from model_ (the constructor's work).
  void Index();
  /// model_ to edit: a Retyped graph's typed model, or a model no other graph shares.
  onnx::ModelProto& MutableModel();

  // Shared between a graph and its copies and Retyped graphs; an edit copies
  // the model first (MutableModel) and re-indexes into new nodes.
  std::shared_ptr<onnx::ModelProto> model_;
  std::string source_path_;
  std::int64_t opset_ = 0;
  OpsetConversion conversion_;
  std::shared_ptr<const std::vector<Node>> nodes_;
  struct TypedModel {  ///< a Retyped graph's model(), made on first use
    std::once_flag made;
    std::unique_ptr<onnx::ModelProto> model;
  };
  std::shared_ptr<TypedModel> typed_model_;
  std::vector<Value> values_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::shared_ptr<const std::unordered_map<std::string, ValueId>> value_by_name_;  ///< shared as nodes_ is
  std::unordered_set<ValueId> released_;  ///< initializers whose data ReleaseInitializer freed
  std::shared_ptr<const Graph> constants_owner_;  ///< BorrowConstants' owner
  std::unordered_map<ValueId, const onnx::TensorProto*> borrowed_;  ///< its initializers read in place
  std::unordered_set<std::string> taken_names_;    ///< NewValueName's: the model's names and those returned
  std::set<NodeId> removed_nodes_;                 ///< RemoveNode's, until the commit
  std::set<std::string> removed_initializers_;     ///< RemoveInitializer's, until the commit
};

/// TensorType from an ONNX TypeProto (non-tensor types give elem_type 0, no shape).
TensorType TensorTypeFromProto(const onnx::TypeProto& type);

/// The TypeProto of a TensorType, its inverse: dims by value, symbols by
/// name, anonymous where neither; an empty TypeProto for an unknown element
/// type.
onnx::TypeProto TypeProtoFromTensorType(const TensorType& type);

}  // namespace onnxfuse

namespace onnxfuse {

/// Names a node's subgraph attributes (If/Loop/Scan bodies) read from the
/// enclosing scope: implicit inputs that order and liveness must respect.
std::vector<std::string> CapturedNames(const onnx::NodeProto& node);

}  // namespace onnxfuse
