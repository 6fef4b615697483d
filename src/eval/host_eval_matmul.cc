// MatMul-13 on host tensors (host_eval.h; ONNX Operators.md, MatMul: "behaves
// like numpy.matmul"): a 1-D first operand is a row [1, K] and a 1-D second a
// column [K, 1], the added dim dropped from the result; the dims before the
// last two broadcast (ONNX Broadcasting.md). Floats accumulate in double and
// round once per output; integers accumulate in int64 (MatMul's int32 and
// int64 types, narrowed to the declared type by the caller). The staged
// runner evaluates attention over a growing KV cache with it, so the loops
// run row by row over contiguous memory (i, k, j order).
#include <algorithm>
#include <string>
#include <vector>

#include "eval/dims.h"
#include "eval/host_eval_ops.h"
#include "eval/host_tensor.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::eval {

namespace {

// Offsets of each batch of `dims` (its last two dims a matrix of `matrix`
// elements) for each batch of the broadcast `batch` dims, in order.
std::vector<std::int64_t> BatchOffsets(const Dims& dims, const Dims& batch, std::int64_t matrix) {
  const Dims own(dims.begin(), dims.end() - 2);
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(Product(batch)));
  for (std::size_t i = 0; i < offsets.size(); ++i)
    offsets[i] = BroadcastIndex(static_cast<std::int64_t>(i), batch, own) * matrix;
  return offsets;
}

template <typename T, typename Acc>
void Multiply(const T* a, const T* b, T* c, std::int64_t m, std::int64_t k, std::int64_t n,
              const std::vector<std::int64_t>& a_at, const std::vector<std::int64_t>& b_at) {
  std::vector<Acc> row(static_cast<std::size_t>(n));
  for (std::size_t batch = 0; batch < a_at.size(); ++batch) {
    const T* a0 = a + a_at[batch];
    const T* b0 = b + b_at[batch];
    T* c0 = c + static_cast<std::int64_t>(batch) * m * n;
    for (std::int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), Acc{0});
      for (std::int64_t p = 0; p < k; ++p) {
        const Acc x = static_cast<Acc>(a0[i * k + p]);
        const T* b_row = b0 + p * n;
        for (std::int64_t j = 0; j < n; ++j) row[static_cast<std::size_t>(j)] += x * static_cast<Acc>(b_row[j]);
      }
      for (std::int64_t j = 0; j < n; ++j) c0[i * n + j] = static_cast<T>(row[static_cast<std::size_t>(j)]);
    }
  }
}

}  // namespace

Tensor MatMulOf(const Node& node, const Tensor& a, const Tensor& b) {
  if (a.dims.empty() || b.dims.empty()) InvalidNode(node, "MatMul of a scalar");
  if (IsInt64(a) != IsInt64(b)) InvalidNode(node, "operands of different element types");
  Dims ad = a.dims, bd = b.dims;
  const bool row = ad.size() == 1, column = bd.size() == 1;
  if (row) ad.insert(ad.begin(), 1);
  if (column) bd.push_back(1);
  const std::int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  if (bd[bd.size() - 2] != k)
    InvalidNode(node, "inner dims differ: " + DimsString(a.dims) + " x " + DimsString(b.dims));
  const Dims batch = BroadcastDims(Dims(ad.begin(), ad.end() - 2), Dims(bd.begin(), bd.end() - 2));
  const std::vector<std::int64_t> a_at = BatchOffsets(ad, batch, m * k), b_at = BatchOffsets(bd, batch, k * n);

  Dims out = batch;
  if (!row) out.push_back(m);
  if (!column) out.push_back(n);
  Tensor c;
  c.elem_type = a.elem_type;
  c.data_type = a.data_type;
  c.dims = out;
  const auto size = static_cast<std::size_t>(Product(out));
  if (IsInt64(a)) {
    c.int_data.resize(size);
    Multiply<std::int64_t, std::int64_t>(a.int_data.data(), b.int_data.data(), c.int_data.data(), m, k, n, a_at, b_at);
  } else {
    c.data.resize(size);
    Multiply<float, double>(a.data.data(), b.data.data(), c.data.data(), m, k, n, a_at, b_at);
  }
  return c;
}

HostOutputs EvalMatMul(const Node& node, const HostInputs& in, std::int64_t /*opset*/) {
  if (node.op_type != "MatMul") return std::nullopt;
  return One(MatMulOf(node, NeedInput(node, in, 0), NeedInput(node, in, 1)));
}

}  // namespace onnxfuse::eval
