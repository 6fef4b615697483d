// The plan file's fixed parts (plan_format.h).
#include "backend/plan/plan_format.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace onnxfuse::planformat {

namespace {

// Constants are f32 of at most 2^31 elements per dim; larger values in a file are damage.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 31;

bool MulFits(std::int64_t a, std::int64_t b, std::int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
bool AddFits(std::int64_t a, std::int64_t b, std::int64_t& out) { return !__builtin_add_overflow(a, b, &out); }

}  // namespace

std::uint32_t Crc32(const void* data, std::size_t size, std::uint32_t crc) {
  uLong value = crc;
  const auto* p = static_cast<const Bytef*>(data);
  while (size > 0) {  // zlib takes uInt lengths
    auto chunk = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    value = crc32(value, p, chunk);
    p += chunk, size -= chunk;
  }
  return static_cast<std::uint32_t>(value);
}

namespace {

// The extra data a stored descriptor may carry: that of int8 weights.
constexpr std::uint64_t kStorableExtra = dnnl_memory_extra_flag_compensation_conv_s8s8 |
                                         dnnl_memory_extra_flag_scale_adjust |
                                         dnnl_memory_extra_flag_compensation_conv_asymmetric_src;

std::size_t ElementBytes(dnnl_data_type_t type) { return type == dnnl_f32 ? 4 : 1; }

}  // namespace

bool CanStoreDesc(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.offset0 != 0 || (d.extra.flags & ~kStorableExtra) != 0) return false;
  if (d.format_kind == dnnl_format_kind_wino) return d.data_type == dnnl_f32 && d.extra.flags == 0;
  if (d.format_kind != dnnl_blocked || (d.data_type != dnnl_f32 && d.data_type != dnnl_s8)) return false;
  for (int i = 0; i < d.ndims; ++i)
    if (d.padded_offsets[i] != 0) return false;
  return true;
}

void StoreDesc(const dnnl::memory::desc& md, planfile::MemoryDesc& out) {
  const dnnl_memory_desc_t& d = md.data;
  Check(CanStoreDesc(md), "a prepacked constant has a layout the plan file cannot store");
  if (d.format_kind == dnnl_format_kind_wino) {
    const dnnl_wino_desc_t& w = d.format_desc.wino_desc;
    for (int i = 0; i < d.ndims; ++i) out.add_dims(d.dims[i]), out.add_padded_dims(d.padded_dims[i]);
    out.set_data_type(d.data_type);
    planfile::WinogradDesc& o = *out.mutable_wino();
    o.set_wino_format(w.wino_format), o.set_r(w.r), o.set_alpha(w.alpha), o.set_ic(w.ic), o.set_oc(w.oc);
    o.set_ic_block(w.ic_block), o.set_oc_block(w.oc_block), o.set_ic2_block(w.ic2_block), o.set_oc2_block(w.oc2_block);
    o.set_adj_scale(w.adj_scale), o.set_size(static_cast<std::int64_t>(w.size));
    return;
  }
  const auto& blk = d.format_desc.blocking;
  for (int i = 0; i < d.ndims; ++i) {
    Check(d.padded_offsets[i] == 0, "a prepacked constant has padded offsets");
    out.add_dims(d.dims[i]);
    out.add_padded_dims(d.padded_dims[i]);
    out.add_strides(blk.strides[i]);
  }
  out.set_data_type(d.data_type);
  for (int i = 0; i < blk.inner_nblks; ++i) {
    out.add_inner_blks(blk.inner_blks[i]);
    out.add_inner_idxs(blk.inner_idxs[i]);
  }
  if (d.extra.flags != 0) {
    planfile::MemoryExtra& e = *out.mutable_extra();
    e.set_flags(static_cast<std::int64_t>(d.extra.flags));
    e.set_compensation_mask(d.extra.compensation_mask);
    e.set_scale_adjust(d.extra.scale_adjust);
    e.set_asymm_compensation_mask(d.extra.asymm_compensation_mask);
  }
}


// A stored descriptor, validated so that every element it addresses lies inside
// the bytes that come with it: oneDNN trusts a descriptor's strides.
dnnl::memory::desc LoadDesc(const planfile::MemoryDesc& in, std::size_t data_bytes, const std::string& what) {
  const int ndims = in.dims_size();
  if (in.has_wino()) {  // only ever used when equal to a layout this CPU's primitive chose (Builder::PackedConstant)
    const planfile::WinogradDesc& w = in.wino();
    if (ndims < 1 || ndims > DNNL_MAX_NDIMS || in.padded_dims_size() != ndims || in.data_type() != dnnl_f32 ||
        w.size() < 0 || static_cast<std::uint64_t>(w.size()) != data_bytes)
      throw std::invalid_argument(what + ": malformed Winograd memory descriptor");
    dnnl_memory_desc_t d;
    std::memset(&d, 0, sizeof d);
    d.ndims = ndims;
    d.data_type = dnnl_f32;
    d.format_kind = dnnl_format_kind_wino;
    for (int i = 0; i < ndims; ++i) {
      if (in.dims(i) < 1 || in.dims(i) > kMaxDim || in.padded_dims(i) != in.dims(i))
        throw std::invalid_argument(what + ": bad dims");
      d.dims[i] = d.padded_dims[i] = in.dims(i);
    }
    dnnl_wino_desc_t& o = d.format_desc.wino_desc;
    o.wino_format = static_cast<dnnl_wino_memory_format_t>(w.wino_format());
    o.r = w.r(), o.alpha = w.alpha(), o.ic = w.ic(), o.oc = w.oc(), o.ic_block = w.ic_block(), o.oc_block = w.oc_block();
    o.ic2_block = w.ic2_block(), o.oc2_block = w.oc2_block(), o.adj_scale = w.adj_scale();
    o.size = static_cast<std::size_t>(w.size());
    return dnnl::memory::desc(d);
  }
  if (ndims < 1 || ndims > DNNL_MAX_NDIMS || in.padded_dims_size() != ndims || in.strides_size() != ndims ||
      in.inner_blks_size() != in.inner_idxs_size() || in.inner_blks_size() > DNNL_MAX_NDIMS)
    throw std::invalid_argument(what + ": malformed memory descriptor");
  if (in.data_type() != dnnl_f32 && in.data_type() != dnnl_s8)
    throw std::invalid_argument(what + ": data type is neither f32 nor s8");
  dnnl_memory_desc_t d;
  std::memset(&d, 0, sizeof d);
  d.ndims = ndims;
  d.data_type = static_cast<dnnl_data_type_t>(in.data_type());
  d.format_kind = dnnl_blocked;
  auto& blk = d.format_desc.blocking;
  std::int64_t block[DNNL_MAX_NDIMS], inner = 1;
  std::fill(block, block + DNNL_MAX_NDIMS, 1);
  blk.inner_nblks = in.inner_blks_size();
  for (int i = 0; i < blk.inner_nblks; ++i) {
    std::int64_t size = in.inner_blks(i), idx = in.inner_idxs(i);
    if (size < 1 || size > 64 || idx < 0 || idx >= ndims) throw std::invalid_argument(what + ": bad inner block");
    blk.inner_blks[i] = size, blk.inner_idxs[i] = idx;
    block[idx] *= size, inner *= size;
  }
  if (inner > 4096) throw std::invalid_argument(what + ": bad inner blocks");
  // The largest element offset: every outer index at its last value, plus the inner block.
  std::int64_t last = inner - 1;
  for (int i = 0; i < ndims; ++i) {
    std::int64_t dim = in.dims(i), padded = in.padded_dims(i), stride = in.strides(i), term = 0;
    if (dim < 1 || dim > kMaxDim || padded < dim || padded > kMaxDim || padded % block[i] != 0 || stride < 0 ||
        !MulFits(padded / block[i] - 1, stride, term) || !AddFits(last, term, last))
      throw std::invalid_argument(what + ": bad dims or strides");
    d.dims[i] = dim, d.padded_dims[i] = padded, blk.strides[i] = stride;
  }
  // The elements come first, oneDNN's extra data (int8 weights' compensations) after them.
  const auto elements = static_cast<std::int64_t>(dnnl::memory::desc(d).get_size() / ElementBytes(d.data_type));
  if (in.has_extra()) {
    const planfile::MemoryExtra& e = in.extra();
    const auto flags = static_cast<std::uint64_t>(e.flags());
    // A compensation covers the output channels of each group (mask bits 0 and 1).
    if (flags == 0 || (flags & ~kStorableExtra) != 0 || d.data_type != dnnl_s8 || e.compensation_mask() < 0 ||
        e.compensation_mask() > 3 || e.asymm_compensation_mask() < 0 || e.asymm_compensation_mask() > 3)
      throw std::invalid_argument(what + ": bad extra data");
    d.extra.flags = flags;
    d.extra.compensation_mask = e.compensation_mask();
    d.extra.scale_adjust = e.scale_adjust();
    d.extra.asymm_compensation_mask = e.asymm_compensation_mask();
  }
  dnnl::memory::desc md(d);
  if (md.get_size() != data_bytes || last >= elements)
    throw std::invalid_argument(what + ": " + std::to_string(data_bytes) + " bytes of data for a descriptor of " +
                                std::to_string(md.get_size()));
  return md;
}

}  // namespace onnxfuse::planformat
