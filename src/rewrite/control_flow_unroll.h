// The expansions inline_control_flow puts in place of an If, Loop or Scan
// node whose branch or iteration count is known at build time. Each returns
// standard ONNX nodes of the enclosing graph's opset, built from copies of the
// body (subgraph_copy.h); the caller checks the preconditions stated here.
//
// Semantics (ONNX Operators.md):
//   If    the chosen branch's outputs are the node's outputs.
//   Loop  body(iteration_num, cond_in, v_1..v_N) -> (cond_out, v_1'..v_N', k_1..k_K);
//         outputs v_final (N) then the scan outputs, each the K per-iteration
//         values stacked along a new axis 0.
//   Scan  (opset 9+) body(s_1..s_N, x_1..x_M) -> (s_1'..s_N', y_1..y_K); each scan
//         input is sliced along scan_input_axes[j] (from the end when
//         scan_input_directions[j] = 1), each scan output stacked along
//         scan_output_axes[k] (prepended when scan_output_directions[k] = 1);
//         outputs s_final (N) then the K stacked scan outputs.
// Slices are Gather with a scalar index (which drops the axis, as a scan input
// element has one dimension fewer); stacking is Unsqueeze then Concat (one
// Unsqueeze alone for a single iteration). Iteration numbers and the loop
// condition are new int64 / bool initializers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "rewrite/subgraph_copy.h"

namespace onnxfuse {

/// Nodes and initializers to put in the enclosing graph, and the name holding
/// each output of the replaced node ("" for an omitted optional output).
struct Expansion {
  std::vector<onnx::NodeProto> nodes;
  std::vector<onnx::TensorProto> initializers;
  std::vector<std::string> outputs;
};

/// Where the expansion goes: the enclosing graph's opset (Unsqueeze takes its
/// axes as an attribute before opset 13, as an input from 13), the names in
/// use, the prefix of new names ("<node name>/") and the node's label for messages.
struct ExpansionSite {
  std::int64_t opset;
  NameSource& names;
  std::string prefix;
  std::string label;
};

/// The If's `branch` in place of the node (it takes no inputs).
Expansion InlineBranch(const onnx::GraphProto& branch, ExpansionSite& site);

/// Both branches of an If decided at run time, each output `Where(cond,
/// then_k, else_k)`. Precondition (the caller's): each pair of outputs has
/// the same static shape and element type, and `cond` is a one-element bool
/// of rank no higher than theirs, so Where's broadcasting changes no shape.
/// Both branches are computed; ONNX's operators have no side effects.
Expansion SelectBranches(const onnx::GraphProto& then_branch, const onnx::GraphProto& else_branch,
                         const std::string& cond, ExpansionSite& site);

/// `trip_count` copies of a Loop body; `carried` names the initial values of the
/// loop-carried dependencies. Precondition: the condition stays true for every
/// iteration, and trip_count >= 1 when the body has scan outputs.
Expansion UnrollLoop(const onnx::GraphProto& body, std::int64_t trip_count, const std::vector<std::string>& carried,
                     ExpansionSite& site);

/// What a Scan (opset 9+) iterates over, with its axes normalised to >= 0
/// (input axes against the input's rank, output axes against the output's).
struct ScanShape {
  std::vector<std::string> states;        ///< initial state values (N)
  std::vector<std::string> scan_inputs;   ///< scanned values (M)
  std::vector<std::int64_t> input_axes, input_reverse;    ///< per scan input
  std::vector<std::int64_t> output_axes, output_reverse;  ///< per scan output
  std::int64_t length = 0;                ///< the sequence length, the same along every scanned axis
};

/// `shape.length` copies of a Scan body. Precondition: length >= 1 when the body has scan outputs.
Expansion UnrollScan(const onnx::GraphProto& body, const ScanShape& shape, ExpansionSite& site);

/// An opset-8 Scan without sequence_lens: every state and scan input has a
/// leading batch axis of `batch` items, scanned one by one (`shape`'s axes and
/// directions are those of one item: the scan axis 1 of the input is axis 0 of
/// an item); each output stacks the items' results along a new axis 0.
/// Precondition: batch >= 1, and length >= 1 when the body has scan outputs.
Expansion UnrollBatchedScan(const onnx::GraphProto& body, const ScanShape& shape, std::int64_t batch,
                            ExpansionSite& site);

}  // namespace onnxfuse
