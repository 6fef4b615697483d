// Stages of a run whose shapes follow values (staged_model.h): which nodes of
// a prepared graph can be compiled with what a run knows so far.
//
// A node is ready when every value it reads (its subgraphs' captures
// included) is known or computed by a ready node, it is not an If, Loop or
// Scan, and ONNX shape inference gives each of its outputs a static shape and
// an element type, and it reads and writes no empty float tensor (the
// compiled kernels refuse those: no detection; the runner evaluates such
// nodes on the host, where every op knows them). Inference runs on the not-yet-run nodes with the known
// values as graph inputs of their actual shapes; a small value that a node
// reads as a shape, a count, bounds, scales or a branch condition (Reshape's
// shape, TopK's K, Range's limits, Resize's scales, an If's condition:
// ReadsAsShape) is given
// as an initializer instead, so that inference and the compiler see its
// elements. Nodes whose output shapes depend on other values (NonZero,
// NonMaxSuppression, a TopK whose K comes from one of them) are not ready:
// the runner evaluates them one by one, or in a later stage once what they
// read is known.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/graph.h"
#include "load/shape_model.h"
#include "pipeline/shapes_follow_values.h"
#include "onnxfuse/tensor.h"

namespace onnxfuse::session {

/// The values a run knows so far, by name: the model's inputs, and the
/// outputs of the stages and nodes it has run.
using KnownValues = std::map<std::string, Tensor>;

/// Values of at most this many elements that a node reads as a shape
/// (ReadsAsShape) are constants of a stage, so its cache key holds their elements.
inline constexpr std::int64_t kMaxShapeConstant = 64;


/// Each value's dims at one input signature, by ValueId (nullopt: not known
/// there): TypeDims of the graph loaded at it.
using ValueDimsList = std::vector<std::optional<std::vector<std::int64_t>>>;

/// The dims of `prepared`'s values (by its ValueIds) as `at` types them: `at`
/// is `prepared` at one signature (ShapeModel::At: same nodes and values,
/// matched here by name); nullopt where `at` has no value of that name or
/// its type has no static shape.
ValueDimsList TypeDims(const Graph& prepared, const Graph& at);

/// Nodes of `graph` whose work changes with a dim that changed between two
/// signatures (`before`, `after`: the dims of its values at each): those that
/// read or write a value whose dims differ; those whose integer or bool
/// outputs follow such dims (Shape and Size of it, and the shape arithmetic
/// on their results); and those that read such a result as a shape
/// (ReadsAsShape). A value whose dims are not known at both (left untyped by
/// inference) is taken as changed when its node reads a changed value.
/// The stages between these nodes keep their shapes and constants whatever
/// that dim is: in a decoder step with a KV cache, they are the cache's
/// Concat and the attention over it.
std::vector<bool> NodesFollowingChangedDims(const Graph& graph, const ValueDimsList& before,
                                            const ValueDimsList& after);

/// True when one of `nodes` reads an initializer of more than
/// ShapeModel::kCopiedElements elements: weights, whose products the
/// compiled kernels are there for.
bool ReadsWeights(const Graph& graph, const std::vector<bool>& nodes);

/// True for the ops of attention over a cache and the shape arithmetic
/// around it, which the host evaluator runs at a new length more cheaply
/// than a new length compiles: moving data (Concat, Transpose, Reshape,
/// Slice, Gather, ...), comparisons and masks, elementwise arithmetic,
/// MatMul, Softmax. Not spatial ops (Resize, pooling, ...): an image of a
/// new size is better compiled once and run many times.
bool FollowsDimCheaply(const Node& node);

/// One stage: the ready nodes as a model of their own.
struct Stage {
  /// Graph inputs: the known values the ready nodes read (those ReadsAsShape
  /// as initializers with their elements); outputs: the values they compute
  /// that a later node or the model's outputs read, with inferred types.
  /// Large initializers come without data (ShapeModel::stripped).
  onnx::ModelProto model;
  std::vector<NodeId> nodes;          ///< the ready nodes' ids in the prepared graph, in order
  std::vector<std::string> borrowed;  ///< model's initializers to borrow from the prepared graph
};

/// The stage of `shapes.prepared()` after the nodes marked in `done` have run
/// (`done` has one entry per node). Nodes marked in `host` (empty: none)
/// never enter a stage: the runner evaluates them. Throws
/// Error(kInvalidModel) naming the model when shape inference fails at the
/// known values' shapes.
Stage SplitStage(const ShapeModel& shapes, const std::vector<bool>& done, const KnownValues& known,
                 const std::vector<bool>& host = {});

/// What decides a stage, as a string for its cache: the nodes done, and each
/// known value a remaining node outside `host` reads (name, element type,
/// dims, and the elements of those given as constants, floats bit-exact).
std::string StageKey(const Graph& prepared, const std::vector<bool>& done, const KnownValues& known,
                     const std::vector<bool>& host = {});

}  // namespace onnxfuse::session
