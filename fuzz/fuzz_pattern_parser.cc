// libFuzzer target: pattern-file text -> ParsePatterns, and what it accepts
// through the pattern fuser and the writer on a small fixed model.
//
// A user-facing onnxfuse::Error (a "FILE:LINE:COL: reason" message) is the
// expected outcome for a bad file; a kInternal Error, any other exception, a
// crash, a sanitizer report, a hang or running out of memory is a finding: a
// pattern file is user input, so one that parses must fuse into a model that
// passes the checker, or be refused with a message.
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/defs/parser.h>
#include <spdlog/spdlog.h>

#include "finding.h"
#include "onnxfuse/error.h"
#include "load/loader.h"
#include "write/onnx_writer.h"
#include "patterns/pattern.h"
#include "fuse/pattern_fuser.h"

using namespace onnxfuse;
using fuzz::Finding;

namespace {

// Conv+BN+Relu, a residual Add, Gelu's tail ops and a MatMul+Add: something
// for most pattern bodies to anchor on.
const char* const kModel = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[1,2,4,4] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 1.0}, float[2] s = {1.0, 1.0},
     float[2] b = {0.0, 0.1}, float[2] m = {0.0, 0.0}, float[2] v = {1.0, 1.0}, float[4,4] k, float[4] kb)
    => (float[1,2,4,4] y, float[1,2,4,4] z) {
    c = Conv (x, w)
    n = BatchNormalization (c, s, b, m, v)
    r = Relu (n)
    a = Add (r, x)
    y = Sigmoid (a)
    t = MatMul (y, k)
    u = Add (t, kb)
    h = Mul (u, u)
    z = Tanh (h)
  })";

const Graph& FixedGraph() {
  static const Graph graph = [] {
    onnx::ModelProto model;
    if (!onnx::OnnxParser::Parse(model, kModel).IsOK()) Finding("setup", "the fixed model does not parse");
    return LoadModelProto(model, "fixed.onnx");
  }();
  return graph;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  FixedGraph();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::RunOneInput([&] {
    std::vector<Pattern> patterns = ParsePatterns(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnxtxt");
    if (patterns.empty()) return;
    const Graph& graph = FixedGraph();
    FusionPlan plan = FuseByPatterns(graph, patterns, FuserOptions{});
    ValidateFusionPlan(graph, plan);
    FusedModel fused = BuildFusedModel(graph, plan);
    CheckFusedModel(fused.model);
  });
  return 0;
}
