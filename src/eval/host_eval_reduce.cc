// Reduce* on host tensors (ONNX Operators.md: ReduceMax/Min/Sum/Mean/Prod/
// L1/L2/SumSquare/LogSum/LogSumExp), for host_eval.h.
#include <algorithm>
#include <cmath>

#include "eval/dims.h"
#include "eval/host_eval_ops.h"
#include "eval/host_tensor.h"
#include "ir/attributes.h"

namespace onnxfuse::eval {

namespace {

// Reduce* (ONNX Operators.md: ReduceMax/Min/Sum/Mean/Prod/L1/L2/SumSquare/
// LogSumExp): axes from the attribute, or from input 1 where the op takes it
// (ReduceSum from 13); keepdims (default 1); no axes reduces all, unless
// noop_with_empty_axes.
Tensor Reduce(const Node& node, const HostInputs& in) {
  const Tensor& x = NeedInput(node, in, 0);
  const std::string& op = node.op_type;
  std::vector<std::int64_t> axes = in.size() > 1 && in[1] ? AsInts(*in[1]) : AttrInts(node, "axes");
  if (axes.empty() && AttrInt(node, "noop_with_empty_axes", 0)) return x;
  std::vector<bool> reduced(x.dims.size(), axes.empty());
  for (auto a : axes) reduced[static_cast<std::size_t>(NormAxis(a, x.dims.size(), node))] = true;
  Dims out, kept;
  for (std::size_t d = 0; d < x.dims.size(); ++d) {
    kept.push_back(reduced[d] ? 1 : x.dims[d]);
    if (!reduced[d] || AttrInt(node, "keepdims", 1)) out.push_back(kept.back());
  }
  const std::int64_t n = Product(kept);
  const double count = static_cast<double>(x.NumElements()) / static_cast<double>(std::max<std::int64_t>(n, 1));
  const bool is_max = op == "ReduceMax", is_min = op == "ReduceMin", is_prod = op == "ReduceProd";
  const double init = is_max ? -INFINITY : is_min ? INFINITY : is_prod ? 1.0 : 0.0;
  std::vector<double> acc(static_cast<std::size_t>(n), init);
  const Dims in_strides = DenseStrides(x.dims), kept_strides = DenseStrides(kept);
  for (std::int64_t i = 0; i < x.NumElements(); ++i) {
    std::int64_t k = 0;
    for (std::size_t d = 0; d < x.dims.size(); ++d)
      if (!reduced[d]) k += (i / in_strides[d] % x.dims[d]) * kept_strides[d];
    double v = ElementAt(x, i), &a = acc[static_cast<std::size_t>(k)];
    if (is_max) a = std::max(a, v);
    else if (is_min) a = std::min(a, v);
    else if (is_prod) a *= v;
    else if (op == "ReduceL1") a += std::abs(v);
    else if (op == "ReduceL2" || op == "ReduceSumSquare") a += v * v;
    else if (op == "ReduceLogSumExp") a += std::exp(v);
    else a += v;  // ReduceSum, ReduceMean, ReduceLogSum
  }
  for (auto& a : acc) {
    if (op == "ReduceMean") a /= count;
    else if (op == "ReduceL2") a = std::sqrt(a);
    else if (op == "ReduceLogSumExp" || op == "ReduceLogSum") a = std::log(a);
  }
  return MakeHostTensor(IsInt64(x), out, acc);
}

}  // namespace

HostOutputs EvalReduceOp(const Node& node, const HostInputs& in, std::int64_t) {
  static const char* kOps[] = {"ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean", "ReduceProd",
                               "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp", "ReduceLogSum"};
  if (std::none_of(std::begin(kOps), std::end(kOps), [&](const char* op) { return node.op_type == op; }))
    return std::nullopt;
  return One(Reduce(node, in));
}

}  // namespace onnxfuse::eval
