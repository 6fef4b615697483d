#include "session/batch_passes.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <vector>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "ir/tensor_values.h"
#include "onnxfuse/error.h"
#include "classify/op_pattern_kind.h"

namespace onnxfuse::session {

namespace {

// Ops that compute each element from the elements at the same index of their
// inputs, with ONNX multidirectional broadcasting (Operators.md
// "Broadcasting"): the classifier's kElemWise and kBroadcast ops
// (op_pattern_kind.cc), but for those whose other inputs are not broadcast
// operands: BatchNormalization (per-channel, below), Expand and Unsqueeze
// (a shape or axes), and the quantizers (a per-axis scale may run along axis 0).
bool Elementwise(const std::string& op) {
  static const std::set<std::string> kNot = {"BatchNormalization", "Expand", "Unsqueeze", "QuantizeLinear",
                                             "DequantizeLinear"};
  const OpPatternKind kind = KindOfOpType("", op);
  return (kind == OpPatternKind::kElemWise || kind == OpPatternKind::kBroadcast) && !kNot.count(op);
}

// Ops whose first input is [N, C, ...] and that compute each sample alone
// (the other inputs: weights, scales, biases, ROIs of no batch extent).
const std::set<std::string> kPerSample = {"AveragePool",     "Conv",          "ConvTranspose", "DepthToSpace",
                                          "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "InstanceNormalization",
                                          "LpPool",          "LRN",           "MaxPool",       "SpaceToDepth"};

const std::set<std::string> kReduce = {"ReduceL1",  "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                                       "ReduceMean", "ReduceMin", "ReduceProd",   "ReduceSum",       "ReduceSumSquare"};

int Rank(const Graph& g, ValueId v) {
  const TensorType& t = g.value(v).type;
  return t.has_shape ? static_cast<int>(t.dims.size()) : -1;
}

// The values of constant `v` as T; nullopt for an omitted input, a run-time
// value or a released initializer.
template <typename T>
std::optional<std::vector<T>> ConstValues(const Graph& g, ValueId v) {
  const onnx::TensorProto* t = v == kNoValue || !g.IsConstant(v) ? nullptr : g.ConstantTensor(v);
  if (!t) return std::nullopt;
  return DecodeTensor<T>(*t, g.value(v).name);
}

std::optional<std::vector<std::int64_t>> ConstInts(const Graph& g, ValueId v) { return ConstValues<std::int64_t>(g, v); }

// The default of an op's `axis` attribute (Operators.md): Softmax, LogSoftmax
// and Hardmax take 1 before opset 13 and -1 from it on.
std::int64_t DefaultAxis(const std::string& op, std::int64_t opset) {
  if (op == "Flatten") return 1;
  if (op == "ArgMax" || op == "ArgMin") return 0;
  if (op == "LpNormalization") return -1;
  return opset < 13 ? 1 : -1;
}

// An axis attribute or input normalised to [0, rank): nullopt when out of range.
std::optional<std::int64_t> Normalized(std::int64_t axis, int rank) {
  if (rank < 0) return std::nullopt;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  return axis;
}

bool NoneIsAxisZero(const std::vector<std::int64_t>& axes, int rank) {
  for (std::int64_t a : axes) {
    const auto n = Normalized(a, rank);
    if (!n || *n == 0) return false;
  }
  return true;
}

// The axes of a node that takes them as an attribute before `input_since`
// and as input `index` from that opset on.
std::optional<std::vector<std::int64_t>> Axes(const Graph& g, const Node& n, std::int64_t input_since,
                                              std::size_t index) {
  if (g.opset() < input_since) {
    if (!FindAttr(n, "axes")) return std::nullopt;
    return AttrInts(n, "axes");
  }
  if (n.num_explicit_inputs <= index || n.inputs[index] == kNoValue) return std::nullopt;
  return ConstInts(g, n.inputs[index]);
}

class Analysis {
 public:
  explicit Analysis(const Graph& g) : g_(g), batched_(g.values().size(), false) {}

  std::string Run(std::string* why) {
    std::string symbol;
    for (ValueId v : g_.inputs()) {
      const TensorType& t = g_.value(v).type;
      if (!t.has_shape || t.dims.empty() || t.dims[0] >= 0 || t.dim_params[0].empty())
        return Fail(why, "input '" + g_.value(v).name + "' has no symbolic leading dim");
      if (!symbol.empty() && t.dim_params[0] != symbol)
        return Fail(why, "inputs lead with different symbols");
      symbol = t.dim_params[0];
      batched_[v] = true;
    }
    for (ValueId v : g_.inputs()) {
      const TensorType& t = g_.value(v).type;
      if (std::find(t.dim_params.begin() + 1, t.dim_params.end(), symbol) != t.dim_params.end())
        return Fail(why, "input '" + g_.value(v).name + "' has '" + symbol + "' in another dim");
    }
    if (symbol.empty()) return Fail(why, "the model has no inputs");
    for (const Node& n : g_.nodes()) {
      if (std::none_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) { return Batched(v); })) continue;
      if (!KeepsSamplesApart(n))
        return Fail(why, NodeLabel(n) + " mixes the samples of a batch or is not known to keep them apart");
      for (ValueId out : n.outputs)
        if (out != kNoValue) batched_[out] = true;
    }
    for (ValueId v : g_.outputs())
      if (!Batched(v)) return Fail(why, "output '" + g_.value(v).name + "' does not carry the batch");
    return symbol;
  }

 private:
  static std::string Fail(std::string* why, const std::string& reason) {
    if (why) *why = reason;
    return "";
  }

  bool Batched(ValueId v) const { return v != kNoValue && batched_[v]; }

  // Input i, batched, leading the output's axis 0 (same rank); or unbatched
  // with no extent along it (lower rank, or dim 0 of 1).
  bool AlignedOrBroadcast(ValueId v, int out_rank) const {
    if (v == kNoValue) return true;
    const int r = Rank(g_, v);
    if (Batched(v)) return r == out_rank;
    if (r < 0) return false;
    return r < out_rank || g_.value(v).type.dims[0] == 1;
  }

  bool OnlyFirstBatched(const Node& n) const {
    for (std::size_t i = 1; i < n.inputs.size(); ++i)
      if (Batched(n.inputs[i])) return false;
    return Batched(n.inputs[0]);
  }

  bool KeepsSamplesApart(const Node& n) const {
    if (!n.domain.empty() || n.num_explicit_inputs != n.inputs.size()) return false;  // other domains, subgraphs
    const std::string& op = n.op_type;
    const int in_rank = n.inputs.empty() || n.inputs[0] == kNoValue ? -1 : Rank(g_, n.inputs[0]);
    const int out_rank = n.outputs.empty() || n.outputs[0] == kNoValue ? -1 : Rank(g_, n.outputs[0]);
    if (out_rank < 1) return false;
    if (Elementwise(op)) {
      return std::all_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) { return AlignedOrBroadcast(v, out_rank); });
    }
    // MaxPool's Indices are offsets into the whole tensor, the batch included.
    if (op == "MaxPool" && n.outputs.size() > 1 && n.outputs[1] != kNoValue) return false;
    if (kPerSample.count(op)) return OnlyFirstBatched(n);
    if (op == "BatchNormalization")  // inference: per-channel statistics given as constants
      return OnlyFirstBatched(n) && AttrInt(n, "training_mode", 0) == 0 &&
             std::count_if(n.outputs.begin(), n.outputs.end(), [](ValueId v) { return v != kNoValue; }) == 1;
    if (op == "LayerNormalization") {
      const auto axis = Normalized(AttrInt(n, "axis", -1), in_rank);
      return OnlyFirstBatched(n) && axis && *axis >= 1;
    }
    if (op == "Flatten")  // [N, rest] only: at axis k > 1 dim 0 is N x d1 x ... x d(k-1)
      return OnlyFirstBatched(n) && Normalized(AttrInt(n, "axis", 1), in_rank) == std::optional<std::int64_t>(1);
    if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax" || op == "ArgMax" || op == "ArgMin" ||
        op == "LpNormalization") {
      const auto axis = Normalized(AttrInt(n, "axis", DefaultAxis(op, g_.opset())), in_rank);
      return OnlyFirstBatched(n) && axis && *axis >= 1;
    }
    if (op == "TopK") {
      const auto axis = Normalized(AttrInt(n, "axis", -1), in_rank);
      return OnlyFirstBatched(n) && axis && *axis >= 1;
    }
    if (op == "Gemm")  // A [N, K] (transA 0) times constant B, C of no batch extent
      return OnlyFirstBatched(n) && AttrInt(n, "transA", 0) == 0 &&
             (n.inputs.size() < 3 || AlignedOrBroadcast(n.inputs[2], 2));
    if (op == "MatMul") {
      if (in_rank != out_rank || in_rank < 2) return false;
      if (!Batched(n.inputs[1])) {  // B's last two dims are its matrix; the dims before broadcast against A's
        const int b_rank = Rank(g_, n.inputs[1]);
        return Batched(n.inputs[0]) && b_rank >= 1 && (b_rank <= 2 || AlignedOrBroadcast(n.inputs[1], out_rank));
      }
      return Batched(n.inputs[0]) && out_rank >= 3 && Rank(g_, n.inputs[1]) == out_rank;  // per-sample products
    }
    if (op == "Concat") {
      const auto axis = Normalized(AttrInt(n, "axis", 0), out_rank);
      return axis && *axis >= 1 && std::all_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) { return Batched(v); });
    }
    if (op == "Split") {
      const auto axis = Normalized(AttrInt(n, "axis", 0), in_rank);
      return OnlyFirstBatched(n) && axis && *axis >= 1;
    }
    if (op == "Gather") {
      const auto axis = Normalized(AttrInt(n, "axis", 0), in_rank);
      if (axis == std::optional<std::int64_t>(0))  // rows of an unbatched table (embeddings): indices.shape + ...
        return !Batched(n.inputs[0]) && Batched(n.inputs[1]);
      return OnlyFirstBatched(n) && axis && *axis >= 1;
    }
    if (op == "Transpose") {
      const std::vector<std::int64_t> perm = AttrInts(n, "perm");
      return !perm.empty() && perm[0] == 0;  // the default reverses the axes
    }
    if (op == "Reshape") {
      const auto shape = ConstInts(g_, n.inputs.size() > 1 ? n.inputs[1] : kNoValue);
      return OnlyFirstBatched(n) && AttrInt(n, "allowzero", 0) == 0 && shape && !shape->empty() && (*shape)[0] == 0;
    }
    if (op == "Squeeze") {
      const auto axes = Axes(g_, n, 13, 1);
      return OnlyFirstBatched(n) && axes && !axes->empty() && NoneIsAxisZero(*axes, in_rank);
    }
    if (op == "Unsqueeze") {
      const auto axes = Axes(g_, n, 13, 1);
      return OnlyFirstBatched(n) && axes && NoneIsAxisZero(*axes, out_rank);
    }
    if (kReduce.count(op)) {
      const auto axes = Axes(g_, n, op == "ReduceSum" ? 13 : 18, 1);
      return OnlyFirstBatched(n) && axes && !axes->empty() && NoneIsAxisZero(*axes, in_rank);
    }
    if (op == "Slice") {
      if (g_.opset() < 10) {
        const std::vector<std::int64_t> axes = AttrInts(n, "axes");
        return OnlyFirstBatched(n) && !axes.empty() && NoneIsAxisZero(axes, in_rank);
      }
      const auto axes = ConstInts(g_, n.inputs.size() > 3 ? n.inputs[3] : kNoValue);
      return OnlyFirstBatched(n) && axes && NoneIsAxisZero(*axes, in_rank);
    }
    if (op == "Pad") {
      const auto pads = g_.opset() < 11 ? std::optional(AttrInts(n, "pads"))
                                        : ConstInts(g_, n.inputs.size() > 1 ? n.inputs[1] : kNoValue);
      return OnlyFirstBatched(n) && n.inputs.size() <= 3 && pads && in_rank >= 1 &&
             pads->size() == 2 * static_cast<std::size_t>(in_rank) && (*pads)[0] == 0 &&
             (*pads)[static_cast<std::size_t>(in_rank)] == 0;
    }
    if (op == "Tile") {
      const auto repeats = ConstInts(g_, n.inputs.size() > 1 ? n.inputs[1] : kNoValue);
      return OnlyFirstBatched(n) && repeats && !repeats->empty() && (*repeats)[0] == 1;
    }
    if (op == "Resize" || op == "Upsample") {  // a scale of 1 along the batch; sizes would fix its extent
      const std::size_t index = op == "Upsample" || g_.opset() < 11 ? 1 : 2;  // (X, scales) or (X, roi, scales, sizes)
      if (n.inputs.size() > 3 && n.inputs[3] != kNoValue) return false;
      const auto scales = n.inputs.size() > index ? ConstValues<double>(g_, n.inputs[index]) : std::nullopt;
      return OnlyFirstBatched(n) && scales && !scales->empty() && (*scales)[0] == 1.0;
    }
    return false;
  }

  const Graph& g_;
  std::vector<bool> batched_;
};

}  // namespace

std::string SeparableBatchSymbol(const Graph& graph, std::string* why) {
  try {
    return Analysis(graph).Run(why);
  } catch (const Error& e) {  // a constant it could not decode: the model runs as before, in one pass
    if (why) *why = e.what();
    return "";
  }
}

std::int64_t LargestStepBytes(const Graph& graph) {
  std::int64_t largest = 0;
  for (const Node& n : graph.nodes()) {
    std::set<ValueId> touched;
    for (ValueId v : n.inputs)
      if (v != kNoValue && !graph.IsConstant(v)) touched.insert(v);
    for (ValueId v : n.outputs)
      if (v != kNoValue) touched.insert(v);
    std::int64_t bytes = 0;
    for (ValueId v : touched) bytes += graph.value(v).type.SizeInBytes().value_or(0);
    largest = std::max(largest, bytes);
  }
  return largest;
}

std::int64_t SamplesPerPass(std::int64_t batch, std::int64_t step_bytes_per_sample, std::int64_t budget_bytes,
                            std::int64_t limit, std::int64_t threads) {
  std::int64_t most = step_bytes_per_sample > 0 ? std::max<std::int64_t>(1, budget_bytes / step_bytes_per_sample) : batch;
  most = std::max(most, threads);
  if (limit > 0) most = std::min(most, limit);
  for (std::int64_t c = std::min(most, batch); c > 1; --c)
    if (batch % c == 0) return c;
  return 1;
}

PassPlan PlanPasses(std::int64_t batch, std::int64_t step_bytes_per_sample, std::int64_t budget_bytes,
                    std::int64_t limit, int team) {
  if (SamplesPerPass(batch, step_bytes_per_sample, budget_bytes, limit) == batch) return {};
  if (team > 1 && batch % team == 0)
    return {SamplesPerPass(batch / team, step_bytes_per_sample, budget_bytes / team, limit), team};
  const std::int64_t samples = SamplesPerPass(batch, step_bytes_per_sample, budget_bytes, limit, team);
  return {samples < batch ? samples : 0, 1};
}

std::int64_t PassBudgetBytes() {
  // sysfs, not sysconf(_SC_LEVEL3_CACHE_SIZE): glibc 2.36 reports 320 MB for
  // the 32 MB L3 of a Zen 4 VM. Sizes read "32768K".
  constexpr std::int64_t kMiB = 1 << 20;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level(dir + "level"), size(dir + "size");
    int l = 0;
    std::int64_t kib = 0;
    if (level >> l && l == 3 && size >> kib && kib > 0) return std::max<std::int64_t>(4 * kMiB, kib * 1024 / 2);
  }
  return 16 * kMiB;
}

}  // namespace onnxfuse::session
