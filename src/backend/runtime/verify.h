// Verifying a fused plan against the unfused one: the self-check of
// `onnx-fuse -o model.plan` and of `onnx-fuse run --check`.
//
// The unfused plan (one oneDNN primitive per ONNX node, plain layouts, no
// post-ops) is the reference. When an output differs, the difference is
// localized to the first fusion group whose result differs: both plans are
// compiled once more with every float value that leaves a group made a graph
// output, and those values are compared group by group in topological order.
// Keeping the values changes what may be computed in place, so a difference
// may vanish in that second compilation; the verification then says so
// instead of naming a group.
//
// A group whose result differs may only carry on what its inputs differ by:
// a Sub whose operands nearly cancel turns a last-bit difference between two
// correct plans into its whole result. Such a group is recomputed on the host
// evaluator (eval/host_eval.h: each node in double precision, rounded once)
// from each plan's own inputs; when each plan's result agrees with its own
// recomputation within the tolerance, the group made no difference of its
// own. The verification fails at the first differing group that did (or that
// the evaluator cannot recompute), and passes when every differing group only
// carried a difference on: the outputs then differ by the graph's
// conditioning alone. A wrongly lowered group disagrees with its own
// recomputation in the plan that lowered it so.
//
// A graph with fake quantization (the QDQ format) is checked twice. Its float
// arithmetic: both plans compiled without fake quantization, compared at
// `rtol` as above. Its integer arithmetic, layer by layer: the unfused plan
// (which computes each QuantizeLinear and DequantizeLinear as the ONNX spec
// defines them, over float sums) gives every quantized activation; then the
// fused plan, compiled as the model asks (with its int8 convolutions), runs
// the model cut at those activations, each layer reading the unfused plan's
// integers (verify_graphs.h), and each activation it computes is compared
// with the unfused plan's in steps of its own scale: at least 99.9% of its
// elements within one step, none more than two. A float sum and an int32 one may round a
// value near a half step to neighbouring integers; carried through a deep
// network such steps grow to tens of steps between two correct plans, hence
// the cut. A wrong scale, zero point or bias moves a whole layer by many steps.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fuse/fusion_plan.h"
#include "ir/graph.h"
#include "ir/tensor_io.h"

namespace onnxfuse {

/// The tolerance of both checks: max |fused - unfused| / max |unfused| per
/// tensor (CompareTensors, as scripts/ort/compare.js measures).
inline constexpr double kVerifyRtol = 1e-4;

/// One graph output compared.
struct OutputCheck {
  std::string output;
  double max_abs = 0, max_rel = 0;  ///< as TensorDiff; infinite for a shape or NaN mismatch
  bool ok = true;
};

/// The quantization rule: a quantized activation agrees when no element is
/// more than kMaxSteps steps away and at most kMaxShareOverOneStep of them
/// are more than one step away.
inline constexpr double kMaxSteps = 2;
inline constexpr double kMaxShareOverOneStep = 0.001;

/// One quantized activation compared in steps of its scale: a QuantizeLinear's
/// output as its first DequantizeLinear reader gives it back in float.
struct QuantizedCheck {
  std::string value;          ///< the QuantizeLinear's output
  std::int64_t elements = 0;
  double max_steps = 0;       ///< max |fused - unfused| / scale; infinite for a shape or NaN mismatch
  double share_over_one_step = 0;  ///< elements more than one step away / elements
  bool ok = true;
};

/// A group whose result differs between the plans beyond the tolerance.
struct GroupDifference {
  int group = -1;          ///< FusionPlan::groups index
  std::string function;    ///< the group's pattern (PatternCall::function), else its op types joined by '_'
  std::string nodes;       ///< its members' names, joined by ','
  std::string node;        ///< the member whose output differs
  std::string value;       ///< that output
  double max_abs = 0, max_rel = 0;
};

struct Verification {
  bool ok = true;
  /// The graph quantizes activations and dequantizes them again (the QDQ
  /// format): the plans compared were compiled once more without fake
  /// quantization (CompileOptions::fake_quantize false: the float graph it
  /// quantizes), since a QuantizeLinear turns any difference in float
  /// rounding, such as another summation order, into a whole step. The
  /// pairs' own lowering equals the two ops bit for bit (its unit tests).
  bool without_fake_quantization = false;
  std::vector<OutputCheck> outputs;      ///< in graph-output order
  /// With fake quantization: every quantized activation compared, in graph
  /// order (see the file comment); empty otherwise.
  std::vector<QuantizedCheck> quantized;
  /// Why the quantized activations could not be compared (keeping them
  /// failed to compile); the verification then fails.
  std::string quantized_note;
  /// Set when !ok and the difference was localized: the first group whose
  /// result differs by more than its inputs carry (see the file comment).
  std::optional<GroupDifference> first;
  /// The groups whose results differ only as their inputs do, each plan's
  /// result equal to the recomputation from its own inputs (see the file
  /// comment), in group order. Set only when some output differs; when they
  /// are all the localization found, ok is true.
  std::vector<GroupDifference> carried;
  std::string localization_note;         ///< when !ok and not localized: why not
  /// One line: "output 'y' differs (max abs 1.5e+01, max rel 1.2e+00); first differing group 3
  /// (Conv_Mul_Add: conv1,mul1,add1) at node 'add1' (value 'y', max rel 1.2e+00)", and the groups
  /// that only carried a difference on; for a quantized graph it also names the quantized
  /// activations that differ.
  std::string Summary() const;
  /// The quantized activations together: their elements summed, the largest
  /// max_steps and share_over_one_step, ok when each is and quantized_note is empty.
  QuantizedCheck WorstQuantized() const;
};

/// Compares `fused` with `unfused` (outputs of the two plans of `graph` on
/// `inputs`, in graph-output order; for a graph with fake quantization, the
/// outputs of both plans compiled without it instead, see
/// Verification::without_fake_quantization): float outputs at `rtol`, integer and
/// bool outputs exactly (a difference of 1 in an index is never rounding of its own),
/// and the quantized activations of such a graph in steps; when some output differs,
/// localizes the difference to a group of `plan` (compiling and running both
/// plans once more), and passes when every differing group only carries a
/// difference of its inputs on (see the file comment). Throws what ExecutablePlan::Compile throws only from the
/// localization's compilations, which are caught and reported in
/// localization_note instead.
Verification VerifyOutputs(const Graph& graph, const FusionPlan& plan, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& fused, const std::vector<Tensor>& unfused,
                           double rtol = kVerifyRtol);

}  // namespace onnxfuse
