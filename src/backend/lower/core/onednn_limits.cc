#include "backend/lower/core/onednn_limits.h"

#include <algorithm>

#include "backend/lower/core/dnnl_util.h"

namespace onnxfuse::backend {

namespace {

using Kind = PostOp::Kind;

// Limit 1: no two eltwise post-ops of one algorithm with different parameters.
bool DistinctEltwise(const Chain& chain, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    const PostOp& a = chain.post_ops[i];
    if (a.kind != Kind::kEltwise) continue;
    for (std::size_t j = i + 1; j < end; ++j) {
      const PostOp& c = chain.post_ops[j];
      if (c.kind == Kind::kEltwise && c.alg == a.alg && (c.alpha != a.alpha || c.beta != a.beta)) return false;
    }
  }
  return true;
}

// Limit 3: a binary primitive on [N>1, C, 1, ..] takes no broadcast binary post-op.
bool BroadcastPostOpsRight(const Chain& chain, std::size_t begin, std::size_t end, const Dims& dims) {
  const bool one_pixel_batch = dims.size() >= 3 && dims[0] > 1 &&
                               std::all_of(dims.begin() + 2, dims.end(), [](std::int64_t d) { return d == 1; });
  if (!one_pixel_batch) return true;
  for (std::size_t i = begin; i < end; ++i) {
    const PostOp& po = chain.post_ops[i];
    if (po.kind == Kind::kBinary && po.constant && po.constant->dims != dims) return false;
    if (po.kind == Kind::kBinary && !po.constant) return false;  // an activation operand: its dims are not at hand
  }
  return true;
}

}  // namespace

bool PostOpsRight(const Chain& chain, std::size_t begin, std::size_t end, const std::string& kind,
                  const Dims& dst_dims) {
  return DistinctEltwise(chain, begin, end) && (kind != "binary" || BroadcastPostOpsRight(chain, begin, end, dst_dims));
}

bool BinaryPostOpsRight(const dnnl::memory::desc& md) {
  const auto& blocking = md.data.format_desc.blocking;
  if (md.data.format_kind != dnnl_blocked) return true;
  const std::int64_t vector = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core ? 16 : 8;
  for (int i = 0; i < blocking.inner_nblks; ++i)
    if (blocking.inner_idxs[i] == 1 && blocking.inner_blks[i] != vector) return false;
  return true;
}

bool BinaryPostOpsInPlaceRight(const dnnl::memory::desc& md) {
  // Read from the layout itself, whatever order its outer dims take: oneDNN's
  // reference pooling picks caB8b for its destination, the channel block
  // outermost but for the batch.
  return md.data.ndims < 2 || md.data.padded_dims[1] == md.data.dims[1];
}

bool BlockedOperandRight(const Dims& operand_dims, const Dims& src0_dims) {
  if (operand_dims == src0_dims) return true;
  return operand_dims.size() > 1 && operand_dims[1] == src0_dims[1] && operand_dims[1] > 1 &&
         Product(operand_dims) == operand_dims[1];
}

bool Int8ConvZeroPointRight(const std::string& impl, std::int64_t zero_point) {
  return zero_point == 0 || impl.find("gemm") == std::string::npos;
}

bool HasInt8DotProduct() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::avx2_vnni:
    case isa::avx512_core_vnni:
    case isa::avx512_core_bf16:
    case isa::avx512_core_amx: return true;
    default: return false;
  }
}

}  // namespace onnxfuse::backend
