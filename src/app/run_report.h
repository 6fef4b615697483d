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

/// The ceilings of the roofline model (S. Williams, A. Waterman, D. Patterson,
/// CACM 2009) for a run on `threads` threads, measured on this machine
/// (backend/kernels/machine_peaks.h): the fp32 multiply-add peak of that many
/// cores and the rate at which that many threads read memory.
struct Roofline {
  int threads = 1;
  double peak_gflops = 0;     ///< GFLOPS of all `threads` cores
  double bandwidth_gbps = 0;  ///< GB/s (1e9 bytes per second) read by `threads` threads
  /// The least time in ms a step of `flops` and `bytes` (ScheduleStep) can
  /// take: the larger of its arithmetic at the peak and its bytes at the
  /// memory rate. A step whose operands stay in cache may beat the second.
  double BoundMs(double flops, double bytes) const;
};

/// Measures the ceilings for `threads` threads (about half a second).
Roofline MeasureRoofline(int threads);

/// A plan's work per inference: the sums of its steps' flops and bytes
/// (ScheduleStep), and of their roofline bounds in ms under `roofline` (0
/// without one).
struct PlanWork {
  double flops = 0, bytes = 0, bound_ms = 0;
};
PlanWork WorkOf(const std::vector<ScheduleStep>& schedule, const Roofline* roofline = nullptr);

/// Each step's time (ms per inference, `step_ms` in schedule order), its
/// floating-point operations and bytes (ScheduleStep::flops, bytes) and its
/// roofline bound in ms; the time per kind of step; "roofline": the ceilings,
/// the plan's operations and bytes per inference and its bound, the sum of its
/// steps' (compute_ms and memory_ms: the sums of each ceiling alone).
nlohmann::json ProfileJson(const std::vector<ScheduleStep>& schedule, const std::vector<double>& step_ms,
                           const Roofline& roofline);

/// The profile's lines: ms per inference by kind, the roofline (ceilings,
/// bound, how far the steps are from it), then the 15 slowest steps (ms,
/// GFLOPS, GB/s, times their bound, kind, nodes, implementation); `runs` the
/// timed runs.
void PrintProfile(std::ostream& out, const std::vector<ScheduleStep>& schedule, const std::vector<double>& step_ms,
                  int runs, const Roofline& roofline);

}  // namespace onnxfuse
