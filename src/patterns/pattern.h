// Declarative fusion patterns: ONNX functions in ONNX's own text syntax, kept
// as data in patterns/*.onnxtxt, and the matcher that finds them in a Graph.
//
// A pattern file holds one or more functions in domain "ai.onnxfuse", each in
// ONNX 1.12 text syntax (onnx/defs/parser.h), each preceded by its directive
// lines, which the ONNX parser skips as comments:
//
//   # ordinary comments are allowed anywhere
//   #@ benefit: 30                          priority, higher first (MLIR's benefit); default 0
//   #@ require: constant(W, B, scale, bias, mean, var)
//   <domain: "ai.onnxfuse", opset_import: ["" : 13]>
//   ConvBnRelu <strides, pads, epsilon> (X, W, B, scale, bias, mean, var) => (Y) {
//      c = Conv <strides = @strides, pads = @pads> (X, W, B)
//      b = BatchNormalization <epsilon = @epsilon> (c, scale, bias, mean, var)
//      Y = Relu (b)
//   }
//
// Layout: a line beginning with '<' starts a function (and ends the previous
// one); `#@` lines (one directive each, any indentation) belong to the next
// function and may not appear inside a body. Directives:
//   #@ benefit: N                  an integer; ties are broken by the strategy
//   #@ require: pred(arg, ...)     a named predicate (src/patterns/pattern_predicates.h:
//                                  constant, scalar, same_shape, per_channel, last_axis,
//                                  kernel_1x1, kernel_3x3, depthwise)
//
// The body is the subgraph to find. Function inputs are wildcards binding any
// value; `attr = @name` captures the graph node's attribute into the function
// attribute `name` (the type may be omitted: it is taken from the op's schema);
// literal attributes must equal the graph's, where an absent attribute equals
// its schema default (attributes without one, like Conv's pads, never equal an
// absent one: capture those). A body `k = Constant <value = float {1.4142135}> ()`
// matches a graph constant of that value (initializer or Constant node) and
// stays in the function. The same FunctionProto is what the ONNX writer emits
// for every match, so a fused op is defined in exactly one place.
//
// Matching a graph of another opset than the pattern's: op types must be equal;
// the graph node's attributes are judged by the schema at the graph's opset
// (so training_mode=1 of BatchNormalization-15 is refused by a BN-9 body), and a
// changed signature (Clip-6 min/max attributes vs Clip-11 inputs) shows up as an
// input or attribute mismatch. A match therefore also runs at the graph's opset.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/graph.h"

namespace onnxfuse {

/// One `#@ require: name(arg, ...)` line: a named predicate over wildcard names.
struct PatternRequirement {
  std::string predicate;          ///< e.g. "constant", "same_shape", "scalar", "last_axis"
  std::vector<std::string> args;  ///< function input names (or attribute names, per predicate)
  int line = 0;                   ///< 1-based line in the pattern file, for messages
};

struct Pattern {
  onnx::FunctionProto function;   ///< domain ai.onnxfuse; name = the fused op type
  int benefit = 0;                ///< higher is tried first; `#@ benefit: N`, default 0
  std::vector<PatternRequirement> requirements;
  std::string file;               ///< where it was loaded from
  int line = 0;                   ///< line of the function header in `file`
};

/// Parses a pattern file's text (functions in file order). Throws Error(kInvalidModel)
/// "FILE:LINE:COL: reason" for: a syntax error (the ONNX parser's position, in the
/// file's lines); text outside a function that is not a comment or directive; an
/// unknown directive or predicate, wrong predicate arguments (not inputs, or not
/// attributes where the predicate takes one); a function outside domain ai.onnxfuse
/// or without a default-domain opset; an empty body; an op that is not in the
/// default domain at the function's opset, an attribute the op does not have or of
/// the wrong type, an @reference to an undeclared attribute; an input or attribute
/// the body never uses; an output no body node produces; a node that does not feed
/// the last node (the anchor); a Constant that is not one number; one name twice.
/// Fills in the type of untyped `attr = @name` references from the op's schema.
std::vector<Pattern> ParsePatterns(const std::string& text, const std::string& file);

/// Loads every *.onnxtxt file in `dir` (sorted by name). Throws Error(kIo) for an
/// unreadable directory or file, ParsePatterns' errors otherwise; two patterns with
/// one name are an error naming both places ("b.onnxtxt:4:1: pattern F is already
/// defined at a.onnxtxt:2").
std::vector<Pattern> LoadPatternDir(const std::string& dir);

/// The built-in library: $ONNXFUSE_PATTERNS_DIR when set; else the first
/// existing of <prefix>/share/onnx-fuse/patterns for the running executable's
/// <prefix>/bin (an installed tree), the patterns/ folder of the source tree,
/// the install prefix configured at build time.
std::string BuiltinPatternDir();

/// A found occurrence of a pattern.
struct PatternMatch {
  std::vector<NodeId> nodes;                     ///< graph node per body node, body order, except body
                                                 ///< Constants: they match values, not nodes (a graph
                                                 ///< Constant node they matched may be shared; it stays)
  std::vector<ValueId> inputs;                   ///< graph value per function input; kNoValue = omitted optional
  std::vector<ValueId> outputs;                  ///< graph value per function output
  std::vector<onnx::AttributeProto> attributes;  ///< captured attributes, named as the function declares them;
                                                 ///< an attribute absent on the graph node is not listed
};

/// Why a pattern did not match at an anchor where its last op did match.
struct PatternNearMiss {
  NodeId node = kNoNode;     ///< the graph node where matching failed
  std::string reason;        ///< stable code. Structure: "op_mismatch", "input_mismatch", "output_mismatch"
                             ///< (e.g. training BN's extra outputs), "attribute_mismatch", "binding_conflict"
                             ///< (a wildcard or node bound twice differently), "constant_mismatch" (a body
                             ///< Constant), "already_fused" (a claimed node), "intermediate_used_outside";
                             ///< requirements: "not_constant", "not_scalar", "shapes_differ",
                             ///< "not_per_channel", "not_last_axis"
  std::string detail;        ///< e.g. "intermediate 'c' is used by node 'Add_7' outside the match"
};

/// Tries to match `pattern` with its last body node at `anchor`. Nodes with
/// `claimed[id]` set (already fused) never match. Handles commutative inputs
/// (Add, Mul, Sum, Max, Min with two inputs: both orders), omitted optional
/// inputs (Conv without bias: the wildcard binds kNoValue, which must then be
/// its value everywhere), and refuses a match whose intermediate values are read
/// outside it or are graph outputs unless the pattern exposes them as outputs.
/// Requirements run after the body matched. Never mutates the graph. Returns the
/// match, or a near-miss (nullopt match) when at least the anchor's op type
/// matched: when matching backtracked, the failure that got furthest (most body
/// nodes bound; final checks count as furthest). When even the anchor's op type
/// differs, both are empty. Cost: O(pattern size) per anchor, times 2 per
/// commutative node reached with two distinct inputs.
struct MatchOutcome {
  std::optional<PatternMatch> match;
  std::optional<PatternNearMiss> near_miss;
};
MatchOutcome MatchPattern(const Graph& graph, const Pattern& pattern, NodeId anchor, const std::vector<bool>& claimed);

}  // namespace onnxfuse
