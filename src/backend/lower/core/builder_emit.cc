// The Builder's constants in their primitives' layouts (prepacked once,
// shared with a plan file or a session's other schedules) and the steps it
// emits (builder.h).
#include "backend/lower/core/builder.h"

#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include <spdlog/spdlog.h>

#include "backend/kernels/layout.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

dnnl::memory Builder::HostMemory(const dnnl::memory::desc& md, const float* data) {
  dnnl::memory m(md, engine);
  std::memcpy(m.get_data_handle(), data, md.get_size());
  weight_bytes += static_cast<std::int64_t>(md.get_size());
  return m;
}

dnnl::memory Builder::HostView(const dnnl::memory::desc& md, const float* data) const {
  return dnnl::memory(md, engine, const_cast<float*>(data));  // only ever read (reorder source)
}

dnnl::memory Builder::Prepack(const dnnl::memory& plain, const dnnl::memory::desc& want) {
  dnnl::memory m(want, engine);
  dnnl::reorder(plain, m).execute(stream, const_cast<dnnl::memory&>(plain), m);
  stream.wait();
  weight_bytes += static_cast<std::int64_t>(want.get_size());
  return m;
}

namespace {

// What identifies a memory desc's layout: its kind, type, padded dims and
// blocking. Lookups compare the descs themselves too, so a coarse key is safe.
std::string LayoutKey(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  std::string key = std::to_string(d.format_kind) + "/" + std::to_string(d.data_type);
  for (int i = 0; i < d.ndims; ++i) key += "/" + std::to_string(d.padded_dims[i]);
  if (d.format_kind == dnnl_blocked) {
    const dnnl_blocking_desc_t& blocking = d.format_desc.blocking;
    for (int i = 0; i < d.ndims; ++i) key += "," + std::to_string(blocking.strides[i]);
    for (int i = 0; i < blocking.inner_nblks; ++i)
      key += ";" + std::to_string(blocking.inner_idxs[i]) + "x" + std::to_string(blocking.inner_blks[i]);
  }
  return key;
}

}  // namespace

dnnl::memory Builder::PackedConstant(NodeId node, const std::string& argument, const dnnl::memory::desc& want,
                                     const std::function<dnnl::memory()>& plain) {
  const std::string key = std::to_string(node) + ":" + graph.node(node).op_type + ":" + argument;
  // Replaying, every layout made for the constant is kept under this key as
  // well: a session's schedules at other shapes may want one of several
  // layouts (oneDNN's matmul or our GEMM, by rows), and each is made once.
  const std::string in_layout = key + "@" + LayoutKey(want);
  if (packed_ && packed_->replay) {
    auto made = packed_->by_key.find(in_layout);
    if (made != packed_->by_key.end() && made->second.get_desc() == want) {
      weight_bytes += static_cast<std::int64_t>(want.get_size());
      ++packed_->reused;
      return made->second;
    }
    auto it = packed_->by_key.find(key);
    // A stored layout that is not blocked (Winograd's), or carries extra data
    // (int8 weights' compensations), is never a reorder source: oneDNN only
    // writes those, and only one it made itself is trusted.
    const dnnl_memory_desc_t& stored_desc = it == packed_->by_key.end() ? want.data : it->second.get_desc().data;
    const bool usable = it != packed_->by_key.end() && it->second.get_desc().dims() == want.dims() &&
                        ((stored_desc.format_kind == dnnl_blocked && stored_desc.extra.flags == 0) ||
                         it->second.get_desc() == want);
    if (usable) {
      weight_bytes += static_cast<std::int64_t>(want.get_size());
      if (it->second.get_desc() == want) {
        ++packed_->reused;
        return it->second;
      }
      ++packed_->relaid;
      // The stored memory may belong to another engine object: view it on ours.
      dnnl::memory stored(it->second.get_desc(), engine, it->second.get_data_handle());
      dnnl::memory m(want, engine);
      dnnl::reorder(stored, m).execute(stream, stored, m);
      stream.wait();
      packed_->by_key[in_layout] = m;
      return m;
    }
    ++packed_->recomputed;  // this CPU lowered the node differently from the building one
    spdlog::debug("packed constant {}: {}, packed again", key,
                  it == packed_->by_key.end() ? "not stored" : "stored in a layout not reorderable to this one");
  }
  dnnl::memory m = Prepack(plain(), want);
  // Replaying records too: a constant packed here is then found by the next
  // plan replaying the same map (a session's schedules for other shapes).
  if (packed_) {
    packed_->by_key[key] = m;
    if (packed_->replay) packed_->by_key[in_layout] = m;
  }
  return m;
}

const std::string* Builder::StoredImpl(const std::string& key) const {
  if (!packed_ || !packed_->replay) return nullptr;
  auto it = packed_->implementations.find(key);
  return it == packed_->implementations.end() ? nullptr : &it->second;
}

dnnl::primitive_attr Builder::Attr(const dnnl::post_ops& ops) const {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (ops.len() > 0) attr.set_post_ops(ops);
  return attr;
}

double ConvFlops(std::int64_t dst_elements, std::int64_t dst_channels, std::int64_t weight_elements) {
  return dst_channels > 0 ? 2.0 * static_cast<double>(dst_elements) * static_cast<double>(weight_elements) /
                                static_cast<double>(dst_channels)
                          : 0.0;
}

namespace {

// Elements of `md`; -1 when a dim is given at run time (or `md` is empty).
std::int64_t ElementsOf(const dnnl::memory::desc& md) {
  if (md.is_zero()) return -1;
  std::int64_t n = 1;
  for (auto d : md.dims()) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

// ScheduleStep::flops of a oneDNN primitive: the direct algorithm's
// multiply-adds for convolutions and products, one per output element else.
double PrimitiveFlops(const dnnl::primitive_desc_base& pd) {
  using dnnl::query;
  const dnnl::memory::desc src = pd.query_md(query::src_md, 0), dst = pd.query_md(query::dst_md, 0),
                           weights = pd.query_md(query::weights_md, 0);
  const std::int64_t n_src = ElementsOf(src), n_dst = ElementsOf(dst), n_weights = ElementsOf(weights);
  if (n_dst < 0) return 0;
  switch (pd.get_kind()) {
    case dnnl::primitive::kind::convolution:
    case dnnl::primitive::kind::inner_product:
      return n_weights < 0 ? 0 : ConvFlops(n_dst, dst.dims()[1], n_weights);
    case dnnl::primitive::kind::deconvolution:  // each input scatters into the output
      return n_weights < 0 || n_src < 0 ? 0 : ConvFlops(n_src, src.dims()[1], n_weights);
    case dnnl::primitive::kind::matmul:
      return n_src < 0 ? 0 : 2.0 * static_cast<double>(n_dst) * static_cast<double>(src.dims().back());
    default: return static_cast<double>(n_dst);
  }
}

}  // namespace

void Builder::Emit(const dnnl::primitive_desc_base& pd, std::string kind, std::string label,
                   std::vector<std::pair<int, Arg>> args, const dnnl::memory::desc& dst_md) {
  Step step;
  step.prim = dnnl::primitive(pd.get());
  step.args = std::move(args);
  step.scratchpad = pd.scratchpad_desc();
  step.impl = pd.impl_info_str();
  if (const dnnl::memory::desc src = pd.query_md(dnnl::query::src_md, 0); !src.is_zero())
    step.data_type = dnnl_dt2str(static_cast<dnnl_data_type_t>(src.data_type()));
  step.any_shape = HasRunTimeDims(pd.query_md(dnnl::query::dst_md, 0));
  step.slow = IsSlowPrimitive(kind, pd);
  step.flops = PrimitiveFlops(pd);
  if (fuse && step.slow)
    spdlog::warn("{} [{}] runs oneDNN's {} implementation '{}' (slow path)", kind, label,
                 step.impl.rfind("ref", 0) == 0 ? "reference" : "gemm", step.impl);
  Push(std::move(step), std::move(kind), std::move(label), dst_md);
}

void Builder::EmitCustom(std::string kind, std::string label, std::vector<std::pair<int, Arg>> args,
                         CustomKernel kernel, const dnnl::memory::desc& dst_md, std::string impl,
                         std::int64_t scratch_bytes) {
  for (const auto& [key, arg] : args)
    if (arg.slot >= 0 && arg.md.data.format_kind == dnnl_blocked && !IsDense(arg.md))
      throw Error(ErrorKind::kInternal, "internal error: custom kernel " + kind + " [" + label +
                                            "] given a buffer with gaps (" + LayoutString(arg.md) + ")");
  Step step;
  step.custom = std::move(kernel);
  step.args = std::move(args);
  if (scratch_bytes > 0) step.scratchpad = dnnl::memory::desc({scratch_bytes}, dnnl::memory::data_type::u8, dnnl::memory::format_tag::a);
  step.impl = std::move(impl);
  step.flops = static_cast<double>(std::max<std::int64_t>(0, ElementsOf(dst_md)));  // our convolutions set their own
  Push(std::move(step), std::move(kind), std::move(label), dst_md);
}

void Builder::Push(Step step, std::string kind, std::string label, const dnnl::memory::desc& dst_md) {
  step.kind = std::move(kind);
  step.label = std::move(label);
  step.layout = LayoutString(dst_md);
  step.group = group;
  step.pattern = group_pattern;
  for (const auto& [key, arg] : step.args)
    if (ElementsOf(arg.md) >= 0) step.bytes += static_cast<std::int64_t>(arg.md.get_size());
  if (spdlog::should_log(spdlog::level::debug))  // not formatted otherwise: a session compiles at every new shape
    spdlog::debug("{} [{}]: {} -> {} {}", step.kind, step.label, step.impl, DimsString(dst_md.dims()), step.layout);
  steps.push_back(std::move(step));
}

namespace {

// The element strides of a dense float32 layout without inner blocks (plain,
// or a permutation of plain), or empty.
Dims UnblockedStrides(const dnnl::memory::desc& md) {
  const auto& d = md.data;
  if (d.data_type != dnnl_f32 || !IsDense(md) || d.format_desc.blocking.inner_nblks != 0) return {};
  for (int i = 0; i < d.ndims; ++i)
    if (d.padded_dims[i] != d.dims[i]) return {};
  return Dims(d.format_desc.blocking.strides, d.format_desc.blocking.strides + d.ndims);
}

}  // namespace

Act Builder::EmitReorder(const Arg& src, const Dims& dims, const dnnl::memory::desc& want, const std::string& label,
                         bool dims_vary) {
  Act dst = NewAct(dims, want);
  if (const Dims from = UnblockedStrides(src.md), to = UnblockedStrides(want);
      dims_vary && !src.fixed && from.size() == dims.size() && to.size() == dims.size() && !dims.empty()) {
    EmitCustom("reorder", label, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, Arg{dst.slot, want, {}}}},
               [from, to, dims](const std::vector<void*>& data) {
                 StridedCopy(static_cast<const float*>(data[0]), from, static_cast<float*>(data[1]), to, dims);
               },
               want, "onnxfuse:strided_copy");
    steps.back().reorder = true;
    return dst;
  }
  if (dims.size() == 4 && dims[1] == 3 && src.md == PlainDesc(dims) && want == ChannelsLastDesc(dims) &&
      HaveNchwToNhwc3()) {  // an image for the first convolution (backend/kernels/layout.h)
    const std::int64_t images = dims[0], pixels = dims[2] * dims[3];
    EmitCustom("reorder", label, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, Arg{dst.slot, want, {}}}},
               [images, pixels](const std::vector<void*>& data) {
                 NchwToNhwc3(static_cast<const float*>(data[0]), static_cast<float*>(data[1]), images, pixels);
               },
               want);
    steps.back().reorder = true;
    return dst;
  }
  dnnl::reorder::primitive_desc pd(engine, src.md, engine, want, Attr());
  Emit(pd, "reorder", label, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, Arg{dst.slot, want, {}}}}, want);
  steps.back().reorder = true;
  return dst;
}

void Absorb(Builder& b, const std::vector<const Node*>& nodes) {
  for (const Node* n : nodes) {
    b.Consume(*n);
    b.absorbed[static_cast<std::size_t>(n - b.graph.nodes().data())] = true;
  }
}

}  // namespace onnxfuse::backend
