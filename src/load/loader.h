// Loading an ONNX model file into the graph IR.
//
// Accepts IR versions 3-8 and default-domain opsets 7-17 (what libonnx 1.12
// knows); other domains load and are opaque to the fusers. Initializers stored
// as external data (ONNX external-data spec: location/offset/length keys,
// paths relative to the model's folder) are read in. Nodes are sorted
// topologically, then ONNX shape inference fills in value shapes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxfuse {

struct LoadOptions {
  /// Graph input name -> full shape, from `--input-shape NAME=1x3x224x224`. A symbolic
  /// dim pinned this way (e.g. "N") takes the same value everywhere it appears.
  std::map<std::string, std::vector<std::int64_t>> input_shapes;
};

/// Reads and validates `path`. Throws Error with a one-line message naming the
/// file (and node, where there is one): kIo when unreadable; kInvalidModel for
/// bytes that are not a ModelProto (or nest messages deeper than 100), a cycle
/// (naming its nodes), a value without producer, a value defined twice, a graph
/// input without a type, a node that does not match its operator schema, a
/// tensor whose data disagrees with its dims (tensor_data.h: checked before any
/// allocation, external data's length and range included), external data
/// outside the model's folder, a model onnx::checker or type-checking shape
/// inference refuses (what the writer's CheckFusedModel demands of the output,
/// demanded of the input, so a failure there is onnx-fuse's bug, not the
/// model's), an ai.onnxfuse call without its function; kUnsupported for IR/opset
/// versions outside the ranges above and files over 2 GB.
Graph LoadModel(const std::string& path, const LoadOptions& options = {});

/// The same checks and preparation for a model already in memory; `source_name`
/// stands for the file in messages, `base_dir` resolves external data ("" = none allowed).
Graph LoadModelProto(onnx::ModelProto model, const std::string& source_name, const LoadOptions& options = {},
                     const std::string& base_dir = "");

/// Parses a serialized ModelProto with the limits LoadModel applies: at most
/// 2 GB (kUnsupported beyond), messages nested at most 100 deep, the whole input
/// consumed, a graph present (kInvalidModel otherwise). Nothing else is checked.
onnx::ModelProto ParseModelBytes(const void* data, std::size_t size, const std::string& source_name);

/// Parses "1x3x224x224" (dims separated by 'x' or ','). Throws Error(kUsage).
std::vector<std::int64_t> ParseShape(const std::string& text);

}  // namespace onnxfuse
