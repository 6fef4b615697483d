// MatMul and Gemm with constant weights on AVX2 as our own GEMM
// (gemm_kernel.h), where oneDNN 2.6 runs them on its slower sgemm.
#include <optional>

#include "gemm_kernel.h"
#include "lower.h"

namespace onnxfuse::backend {

namespace {

using dnnl::memory;

// At least this many rows: below, the product is a few GEMVs bound by reading
// the weights, where oneDNN's gemm is as fast (a classifier's single row).
constexpr std::int64_t kMinRows = 16;

// [depth, cols] blocked by kGemmPanel columns: block p holds [depth][16]
// (oneDNN's blocking descriptor: inner block 16 on dim 1).
memory::desc PanelDesc(std::int64_t depth, std::int64_t cols) {
  memory::desc md(Dims{depth, cols}, memory::data_type::f32, Dims{kGemmPanel, depth * kGemmPanel});
  dnnl_memory_desc_t& d = md.data;
  d.format_desc.blocking.inner_nblks = 1;
  d.format_desc.blocking.inner_blks[0] = kGemmPanel;
  d.format_desc.blocking.inner_idxs[0] = 1;
  return md;
}

// A first post-op adding a constant of one value per column: the bias.
bool TakeBias(Chain& chain, std::int64_t cols, std::vector<double>& bias) {
  if (chain.post_ops.empty()) return false;
  const PostOp& po = chain.post_ops.front();
  if (po.kind != PostOp::Kind::kBinary || po.alg != dnnl::algorithm::binary_add || !po.constant) return false;
  const Tensor& t = *po.constant;
  if (t.dims.empty() || t.dims.back() != cols || Product(t.dims) != cols) return false;
  bias.assign(t.data.begin(), t.data.end());
  chain.post_ops.erase(chain.post_ops.begin());
  return true;
}

}  // namespace

bool EmitOwnGemm(Builder& b, const Chain& chain_in, ValueId input, const Dims& out, std::int64_t depth,
                 const memory::desc& weights_md, const float* weights, std::vector<double> bias) {
  const Node& node = b.graph.node(chain_in.anchor);
  const std::int64_t cols = out.back(), rows = Product(out) / cols;
  if (!b.fuse || !HaveGemm() || cols % kGemmPanel != 0 || rows < kMinRows || !chain_in.scale.empty()) return false;
  Chain chain = chain_in;
  if (bias.empty()) TakeBias(chain, cols, bias);
  const PostOp* sum = nullptr;
  std::optional<std::vector<PointwiseOp>> epilogue = EpilogueOf(chain, &sum);
  if (!epilogue) return false;
  // Gemm adds the residual before anything else (gemm_kernel.h).
  for (std::size_t i = 1; i < epilogue->size(); ++i)
    if ((*epilogue)[i].kind == PointwiseOp::Kind::kAdd) return false;

  memory packed = b.PackedConstant(chain.anchor, "weights", PanelDesc(depth, cols),
                                   [&] { return b.HostView(weights_md, weights); });
  std::optional<memory> bias_mem;
  if (!bias.empty()) bias_mem = BiasMemory(b, chain.anchor, bias);
  const memory::desc dst_md = PlainDesc(out);
  Arg src = b.Use(input, PlainDesc({rows, depth}), node);
  std::optional<Arg> addend;
  Act dst;
  if (sum) {  // in place over the residual when nothing reads it later
    addend = b.Use(sum->operand, dst_md, node);
    dst = b.DeadNow(addend->slot) && addend->slot != src.slot ? Act{addend->slot, dst_md, out} : b.NewAct(out, dst_md);
  } else {
    dst = b.NewAct(out, dst_md);
  }
  // Arguments: a, c, packed weights, then the bias and the residual if any.
  std::vector<std::pair<int, Arg>> args = {
      {0, src}, {1, Arg{dst.slot, dst_md, {}}}, {2, Arg{-1, packed.get_desc(), packed}}};
  const int bias_index = bias_mem ? 3 : -1, addend_index = bias_mem ? 4 : 3;
  if (bias_mem) args.push_back({3, Arg{-1, bias_mem->get_desc(), *bias_mem}});
  if (addend) args.push_back({addend_index, *addend});
  const GemmShape shape{rows, depth, cols};
  b.EmitCustom(
      "matmul", ChainLabel(b, chain_in), std::move(args),
      [shape, ops = *epilogue, bias_index, addend_index](const std::vector<void*>& data) {
        const auto* bias_data = bias_index >= 0 ? static_cast<const float*>(data[static_cast<std::size_t>(bias_index)]) : nullptr;
        const auto* addend_data = static_cast<std::size_t>(addend_index) < data.size()
                                 ? static_cast<const float*>(data[static_cast<std::size_t>(addend_index)])
                                 : nullptr;
        Gemm(static_cast<const float*>(data[0]), static_cast<const float*>(data[2]), bias_data, addend_data,
             static_cast<float*>(data[1]), shape, ops);
      },
      dst_md, "onnxfuse:gemm");
  b.SetAct(chain.out, dst);
  return true;
}

}  // namespace onnxfuse::backend
