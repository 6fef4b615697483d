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

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxfuse/error.h"
#include "fuse/fusion_plan.h"
#include "ir/graph.h"
#include "ir/fused_domain.h"

namespace onnxfuse {

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

/// Protobuf's limit for one serialized message (2 GB - 1).
inline constexpr std::uint64_t kProtobufMessageLimit = 2147483647;

struct SaveOptions {
  /// A model whose inline serialization would be larger than this is written
  /// with its large initializers as external data (default: protobuf's limit).
  std::uint64_t inline_limit = kProtobufMessageLimit;
  /// Initializers with at least this many bytes of raw_data go to the data file;
  /// smaller ones stay inline (onnx.save_model's size_threshold default).
  std::int64_t min_external_bytes = 1024;
};

/// Serializes `model` to a temporary file "<path>.tmp.XXXXXX" in the target
/// directory, fsyncs it and renames it over `path` (keeping an existing file's
/// permissions), so a failure leaves the old file untouched and no temporary
/// file behind. Throws Error(kIo, "<path>: <reason>").
///
/// Over `inline_limit`, initializers of at least `min_external_bytes` are
/// written to "<path>.data" (ONNX external data, onnx/docs/ExternalData.md:
/// location = that file's name, relative to the model's folder; offset; length),
/// each at an offset aligned to 4096 bytes (64 bytes for tensors under 64 KB),
/// and the model refers to them. The data file is written to a temporary file
/// too, and both are renamed only once both are complete and synced (data
/// first), so a failure leaves the previous pair untouched. Only a model whose
/// inline part still exceeds protobuf's limit is refused (kUnsupported). Memory:
/// the tensors are written from `model` itself; only the small rest is copied.
/// A model that fits inline is written inline even if its input used external
/// data (it loads into one file; an old "<path>.data" is left alone).
void SaveModelAtomically(const onnx::ModelProto& model, const std::string& path, const SaveOptions& options = {});

}  // namespace onnxfuse
