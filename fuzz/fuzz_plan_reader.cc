// libFuzzer target: plan-file bytes -> ParsePlanFile -> one Run, and for a
// format-3 plan with open input dims, the same groups compiled and run at
// another shape (every open dim 2: PlanModelAt, as a session does).
//
// The header's CRC-32 would stop almost every mutation at the checksum, so when
// the input has the plan magic and byte 23 (the top byte of the payload length,
// 0 in any real plan) is 0, the target rewrites the length and CRC fields to
// match the bytes that follow: mutations then reach the payload parser, the
// stored model, groups and memory descriptors, and the compiled plan. With byte
// 23 non-zero the bytes are parsed as they are (header checks). A user-facing
// onnxfuse::Error is the expected outcome for bad input; a kInternal Error, any
// other exception, a crash or a sanitizer report (an out-of-bounds read of a
// stored constant, say) is a finding.
//
// Seeds: tests/fuzz_corpus/fuzz_plan_reader/, plans (format version 3) of the
// fuzz_model_loader seeds written by `onnx-fuse SEED.onnx -o SEED.plan
// --strategy postdom` (conv_relu_unfused.plan with --max-group-size 1;
// unsorted_symbolic.plan has a symbolic dim), and conv_relu_v2.plan, the
// version 2 reading path: conv_relu.plan with header version 2 (a version 2
// reader ignores the built shapes).
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "finding.h"
#include "onnxfuse/error.h"
#include "backend/plan/plan_file.h"
#include "ir/tensor_io.h"

using namespace onnxfuse;

namespace {

void RunPlan(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> bytes(data, data + size);
  if (size >= kPlanHeaderBytes && std::memcmp(data, "ONNXFPLN", 8) == 0 && data[23] == 0) {
    std::uint64_t length = size - kPlanHeaderBytes;
    auto crc = static_cast<std::uint32_t>(
        crc32(crc32(0L, Z_NULL, 0), bytes.data() + kPlanHeaderBytes, static_cast<uInt>(length)));
    for (int i = 0; i < 4; ++i) bytes[12 + i] = static_cast<std::uint8_t>(crc >> (8 * i));
    for (int i = 0; i < 8; ++i) bytes[16 + i] = static_cast<std::uint8_t>(length >> (8 * i));
  }
  PlanReadOptions read;
  read.keep_model = true;
  LoadedPlan plan = ParsePlanFile(bytes.data(), bytes.size(), "fuzz.plan", read);
  if (plan.executable) plan.executable->Run(RandomInputs(*plan.graph));
  if (!plan.model) return;
  std::map<std::string, std::vector<std::int64_t>> shapes;
  bool open = false;
  for (ValueId v : plan.model->inputs()) {
    const TensorType& type = plan.model->value(v).type;
    if (!type.has_shape) continue;
    std::vector<std::int64_t>& dims = shapes[plan.model->value(v).name];
    for (std::int64_t d : type.dims) dims.push_back(d >= 0 ? d : 2), open = open || d < 0;
  }
  if (!open) return;
  PlanGraph at = PlanModelAt(ShapeModel(plan.model), plan.fusion, shapes);
  ExecutablePlan::Compile(*at.graph, at.fusion, CompileOptions{plan.info.fused}).Run(RandomInputs(*at.graph));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::RunOneInput([&] { RunPlan(data, size); });
  return 0;
}
