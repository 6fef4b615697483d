// Opset conversion at load time: onnx-fuse works in the default-domain opsets
// that libonnx 1.12 knows (7-17, IR 3-8). Older models are up-converted with
// ONNX's own version converter; models of opset 18-23 (IR 9-10) are
// down-converted to opset 17 by one adapter per operator whose signature
// changed, each following the ONNX operator changelog (onnx/docs/Changelog.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/opset_conversion.h"

namespace onnxfuse {

/// Converts `model` in place into the working range:
///   - opset 1-6: onnx::version_conversion::ConvertVersion to opset 9 (shape
///     inference first, for the adapters that read sizes);
///   - opset 18-23 or IR 9-10: to opset 17 and IR 8 (the main graph, If/Loop/
///     Scan bodies and model-local functions).
/// Models already in range are left untouched (byte for byte).
/// Throws Error(kUnsupported) naming `source`, the node, its op and opset for
/// what opset 17 cannot express: an op first defined after 17 without a
/// rewrite (Col2Im, DeformConv, Attention, ...), a new attribute value
/// (Pad mode wrap, Resize antialias, ...), float8/int4/uint4/float4/bfloat16
/// tensors; or a node the version converter has no adapter for. Opsets
/// outside 1-23 and IR versions above 10 are left to the loader's range check.
OpsetConversion ConvertToWorkingOpset(onnx::ModelProto& model, const std::string& source);

/// For a model past opset 17 or IR 8: throws Error(kUnsupported) naming the
/// value or node when a tensor, a declared value or a Cast uses an element
/// type opset 17 lacks (bfloat16, float8, int4, uint4, float4). The loader
/// calls it before validating tensor data, which knows only opset-17 types.
void RefuseNewElementTypes(const onnx::ModelProto& model, const std::string& source);

}  // namespace onnxfuse
