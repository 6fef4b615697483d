// The opset conversion driver (load/opset_conversion.h): ONNX's version
// converter below opset 7 (up_conversion.cc), our adapters above 17
// (down_conversion.cc); element types opset 17 lacks: new_element_types.cc.
#include "load/opset_conversion.h"

#include "load/conversion_steps.h"

namespace onnxfuse {

OpsetConversion ConvertToWorkingOpset(onnx::ModelProto& model, const std::string& source) {
  OpsetConversion record;
  record.from_opset = record.to_opset = load::DefaultOpset(model);
  record.from_ir = record.to_ir = model.ir_version();
  const bool old_opset = record.from_opset >= kOldestOpset && record.from_opset < 7;
  const bool new_opset = record.from_opset > kWorkingOpset && record.from_opset <= kNewestOpset;
  const bool new_ir = model.ir_version() > kWorkingIrVersion && model.ir_version() <= kNewestIrVersion;
  if (old_opset) load::ConvertUp(model, source, record);
  else if (new_opset || new_ir) load::ConvertDown(model, source, record);
  return record;
}

}  // namespace onnxfuse
