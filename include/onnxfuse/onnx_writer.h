// Writing a FusionPlan back as an ONNX model.
//
// Every group of two or more nodes becomes one node of domain "ai.onnxfuse",
// whose op type is named after its members' op types (e.g.
// "Conv_BatchNormalization_Relu"; with more than 6 members the first three and
// the member count, e.g. "Conv_BatchNormalization_Relu_x12") and which is
// defined by a model-local FunctionProto (ONNX IR version 8, "Functions" in
// onnx/docs/IR.md) holding the original nodes. The call node is named
// "fused_<group id>_<first member's name>", reads GroupInputs and writes
// GroupOutputs under their original names, and lists its members' names in its
// doc_string. Function bodies use positional names (inputs x0.., outputs y0..,
// other values t0.., nodes "<OpType>_<member index>"), so structurally
// identical groups share one function; an attribute whose value differs
// between them becomes a function attribute "<OpType>_<member index>_<name>"
// (e.g. "Conv_0_strides"), referenced from the body with ref_attr_name and set
// on each call node. Name clashes get a suffix "_2", "_3", ...
// Groups are written in a topological order of the group graph; single nodes,
// and groups holding If/Loop/Scan nodes (whose bodies may read outer names a
// function cannot see), are written as their original NodeProtos.
// Graph inputs, outputs, names, initializers, metadata and existing functions
// are kept; value_info is kept for values still in the main graph; the IR
// version is raised to 8; "ai.onnxfuse" version 1 is imported when used.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxfuse/fusion_plan.h"
#include "onnxfuse/graph.h"

namespace onnxfuse {

inline constexpr const char* kFusedDomain = "ai.onnxfuse";

struct FusedModel {
  onnx::ModelProto model;
  std::vector<std::string> function_of_group;  ///< function (op type) name per group id; "" for groups written as their original nodes
};

/// Builds the rewritten model. Throws Error(kInternal) if the plan is invalid.
FusedModel BuildFusedModel(const Graph& graph, const FusionPlan& plan);

/// Runs onnx::checker::check_model, then strict type-checking shape inference
/// (Python's full_check; libonnx 1.12's C++ check_model has no such flag), which
/// enters model-local functions; then checks each fused call against its
/// function (declared attributes all set, types matching), which libonnx 1.12
/// does not. Throws Error(kInternal) with the first line of the message: a
/// written model that fails the checker is a bug in onnx-fuse.
void CheckFusedModel(const onnx::ModelProto& model);

/// Serializes `model` to a temporary file "<path>.tmp.XXXXXX" in the target
/// directory, fsyncs it and renames it over `path` (keeping an existing file's
/// permissions), so a failure leaves the old file untouched and no temporary
/// file behind. Throws Error(kIo, "<path>: <reason>"), or Error(kUnsupported)
/// for a model over protobuf's 2 GB limit (external data is not written yet).
void SaveModelAtomically(const onnx::ModelProto& model, const std::string& path);

}  // namespace onnxfuse
