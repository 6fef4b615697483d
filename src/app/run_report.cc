#include "app/run_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <numeric>
#include <utility>

#include "backend/kernels/machine_peaks.h"
#include "ir/tensor_io.h"

namespace onnxfuse {

namespace {

// Mean ms per inference of each kind of step ("conv", "reorder", ...), slowest first.
std::vector<std::pair<std::string, double>> MsPerKind(const std::vector<ScheduleStep>& schedule,
                                                     const std::vector<double>& step_ms) {
  std::map<std::string, double> per_kind;
  for (std::size_t i = 0; i < schedule.size() && i < step_ms.size(); ++i) per_kind[schedule[i].kind] += step_ms[i];
  std::vector<std::pair<std::string, double>> sorted(per_kind.begin(), per_kind.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return sorted;
}

// "1 step", "3 steps", "inf steps".
std::string FormatSteps(double steps) {
  if (!std::isfinite(steps)) return "inf steps";
  const auto n = static_cast<long long>(steps);
  return std::to_string(n) + (n == 1 ? " step" : " steps");
}

// A value only QuantizeLinear and DequantizeLinear nodes read (a QDQ model's
// quantized weights, biases and activations, and zero points): how it is held
// depends on the plan, not on its type.
bool IsDequantized(const Graph& graph, const Value& value) {
  return !value.consumers.empty() && std::all_of(value.consumers.begin(), value.consumers.end(), [&](NodeId c) {
    const Node& n = graph.node(c);
    return (n.op_type == "DequantizeLinear" || n.op_type == "QuantizeLinear") && n.domain.empty();
  });
}

}  // namespace

nlohmann::json ElementTypesJson(const Graph& graph, bool fused) {
  std::map<std::int32_t, int> counts, dequantized;
  for (const Value& value : graph.values())
    if (value.type.elem_type != onnx::TensorProto::UNDEFINED) {
      ++counts[value.type.elem_type];
      if (value.type.elem_type != onnx::TensorProto::FLOAT && IsDequantized(graph, value))
        ++dequantized[value.type.elem_type];
    }
  nlohmann::json types = nlohmann::json::object();
  for (const auto& [type, count] : counts) {
    std::string how = "as float32";
    if (type == onnx::TensorProto::FLOAT16 || type == onnx::TensorProto::DOUBLE)
      how = "as float32, converted at the edges (float16 results of host steps rounded to half)";
    else if (type == onnx::TensorProto::BOOL)
      how = "as int64 0/1, on host steps";
    else if (StorageTypeOf(type) == onnx::TensorProto::INT64)
      how = "as int64, on host steps, wrapped to the type's width";
    else if (type != onnx::TensorProto::FLOAT)
      how = "not held at run time";
    nlohmann::json use = {{"values", count}, {"computed_as", how}};
    if (const int n = dequantized.count(type) ? dequantized.at(type) : 0; n > 0 && fused) {
      use["dequantized_values"] = n;
      use["dequantized_as"] =
          "constants used at build time; activations 8-bit where an int8 convolution reads them, else "
          "dequantized in the pass that quantizes them";
    }
    types[onnx::TensorProto::DataType_Name(type)] = use;
  }
  return types;
}

void PrintElementTypes(std::ostream& out, const nlohmann::json& element_types) {
  std::vector<std::string> quantization_only;
  std::string dequantized_as;
  const char* separator = " ";
  out << "  element types:";
  for (const auto& [type, use] : element_types.items()) {
    const int values = use["values"].get<int>(), dequantized = use.value("dequantized_values", 0);
    if (dequantized > 0) dequantized_as = use["dequantized_as"].get<std::string>();
    if (dequantized == values) {
      quantization_only.push_back(type + " (" + std::to_string(values) + " values)");
      continue;
    }
    out << separator << type << " (" << values << " values) " << use["computed_as"].get<std::string>();
    if (dequantized > 0) out << ", " << dequantized << " of them only in QuantizeLinear/DequantizeLinear";
    separator = "; ";
  }
  if (!quantization_only.empty()) {
    out << separator;
    for (std::size_t i = 0; i < quantization_only.size(); ++i) out << (i ? ", " : "") << quantization_only[i];
    out << " only in QuantizeLinear/DequantizeLinear";
  }
  if (!dequantized_as.empty()) out << " (" << dequantized_as << ")";
  out << "\n";
}

void PrintQuantizedCheck(std::ostream& out, const Verification& v) {
  const QuantizedCheck worst = v.WorstQuantized();
  out << "  check quantized activations (each layer on the same integers in both plans): " << v.quantized.size()
      << ", at most " << FormatSteps(worst.max_steps) << " apart, at most " << std::setprecision(3)
      << 100 * worst.share_over_one_step << "% of a tensor more than one step" << (worst.ok ? " ok" : " FAILED") << "\n"
      << std::setprecision(2);
}

void PrintInt8Convolutions(std::ostream& out, const std::vector<ScheduleStep>& schedule) {
  int int8 = 0, total = 0;
  std::map<std::string, int> reasons;
  for (const ScheduleStep& s : schedule) {
    if (s.kind != "conv") continue;
    const bool on_int8 = s.data_type == "u8" || s.data_type == "s8";
    if (!on_int8 && s.note.empty()) continue;
    ++total;
    if (on_int8) ++int8;
    else ++reasons[s.note];
  }
  if (total == 0) return;
  out << "  int8 convolutions: " << int8 << " of " << total << " quantized ones\n";
  for (const auto& [reason, count] : reasons) out << "    " << count << " " << reason << "\n";
}

nlohmann::json StepsJson(const std::vector<ScheduleStep>& schedule) {
  nlohmann::json steps = nlohmann::json::array();
  for (const ScheduleStep& s : schedule)
    steps.push_back({{"kind", s.kind},
                     {"label", s.label},
                     {"impl", s.impl},
                     {"data_type", s.data_type.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.data_type)},
                     {"group", s.group < 0 ? nlohmann::json(nullptr) : nlohmann::json(s.group)},
                     {"pattern", s.pattern.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.pattern)},
                     {"note", s.note.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.note)}});
  return steps;
}

double Roofline::BoundMs(double flops, double bytes) const {
  const double compute = peak_gflops > 0 ? flops / peak_gflops / 1e6 : 0;
  const double memory = bandwidth_gbps > 0 ? bytes / bandwidth_gbps / 1e6 : 0;
  return std::max(compute, memory);
}

Roofline MeasureRoofline(int threads) {
  Roofline r;
  r.threads = std::max(1, threads);
  r.peak_gflops = backend::PeakGflopsPerCore(0.2) * r.threads;
  r.bandwidth_gbps = backend::ReadBandwidthGbps(r.threads, 0.3);
  return r;
}

PlanWork WorkOf(const std::vector<ScheduleStep>& schedule, const Roofline* roofline) {
  PlanWork w;
  for (const ScheduleStep& s : schedule) {
    w.flops += s.flops, w.bytes += static_cast<double>(s.bytes);
    if (roofline) w.bound_ms += roofline->BoundMs(s.flops, static_cast<double>(s.bytes));
  }
  return w;
}

nlohmann::json ProfileJson(const std::vector<ScheduleStep>& schedule, const std::vector<double>& step_ms,
                           const Roofline& roofline) {
  nlohmann::json steps = nlohmann::json::array(), kinds = nlohmann::json::object();
  for (std::size_t i = 0; i < schedule.size() && i < step_ms.size(); ++i) {
    const ScheduleStep& s = schedule[i];
    steps.push_back({{"kind", s.kind}, {"label", s.label}, {"impl", s.impl}, {"ms", step_ms[i]}, {"flops", s.flops},
                     {"bytes", s.bytes}, {"bound_ms", roofline.BoundMs(s.flops, static_cast<double>(s.bytes))}});
  }
  for (const auto& [kind, ms] : MsPerKind(schedule, step_ms)) kinds[kind] = ms;
  const PlanWork work = WorkOf(schedule, &roofline);
  const nlohmann::json ceilings = {{"threads", roofline.threads},
                                   {"peak_gflops", roofline.peak_gflops},
                                   {"bandwidth_gbps", roofline.bandwidth_gbps},
                                   {"flops", work.flops},
                                   {"bytes", work.bytes},
                                   {"bound_ms", work.bound_ms},
                                   {"compute_ms", roofline.BoundMs(work.flops, 0)},
                                   {"memory_ms", roofline.BoundMs(0, work.bytes)}};
  return {{"steps", steps}, {"kinds", kinds}, {"roofline", ceilings}};
}

void PrintProfile(std::ostream& out, const std::vector<ScheduleStep>& schedule, const std::vector<double>& step_ms,
                  int runs, const Roofline& roofline) {
  constexpr std::size_t kShown = 15;
  double total = 0;
  for (double ms : step_ms) total += ms;
  const PlanWork work = WorkOf(schedule, &roofline);
  const double flops = work.flops, bytes = work.bytes, bound = work.bound_ms;
  out << std::setprecision(3);
  out << "  profile: " << total << " ms per inference in steps timed one by one (" << runs << " runs); by kind:";
  for (const auto& [kind, ms] : MsPerKind(schedule, step_ms)) out << " " << kind << " " << ms;
  out << "\n  roofline at " << roofline.threads << " thread" << (roofline.threads == 1 ? "" : "s") << ": peak "
      << roofline.peak_gflops << " GFLOPS, memory " << roofline.bandwidth_gbps << " GB/s (measured now); "
      << flops / 1e9 << " GFLOP and " << bytes / 1e6 << " MB per inference: bound " << bound << " ms (compute "
      << roofline.BoundMs(flops, 0) << ", memory " << roofline.BoundMs(0, bytes) << "); the steps take "
      << (bound > 0 ? total / bound : 0) << "x their bound\n";
  out << "  slowest steps (ms, GFLOPS, GB/s, x bound, kind, nodes, implementation):\n";
  std::vector<std::size_t> order(std::min(schedule.size(), step_ms.size()));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return step_ms[a] > step_ms[b]; });
  order.resize(std::min(order.size(), kShown));
  for (std::size_t i : order) {
    const ScheduleStep& s = schedule[i];
    const double ms = step_ms[i], step_bound = roofline.BoundMs(s.flops, static_cast<double>(s.bytes));
    out << std::fixed << "    " << std::setprecision(3) << std::setw(7) << ms << std::setprecision(1)
        << std::setw(8) << (ms > 0 ? s.flops / ms / 1e6 : 0) << std::setw(7)
        << (ms > 0 ? static_cast<double>(s.bytes) / ms / 1e6 : 0) << std::setprecision(2) << std::setw(7)
        << (step_bound > 0 ? ms / step_bound : 0) << "  " << s.kind << "  " << s.label << "  " << s.impl << "\n";
  }
  out << std::setw(0) << std::setprecision(2);
}

}  // namespace onnxfuse
