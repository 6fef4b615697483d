// Helpers for the tests of the built-in pattern library (patterns/*.onnxtxt):
// tests/pattern_library*_test.cc. Header-only: the test binary globs *_test.cc.
//
// Each test writes a small model in the exporter's spelling (ONNX text syntax),
// fuses it with the real library (LoadPatternDir(BuiltinPatternDir()) and
// FuseByPatterns) and checks the pattern groups and near-misses. Weights are
// generated deterministically (Init), so a model reads as its structure.
//
// Numerics: when $ONNXFUSE_PATTERN_MODELS_DIR is set, every positive case
// (CheckPositive) also writes NAME.onnx (the original model) and NAME.expect
// (the ai.onnxfuse op types the fused model must contain, one a line) there;
// tests/e2e/pattern_numerics.sh fuses each with the onnx-fuse binary and
// compares original and fused outputs with ONNX Runtime.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "load/loader.h"
#include "write/onnx_writer.h"
#include "patterns/pattern.h"
#include "fuse/pattern_fuser.h"
#include "test_models.h"

namespace onnxfuse::test {

using Strings = std::vector<std::string>;

/// The built-in library, loaded once.
inline const std::vector<Pattern>& Library() {
  static const std::vector<Pattern> patterns = LoadPatternDir(BuiltinPatternDir());
  return patterns;
}

/// "float[4,3,1,1] w = {0.1234, ...}": an initializer of deterministic values in
/// [lo, hi), from a generator seeded by the name (so each tensor differs).
inline std::string Init(const std::string& name, const std::vector<int>& dims, double lo = -1.0, double hi = 1.0) {
  std::uint64_t state = 1469598103934665603ull;  // FNV-1a of the name
  for (char c : name) state = (state ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  std::string shape, values;
  int count = 1;
  for (int d : dims) {
    shape += (shape.empty() ? "" : ",") + std::to_string(d);
    count *= d;
  }
  for (int i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double unit = static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", lo + (hi - lo) * unit);
    values += (i ? ", " : "") + std::string(text);
  }
  return "float[" + shape + "] " + name + " = {" + values + "}";
}

/// BatchNormalization parameters PREFIX_s, PREFIX_t, PREFIX_m, PREFIX_v for C channels:
/// scale in [0.5, 1.5), shift in [-0.5, 0.5), mean in [-0.3, 0.3), variance in [0.5, 2).
inline Strings BnInits(const std::string& prefix, int channels) {
  return {Init(prefix + "_s", {channels}, 0.5, 1.5), Init(prefix + "_t", {channels}, -0.5, 0.5),
          Init(prefix + "_m", {channels}, -0.3, 0.3), Init(prefix + "_v", {channels}, 0.5, 2.0)};
}
/// "n = BatchNormalization <epsilon = 0.001, momentum = 0.99> (c, P_s, P_t, P_m, P_v)" (torch's spelling).
inline std::string Bn(const std::string& out, const std::string& in, const std::string& prefix,
                      const std::string& extra_attrs = "") {
  return out + " = BatchNormalization <epsilon = 0.001, momentum = 0.99" + extra_attrs + "> (" + in + ", " + prefix +
         "_s, " + prefix + "_t, " + prefix + "_m, " + prefix + "_v)\n";
}
/// torch's Conv attributes: dilations, group, kernel_shape, pads, strides, all written out.
inline std::string ConvAttrs(int kernel, int group = 1, int stride = 1) {
  std::string k = std::to_string(kernel), p = std::to_string(kernel / 2), s = std::to_string(stride);
  return "<dilations = [1, 1], group = " + std::to_string(group) + ", kernel_shape = [" + k + ", " + k +
         "], pads = [" + p + ", " + p + ", " + p + ", " + p + "], strides = [" + s + ", " + s + "]>";
}

/// A model in ONNX text: `signature` is "(inputs) => (outputs)", `inits` the initializers.
inline std::string Model(const std::string& signature, const Strings& inits, const std::string& body, int opset = 13) {
  std::string list;
  for (const auto& init : inits) list += (list.empty() ? "" : ",\n    ") + init;
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\ng " + signature +
         (list.empty() ? "" : "\n  <" + list + ">") + " {\n" + body + "}\n";
}
inline Strings Concat(Strings a, const Strings& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Fused {
  onnx::ModelProto model;  ///< the original, as parsed
  Graph graph;
  FusionPlan plan;
};

/// Parses, loads (the real loader) and fuses `text` with the built-in library.
inline Fused FuseText(const std::string& text) {
  onnx::ModelProto model = ParseModel(text);
  Graph graph = LoadModelProto(model, "inline.onnx");
  FusionPlan plan = FuseByPatterns(graph, Library(), {});
  return {std::move(model), std::move(graph), std::move(plan)};
}

/// "Pattern: member, member" per pattern group, in plan order.
inline Strings PatternGroups(const Fused& f) {
  Strings out;
  for (const auto& group : f.plan.groups) {
    if (!group.call) continue;
    std::string text = group.call->function + ":";
    for (NodeId id : group.nodes) text += (text.back() == ':' ? " " : ", ") + f.graph.node(id).name;
    out.push_back(text);
  }
  return out;
}

/// The near-miss of `pattern` reported at anchor node `anchor`: "reason at NODE: detail",
/// where NODE is where matching failed; "" when none is reported there.
inline std::string NearMiss(const Fused& f, const std::string& pattern, const std::string& anchor) {
  for (const auto& outcome : f.plan.pattern_outcomes) {
    if (outcome.pattern != pattern) continue;
    for (const auto& miss : outcome.near_misses)
      if (f.graph.node(miss.node).name == anchor)
        return miss.reason + " at " + f.graph.node(miss.target).name + ": " + miss.detail;
    return "";
  }
  FAIL("no pattern " << pattern << " in the library");
  return "";
}

/// The positive-case checks every pattern gets: the fused model builds and passes
/// CheckFusedModel, each pattern group is one ai.onnxfuse call; the model is dumped
/// for the numerics test (see the header comment). `name` names the case's files.
inline void CheckPositive(const std::string& name, const Fused& f) {
  FusedModel fused = BuildFusedModel(f.graph, f.plan);
  REQUIRE_NOTHROW(CheckFusedModel(fused.model));
  std::set<std::string> expected;
  for (const auto& group : f.plan.groups)
    if (group.call) expected.insert(fused.function_of_group[static_cast<std::size_t>(group.id)]);
  REQUIRE_FALSE(expected.empty());
  std::multiset<std::string> calls;
  for (const auto& node : fused.model.graph().node())
    if (node.domain() == kFusedDomain) calls.insert(node.op_type());
  for (const auto& op : expected) CHECK(calls.count(op) > 0);

  const char* dir = std::getenv("ONNXFUSE_PATTERN_MODELS_DIR");
  if (!dir || !*dir) return;
  std::ofstream model(std::string(dir) + "/" + name + ".onnx", std::ios::binary);
  REQUIRE(f.model.SerializeToOstream(&model));
  std::ofstream expect(std::string(dir) + "/" + name + ".expect");
  for (const auto& op : expected) expect << op << "\n";
}

}  // namespace onnxfuse::test
