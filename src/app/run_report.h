// What `onnx-fuse run` prints and gives in --json about a compiled plan:
// its element types, int8 convolutions, steps, profile and quantized check.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/runtime/executor.h"
#include "backend/runtime/verify.h"
#include "ir/graph.h"

namespace onnxfuse {

/// How each element type of the graph's values is held and computed at run
/// time (src/backend/runtime/executor.h, "Element types"): {"FLOAT16":
/// {"values": 12, "computed_as": "as float32, converted at the edges"}, ...};
/// for the fused plan (`fused`), how the values only a quantization reads are
/// held ("dequantized_values", "dequantized_as").
nlohmann::json ElementTypesJson(const Graph& graph, bool fused);

/// "element types: FLOAT (214 values) as float32; INT32 (42 values), UINT8 (80
/// values) only in QuantizeLinear/DequantizeLinear (constants used at build
/// time; ...)": ElementTypesJson's line, the values a quantization alone reads
/// described once.
void PrintElementTypes(std::ostream& out, const nlohmann::json& element_types);

/// "check quantized activations ...: 40, at most 1 step apart ... ok".
void PrintQuantizedCheck(std::ostream& out, const Verification& v);

/// "int8 convolutions: 20 of 20 quantized ones", and why the others are
/// float (ScheduleStep::note), for a plan with quantized convolutions;
/// nothing otherwise.
void PrintInt8Convolutions(std::ostream& out, const std::vector<ScheduleStep>& schedule);

/// Each step with its implementation (oneDNN's name, e.g.
/// "jit_uni_int8:avx2" for an int8 convolution, or ours), the fusion group
/// that emitted it and that group's library pattern (null when none): what
/// the report's groups became.
nlohmann::json StepsJson(const std::vector<ScheduleStep>& schedule);

/// Each step's time (ms per inference, `step_ms` in schedule order) and the
/// time per kind of step.
nlohmann::json ProfileJson(const std::vector<ScheduleStep>& schedule, const std::vector<double>& step_ms);

/// The profile's lines: ms per inference by kind, then the 15 slowest steps
/// (ms, kind, nodes, implementation); `runs` the timed runs.
void PrintProfile(std::ostream& out, const std::vector<ScheduleStep>& schedule, const std::vector<double>& step_ms,
                  int runs);

}  // namespace onnxfuse
