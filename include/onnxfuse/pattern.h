// Declarative fusion patterns: ONNX functions in ONNX's own text syntax, kept
// as data in patterns/*.onnxtxt, and the matcher that finds them in a Graph.
//
// A pattern file holds one or more functions in domain "ai.onnxfuse", each in
// ONNX 1.12 text syntax (onnx/defs/parser.h), each preceded by directive
// comments that the ONNX parser skips as comments:
//
//   #@ benefit: 30                          priority: higher first (MLIR's benefit)
//   #@ require: constant(W, scale, bias, mean, var)
//   #@ require: same_shape(A, B)
//   <domain: "ai.onnxfuse", opset_import: ["" : 13]>
//   ConvBnRelu <strides, pads, dilations, group, ...> (X, W, B, scale, bias, mean, var) => (Y) {
//      c = Conv <strides: ints = @strides, ...> (X, W, B)
//      b = BatchNormalization <epsilon: float = @epsilon> (c, scale, bias, mean, var)
//      Y = Relu (b)
//   }
//
// The body is the subgraph to find: function inputs are wildcards binding any
// value, `@attr` references capture attributes, literal attributes must equal
// the graph's (an absent attribute equals its schema default). The same
// FunctionProto is what the ONNX writer emits for every match, so a fused op
// is defined in exactly one place. Requirements a body cannot express are
// named predicates implemented in C++ (pattern_predicates.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxfuse/graph.h"

namespace onnxfuse {

/// One `#@ require: name(arg, ...)` line: a named predicate over wildcard names.
struct PatternRequirement {
  std::string predicate;          ///< e.g. "constant", "same_shape", "scalar", "last_axis"
  std::vector<std::string> args;  ///< function input names (or attribute names, per predicate)
  int line = 0;                   ///< 1-based line in the pattern file, for messages
};

struct Pattern {
  onnx::FunctionProto function;   ///< domain ai.onnxfuse; name = the fused op type
  int benefit = 0;                ///< higher is tried first
  std::vector<PatternRequirement> requirements;
  std::string file;               ///< where it was loaded from
  int line = 0;                   ///< line of the function header in `file`
};

/// Parses a pattern file's text. Throws Error(kInvalidModel) "FILE:LINE:COL: reason"
/// for a syntax error, an unknown directive or predicate, a predicate naming an
/// input the function does not have, or a function outside domain ai.onnxfuse.
std::vector<Pattern> ParsePatterns(const std::string& text, const std::string& file);

/// Loads every *.onnxtxt file in `dir` (sorted by name). Throws Error(kIo) for an
/// unreadable directory, ParsePatterns' errors otherwise; two patterns with one
/// name are an error naming both files.
std::vector<Pattern> LoadPatternDir(const std::string& dir);

/// The built-in library: the patterns/ folder of the source tree (compiled in as
/// ONNXFUSE_PATTERNS_DIR), or $ONNXFUSE_PATTERNS_DIR when set.
std::string BuiltinPatternDir();

/// A found occurrence of a pattern.
struct PatternMatch {
  std::vector<NodeId> nodes;                     ///< graph node per body node, body order
  std::vector<ValueId> inputs;                   ///< graph value per function input; kNoValue = omitted optional
  std::vector<ValueId> outputs;                  ///< graph value per function output
  std::vector<onnx::AttributeProto> attributes;  ///< captured attributes, named as the function declares them;
                                                 ///< an attribute absent on the graph node is not listed
};

/// Why a pattern did not match at an anchor where its last op did match.
struct PatternNearMiss {
  NodeId node = kNoNode;     ///< the graph node where matching failed
  std::string reason;        ///< stable code: "op_mismatch", "intermediate_used_outside", "not_constant",
                             ///< "shapes_differ", "attribute_mismatch", "already_fused", ...
  std::string detail;        ///< e.g. "intermediate 'c' is used by node 'Add_7' outside the match"
};

/// Tries to match `pattern` with its last body node at `anchor`. Nodes with
/// `claimed[id]` set (already fused) never match. Handles commutative inputs
/// (Add, Mul, Sum, Max, Min), omitted optional inputs (Conv without bias), and
/// refuses a match whose intermediate values are read outside it or are graph
/// outputs unless the pattern exposes them as outputs. Never mutates the graph.
/// Returns the match, or a near-miss (nullopt match) when at least the anchor's
/// op type matched; when even the anchor's op type differs, both are empty.
struct MatchOutcome {
  std::optional<PatternMatch> match;
  std::optional<PatternNearMiss> near_miss;
};
MatchOutcome MatchPattern(const Graph& graph, const Pattern& pattern, NodeId anchor, const std::vector<bool>& claimed);

}  // namespace onnxfuse
