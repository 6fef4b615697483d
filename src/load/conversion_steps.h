// Small helpers shared by the opset conversion's units (src/load/).
#pragma once

#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

#include "load/opset_conversion.h"

namespace onnxfuse::load {

inline bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

/// The model's default-domain opset version (0 when it imports none).
inline std::int64_t DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (IsDefaultDomain(o.domain())) return o.version();
  return 0;
}

inline void SetDefaultOpset(onnx::ModelProto& model, std::int64_t version) {
  for (auto& o : *model.mutable_opset_import())
    if (IsDefaultDomain(o.domain())) o.set_version(version);
}

/// Opset 1-6 up to 9 with ONNX's version converter (up_conversion.cc).
void ConvertUp(onnx::ModelProto& model, const std::string& source, OpsetConversion& record);
/// Opset 18-23 / IR 9-10 down to opset 17 / IR 8 by our adapters (down_conversion.cc).
void ConvertDown(onnx::ModelProto& model, const std::string& source, OpsetConversion& record);

}  // namespace onnxfuse::load
