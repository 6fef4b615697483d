// One step of the opset conversion (src/load/conversion_steps.h) run alone,
// for the tests of up_conversion.cc and down_conversion.cc. Header-only: the
// test binary globs *_test.cc.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "load/conversion_steps.h"
#include "load/opset_conversion.h"

namespace onnxfuse::test {

/// Runs `step` (load::ConvertUp or load::ConvertDown) on `model`, read from
/// file `source`, as ConvertToWorkingOpset (src/load/opset_conversion.cc)
/// does: from a record of the model as it is. Returns the record the step
/// filled in; throws what the step throws.
inline OpsetConversion RunConversionStep(void (*step)(onnx::ModelProto&, const std::string&, OpsetConversion&),
                                         onnx::ModelProto& model, const std::string& source) {
  OpsetConversion record;
  record.from_opset = record.to_opset = load::DefaultOpset(model);
  record.from_ir = record.to_ir = model.ir_version();
  step(model, source, record);
  return record;
}

}  // namespace onnxfuse::test
