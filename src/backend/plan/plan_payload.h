// The plan payload parsed in place: its two large fields (the model, each
// constant's data) are located in the caller's bytes instead of copied into
// the parsed message, so that a mapped plan file is read with no copy of its
// weights (the cold start). Any payload of format 2 or 3 reads this way:
// it is the same wire format (src/backend/plan/plan_file.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "onnxfuse_plan.pb.h"

namespace onnxfuse::planformat {

/// A stored constant: its key and descriptor, and its bytes where they lie.
struct PayloadConstant {
  planfile::PackedConstant head;  ///< key and desc; data left empty
  std::string_view data;          ///< into the parsed bytes
};

/// A Plan message whose `model` and `constants` are in place.
struct PayloadView {
  planfile::Plan plan;  ///< every other field; model and constants empty
  std::string_view model;  ///< the serialized onnx.ModelProto, into the parsed bytes
  std::vector<PayloadConstant> constants;  ///< in stored order
};

/// Parses the `size` bytes at `data` as a planfile::Plan (protobuf wire
/// format, fields in any order, a repeated singular field's last occurrence
/// kept, as protobuf merges). The views point into `data`, which must outlive
/// them. Throws Error(kInvalidModel) naming `source` when the bytes do not parse.
PayloadView ParsePayloadInPlace(const void* data, std::size_t size, const std::string& source);

}  // namespace onnxfuse::planformat
