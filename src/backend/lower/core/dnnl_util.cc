#include "backend/lower/core/dnnl_util.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace onnxfuse::backend {

namespace {

Dims NonEmpty(const Dims& dims) { return dims.empty() ? Dims{1} : dims; }

Dims PlainStrides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

}  // namespace

dnnl::memory::desc PlainDesc(const Dims& dims, DataType type) {
  Dims d = NonEmpty(dims);
  return dnnl::memory::desc(d, type, PlainStrides(d));
}

dnnl::memory::desc ChannelsLastDesc(const Dims& dims) {
  if (dims.size() < 3 || dims.size() > 5) return {};
  Tag t = dims.size() == 3 ? Tag::nwc : dims.size() == 4 ? Tag::nhwc : Tag::ndhwc;
  return dnnl::memory::desc(dims, DataType::f32, t);
}

dnnl::memory::desc AnyDesc(const Dims& dims) { return dnnl::memory::desc(NonEmpty(dims), DataType::f32, Tag::any); }

Dims DimsOf(const dnnl::memory::desc& md) { return md.dims(); }

namespace {

// Where each element of an unpadded layout lives, as one stride per dim:
// plain strides, or at most one inner block that covers its whole dim (that
// dim's stride is then 1); size-1 dims get stride 0. nullopt for anything
// else. Equal results mean the same address for every element.
std::optional<Dims> ElementStrides(const dnnl::memory::desc& md) {
  const auto& d = md.data;
  if (d.format_kind != dnnl_blocked || d.offset0 != 0) return std::nullopt;
  for (int i = 0; i < d.ndims; ++i)
    if (d.padded_dims[i] != d.dims[i] || d.padded_offsets[i] != 0) return std::nullopt;
  const auto& blk = d.format_desc.blocking;
  Dims strides(blk.strides, blk.strides + d.ndims);
  if (blk.inner_nblks > 1) return std::nullopt;
  if (blk.inner_nblks == 1) {
    const auto dim = static_cast<std::size_t>(blk.inner_idxs[0]);
    if (blk.inner_blks[0] != d.dims[dim]) return std::nullopt;
    strides[dim] = 1;
  }
  for (int i = 0; i < d.ndims; ++i)
    if (d.dims[i] == 1) strides[static_cast<std::size_t>(i)] = 0;
  return strides;
}

}  // namespace

bool SameBytes(const dnnl::memory::desc& a, const dnnl::memory::desc& b) {
  if (a == b) return true;
  if (a.data.ndims != b.data.ndims || a.data.data_type != b.data.data_type || a.dims() != b.dims()) return false;
  const std::optional<Dims> sa = ElementStrides(a), sb = ElementStrides(b);
  return sa && sb && *sa == *sb;
}

bool HasRunTimeDims(const dnnl::memory::desc& md) {
  return std::any_of(md.data.dims, md.data.dims + md.data.ndims, [](dnnl_dim_t d) { return d == DNNL_RUNTIME_DIM_VAL; });
}

bool IsPlainEquivalent(const dnnl::memory::desc& md) {
  const auto& d = md.data;
  if (d.format_kind != dnnl_blocked || d.offset0 != 0) return false;
  for (int i = 0; i < d.ndims; ++i)
    if (d.padded_dims[i] != d.dims[i] || d.padded_offsets[i] != 0) return false;
  const auto& blk = d.format_desc.blocking;
  Dims dims(d.dims, d.dims + d.ndims);
  int nontrivial = 0, last_nontrivial = -1;
  for (int i = 0; i < d.ndims; ++i)
    if (dims[static_cast<std::size_t>(i)] > 1) ++nontrivial, last_nontrivial = i;
  if (blk.inner_nblks > 0) {
    // Inner blocks only on the one non-trivial dim keep the element order.
    if (nontrivial > 1) return false;
    for (int b = 0; b < blk.inner_nblks; ++b)
      if (blk.inner_idxs[b] != last_nontrivial && nontrivial == 1) return false;
    return true;
  }
  Dims plain = PlainStrides(dims);
  for (int i = 0; i < d.ndims; ++i)
    if (dims[static_cast<std::size_t>(i)] > 1 && blk.strides[i] != plain[static_cast<std::size_t>(i)]) return false;
  return true;
}

bool IsDense(const dnnl::memory::desc& md) {
  const auto& d = md.data;
  if (d.format_kind != dnnl_blocked || d.offset0 != 0) return false;
  for (int i = 0; i < d.ndims; ++i)
    if (d.padded_dims[i] == 0) return true;  // no elements: nothing to index
  const auto& blk = d.format_desc.blocking;
  std::int64_t inner = 1;  // elements in one innermost block
  Dims blocks(d.padded_dims, d.padded_dims + d.ndims);  // per dim: its padded size over its inner blocks
  for (int b = 0; b < blk.inner_nblks; ++b) {
    inner *= blk.inner_blks[b];
    blocks[static_cast<std::size_t>(blk.inner_idxs[b])] /= blk.inner_blks[b];
  }
  std::vector<int> order;  // outer extents above 1, innermost first
  for (int i = 0; i < d.ndims; ++i)
    if (blocks[static_cast<std::size_t>(i)] > 1) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return blk.strides[a] < blk.strides[b]; });
  std::int64_t expected = inner;
  for (int i : order) {
    if (blk.strides[i] != expected) return false;
    expected *= blocks[static_cast<std::size_t>(i)];
  }
  return true;
}

bool IsConvLayout(const dnnl::memory::desc& md) {
  const auto& d = md.data;
  if (d.format_kind != dnnl_blocked || d.ndims < 3 || !IsDense(md)) return false;
  if (d.format_desc.blocking.inner_nblks > 0) return true;
  std::string order = LayoutString(md);
  std::string channels_last = "a";
  for (int i = 2; i < d.ndims; ++i) channels_last += static_cast<char>('a' + i);
  return order == channels_last + "b";
}

dnnl::memory::desc ChannelBlockedDesc(const Dims& dims, std::int64_t block) {
  if (dims.size() < 3 || dims.size() > 5 || (block != 8 && block != 16)) return {};
  const Tag tags[2][3] = {{Tag::nCw8c, Tag::nChw8c, Tag::nCdhw8c}, {Tag::nCw16c, Tag::nChw16c, Tag::nCdhw16c}};
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, tags[block == 16][dims.size() - 3]);
}

std::int64_t ChannelBlockOf(const dnnl::memory::desc& md, const Dims& dims) {
  for (std::int64_t block : {8, 16}) {
    const dnnl::memory::desc canonical = ChannelBlockedDesc(dims, block);
    if (!canonical.is_zero() && SameBytes(md, canonical)) return block;
  }
  return 0;
}

std::optional<ChannelVectors> ChannelVectorsOf(const dnnl::memory::desc& md, const Dims& dims) {
  if (const std::int64_t block = ChannelBlockOf(md, dims)) return ChannelVectors{(dims[1] + block - 1) / block, block};
  const dnnl::memory::desc channels_last = ChannelsLastDesc(dims);
  if (!channels_last.is_zero() && SameBytes(md, channels_last)) return ChannelVectors{1, dims[1]};
  return std::nullopt;
}

dnnl::memory::desc WithLayoutOf(const dnnl::memory::desc& like, const Dims& dims) {
  if (like.data.format_kind != dnnl_blocked || like.data.format_desc.blocking.inner_nblks > 0) return {};
  return WithBlockingOf(like, dims);
}

bool StridesDescribable(const Dims& dims, const Dims& strides) {
  std::vector<std::size_t> order(dims.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return strides[a] < strides[b]; });
  std::int64_t extent = 1;
  for (std::size_t d : order) {
    if (dims[d] == 1) continue;
    if (strides[d] < extent) return false;
    extent = strides[d] * dims[d];
  }
  return true;
}

dnnl::memory::desc WithBlockingOf(const dnnl::memory::desc& like, const Dims& dims) {
  const auto& d = like.data;
  if (d.format_kind != dnnl_blocked || d.ndims != static_cast<int>(dims.size())) return {};
  const auto& blk = d.format_desc.blocking;
  Dims block(dims.size(), 1);  // per dim: the product of its inner blocks
  std::int64_t inner = 1;
  for (int i = 0; i < blk.inner_nblks; ++i) {
    block[static_cast<std::size_t>(blk.inner_idxs[i])] *= blk.inner_blks[i];
    inner *= blk.inner_blks[i];
  }
  dnnl_memory_desc_t out = d;
  out.offset0 = 0;
  std::vector<int> order(dims.size());  // outermost first
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return blk.strides[a] > blk.strides[b]; });
  std::int64_t stride = inner;
  for (std::size_t i = order.size(); i-- > 0;) {
    const auto dim = static_cast<std::size_t>(order[i]);
    out.dims[dim] = dims[dim];
    out.padded_dims[dim] = (dims[dim] + block[dim] - 1) / block[dim] * block[dim];  // blocked dims padded up
    out.padded_offsets[dim] = 0;
    out.format_desc.blocking.strides[dim] = stride;
    stride *= out.padded_dims[dim] / block[dim];
  }
  return dnnl::memory::desc(out);
}

std::optional<Dims> ReshapeStrides(const Dims& dims, const Dims& strides, const Dims& out) {
  Dims od, os;  // the old shape without size-1 dims
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1) od.push_back(dims[i]), os.push_back(strides[i]);
  Dims nd, ns;
  for (auto d : out)
    if (d != 1) nd.push_back(d);
  ns.assign(nd.size(), 0);
  std::size_t oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < nd.size() && oi < od.size()) {
    std::int64_t np = nd[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= nd.size()) return std::nullopt;
        np *= nd[nj++];
      } else {
        if (oj >= od.size()) return std::nullopt;
        op *= od[oj++];
      }
    }
    for (std::size_t k = oi; k + 1 < oj; ++k)  // merged old dims must be contiguous
      if (os[k] != od[k + 1] * os[k + 1]) return std::nullopt;
    ns[nj - 1] = os[oj - 1];
    for (std::size_t k = nj - 1; k > ni; --k) ns[k - 1] = ns[k] * nd[k];
    ni = nj++, oi = oj++;
  }
  if (ni != nd.size() || oi != od.size()) return std::nullopt;
  Dims result(out.size());  // size-1 dims take the stride of what follows them
  std::int64_t next = 1;
  for (std::size_t i = out.size(), k = nd.size(); i-- > 0;) {
    if (out[i] != 1) next = ns[--k] * out[i], result[i] = ns[k];
    else result[i] = next;
  }
  return result;
}

std::string LayoutString(const dnnl::memory::desc& md) {
  const auto& d = md.data;
  if (d.format_kind == dnnl_format_kind_any) return "any";
  if (d.format_kind != dnnl_blocked) return "opaque";
  const auto& blk = d.format_desc.blocking;
  std::vector<int> order(static_cast<std::size_t>(d.ndims));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return blk.strides[a] > blk.strides[b]; });
  std::string out;
  for (int i : order) {
    bool blocked = false;
    for (int b = 0; b < blk.inner_nblks; ++b) blocked |= blk.inner_idxs[b] == i;
    out += static_cast<char>((blocked ? 'A' : 'a') + i);
  }
  for (int b = 0; b < blk.inner_nblks; ++b)
    out += std::to_string(blk.inner_blks[b]) + static_cast<char>('a' + blk.inner_idxs[b]);
  return out;
}

dnnl::primitive_attr CopyOf(const dnnl::primitive_attr& attr) {
  dnnl_primitive_attr_t copy = nullptr;
  dnnl::error::wrap_c_api(dnnl_primitive_attr_clone(&copy, attr.get()), "could not clone a primitive attribute");
  return dnnl::primitive_attr(copy);
}

}  // namespace onnxfuse::backend
