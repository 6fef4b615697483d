// libFuzzer target: model bytes -> the whole fuse pipeline.
//
// bytes -> ParseModelBytes (LoadModel's parse limits) -> LoadModelProto (sort,
// checks, tensor validation, shape inference) -> every fuser (postdom, greedy,
// pattern with the built-in patterns, and postdom after BatchNormalization
// folding) -> ValidateFusionPlan -> BuildFusedModel -> CheckFusedModel -> the
// report, the Graphviz text and serialization. A user-facing onnxfuse::Error
// (exit codes 2-5) is the expected outcome for bad input; a kInternal Error
// (exit code 70), any other exception, a crash, a sanitizer report, a hang
// (-timeout) or running out of memory (-rss_limit_mb) is a finding.
//
// External data is refused (no base folder): the fuzzer never reads files.
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "report/dot_writer.h"
#include "finding.h"
#include "onnxfuse/error.h"
#include "rewrite/fold_batchnorm.h"
#include "fuse/greedy_fuser.h"
#include "load/loader.h"
#include "write/onnx_writer.h"
#include "patterns/pattern.h"
#include "fuse/pattern_fuser.h"
#include "fuse/postdom_fuser.h"
#include "report/report.h"

using namespace onnxfuse;
using fuzz::Finding;

namespace {

void FuseAndWrite(const Graph& graph, const FusionPlan& plan) {
  ValidateFusionPlan(graph, plan);
  FusedModel fused = BuildFusedModel(graph, plan);
  CheckFusedModel(fused.model);
  BuildReport(graph, ClassifyAll(graph), plan, fused.function_of_group, StageTimes{});
  ToDot(graph, plan, fused.function_of_group);
  std::string bytes;
  if (fused.model.ByteSizeLong() < (1u << 30)) fused.model.SerializeToString(&bytes);
}

std::vector<Pattern> patterns;  // the built-in library, loaded once

void RunPipeline(const std::uint8_t* data, std::size_t size) {
  const std::string source = "fuzz.onnx";
  Graph graph = LoadModelProto(ParseModelBytes(data, size, source), source, {}, "");
  FuserOptions options;
  options.max_group_size = 8;  // small groups reach the limit paths too
  FuseAndWrite(graph, FuseByPostDominator(graph, options));
  FuseAndWrite(graph, FuseGreedy(graph, options));
  FuseAndWrite(graph, FuseByPatterns(graph, patterns, options));
  if (FoldBatchNormIntoConv(graph).folded.empty()) return;
  LoadModelProto(graph.model(), source, {}, "");  // the rewritten model must still pass the loader
  FuseAndWrite(graph, FuseByPostDominator(graph, FuserOptions{}));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  try {
    patterns = LoadPatternDir(BuiltinPatternDir());
  } catch (const std::exception& e) {
    Finding("setup: the built-in patterns do not load", e.what());
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::RunOneInput([&] { RunPipeline(data, size); });
  return 0;
}
