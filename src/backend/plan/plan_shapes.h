// A plan's model at input shapes (format version 3, src/backend/plan/plan_file.h):
// the shapes a plan is built at, the pins that load its stored model at
// requested ones, and its stored groups carried node for node onto a load of
// the same model at other shapes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"
#include "fuse/fusion_plan.h"
#include "ir/graph.h"

namespace onnxfuse::planshapes {

using Shapes = std::map<std::string, std::vector<std::int64_t>>;

/// Every graph input of known rank with its dims, symbolic and unknown ones
/// as 1: the shapes `graph` is compiled at when nothing pins them (the
/// executor takes unknown dims as 1 too).
Shapes BuiltShapes(const Graph& graph);

/// True when some input of `graph` has a symbolic or unknown dim or rank.
bool HasOpenDims(const Graph& graph);

/// The pins that load `graph` (the stored model, as a GraphProto) at
/// `requested` (input name -> full shape): the requested shapes, and for
/// every other input its `built` shape except dims whose symbol a requested
/// input gives a value (that value). Throws Error(kUsage) naming both inputs
/// when two requested inputs give one symbol two values. Names, ranks and
/// fixed dims are left to the loader to check (LoadOptions::input_shapes).
Shapes ShapesToCompile(const onnx::GraphProto& graph, const Shapes& built, const Shapes& requested);

/// What a stored group says besides its nodes.
struct GroupLabel {
  std::string rule;
  std::string pattern;                 ///< FusedGroup::pattern_name
  std::vector<PatternRegion> regions;  ///< FusedGroup::regions
};

/// A fusion of `graph` from a label per node (-1: none; all -1 and no labels:
/// the empty fusion of an unfused plan) and what each label's group says.
/// Throws Error(kInvalidModel) prefixed by `source` when a node has no group,
/// the groups are not a valid fusion (fusion_plan.h, ValidateFusionPlan) or a
/// region names a node out of range.
FusionPlan GroupsFromLabels(const Graph& graph, const std::vector<int>& label, const std::vector<GroupLabel>& groups,
                            const std::string& strategy, const std::string& source);

/// `fusion` (of another load of `graph`'s model: the same nodes in the same
/// order) on `graph`. Throws Error(kInvalidModel) when the node counts differ
/// or the groups do not fit.
FusionPlan SameGroupsOn(const Graph& graph, const FusionPlan& fusion);

}  // namespace onnxfuse::planshapes
