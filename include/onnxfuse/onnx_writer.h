// Writing a FusionPlan back as an ONNX model.
//
// Every group of two or more nodes becomes one node of domain "ai.onnxfuse",
// whose op type is named after its members' op types (e.g.
// "Conv_BatchNormalization_Relu") and which is defined by a model-local
// FunctionProto (ONNX IR version 8, "Functions" in onnx/docs/IR.md) holding
// the original nodes. Structurally identical groups share one function; an
// attribute whose value differs between them becomes a function attribute,
// referenced from the body with ref_attr_name and set on each call node.
// Graph inputs, outputs, names, initializers and metadata are kept.
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
  std::vector<std::string> function_of_group;  ///< function (op type) name per group id; "" for single nodes
};

/// Builds the rewritten model. Throws Error(kInternal) if the plan is invalid.
FusedModel BuildFusedModel(const Graph& graph, const FusionPlan& plan);

/// Runs onnx::checker::check_model with full_check (shape inference included).
/// Throws Error(kInternal) with the checker's message: a written model that
/// fails the checker is a bug in onnx-fuse.
void CheckFusedModel(const onnx::ModelProto& model);

/// Serializes `model` to a temporary file in the target directory, then renames
/// it over `path`, so a failure never leaves a partial file. Throws Error(kIo).
void SaveModelAtomically(const onnx::ModelProto& model, const std::string& path);

}  // namespace onnxfuse
