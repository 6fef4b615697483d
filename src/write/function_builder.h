// Internal to the ONNX writer: turns the fused groups of a FusionPlan into
// model-local FunctionProtos, one per distinct group structure.
//
// A group's body is its member NodeProtos with values renamed by position:
// function inputs x0.. (GroupInputs order: first use), function outputs y0..
// (GroupOutputs order: production), other member outputs t0.. (production
// order). Body nodes are named "<OpType>_<member index>" and their attributes
// sorted by name, so structurally identical groups get identical bodies; the
// original node names go into the call node's doc_string.
//
// Structure key: per member its domain, op type, canonical input/output names
// (the wiring) and attribute names with types. Groups with one key form a
// family sharing one function. Within a family an attribute whose value is the
// same in every group stays a literal in the body; one that differs becomes a
// function attribute named "<OpType>_<member index>_<attribute>" (e.g.
// "Conv_0_strides"), referenced from the body with ref_attr_name and set on
// every call node (ONNX 1.12 function attributes have no defaults).
#pragma once

#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "fuse/fusion_plan.h"
#include "ir/graph.h"

namespace onnxfuse::detail {

/// How one group is written.
struct FunctionCall {
  std::string function;                          ///< function name = op type; "" = emit the members unchanged
  std::vector<onnx::AttributeProto> attributes;  ///< the call node's attributes (the family's varying ones)
};

struct FunctionSet {
  std::vector<onnx::FunctionProto> functions;  ///< new functions, in order of their first group
  std::vector<FunctionCall> calls;             ///< per group id
};

/// Op type / function name of a group: member op types joined by '_' in
/// topological order; with more than 6 members, the first three followed by
/// "_x<member count>" (e.g. "Conv_BatchNormalization_Relu_x12").
std::string FusedOpName(const Graph& graph, const FusedGroup& group);

/// Builds the functions of all groups with two or more members. `taken` holds
/// function names already defined in domain ai.onnxfuse (a model fused
/// before); new names avoid them by a suffix "_2", "_3", ... Groups whose
/// members carry subgraph attributes (If/Loop bodies may read outer-scope names
/// that a function cannot see) are not turned into functions.
FunctionSet BuildFunctions(const Graph& graph, const FusionPlan& plan, std::set<std::string> taken);

}  // namespace onnxfuse::detail
