// Small helpers around oneDNN 2.6 memory descriptors (the only backend header
// besides builder.h that includes dnnl.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "eval/dims.h"

namespace onnxfuse::backend {

// The dims arithmetic lives with the host evaluator (eval/dims.h), which
// builds without oneDNN.
using eval::BroadcastDims;
using eval::Dims;
using eval::DimsString;
using eval::ExpandRank;
using eval::Product;
using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

/// Row-major ("plain") descriptor, f32 unless `type` says otherwise: a, ab,
/// abc, abcd (nchw), ... Rank 0 is treated as [1].
dnnl::memory::desc PlainDesc(const Dims& dims, DataType type = DataType::f32);
/// Channels-last f32 descriptor (nwc, nhwc, ndhwc) for 3-D to 5-D dims; a zero desc otherwise.
dnnl::memory::desc ChannelsLastDesc(const Dims& dims);
/// f32 descriptor with format_tag::any: the primitive chooses.
dnnl::memory::desc AnyDesc(const Dims& dims);
/// The md's logical dims.
Dims DimsOf(const dnnl::memory::desc& md);

/// True when `md` stores its elements exactly where PlainDesc(dims) would: no
/// padding, no offset, and blocking/strides that only reorder size-1 dims (e.g.
/// nChw16c or nhwc of a [1,C,1,1] tensor with C % 16 == 0). Such a buffer can be
/// read through a plain view without a reorder.
bool IsPlainEquivalent(const dnnl::memory::desc& md);

/// True when a dim of `md` is given at run time (DNNL_RUNTIME_DIM_VAL).
bool HasRunTimeDims(const dnnl::memory::desc& md);

/// True when `a` and `b` store every element at the same place: equal
/// descriptors, or unpadded layouts that differ only in how they spell it: a
/// channel block covering all channels (nChw16c of 16 channels is nhwc), or
/// strides of size-1 dims. One may then be read through the other without a
/// reorder.
bool SameBytes(const dnnl::memory::desc& a, const dnnl::memory::desc& b);

/// True when `md` (blocked, no offset) covers its buffer without gaps: its
/// strides, in decreasing order, are the products of the padded dims inside
/// them (any dimension order, any inner blocks). A sub-tensor view (a Slice
/// along an inner axis) is not dense: its rows have gaps.
bool IsDense(const dnnl::memory::desc& md);

/// A dense layout convolutions produce: channel-blocked (nChw16c, ...) or channels-last (nhwc, nwc, ndhwc).
bool IsConvLayout(const dnnl::memory::desc& md);

/// nCw8c, nChw8c, nCdhw8c (or 16c: `block`) for `dims` of 3 to 5 dims; a zero md otherwise.
dnnl::memory::desc ChannelBlockedDesc(const Dims& dims, std::int64_t block);

/// The inner channel block of `md` (dims `dims`) when it is a dense
/// channel-blocked layout (nCw8c, nChw16c, ...; compared by bytes: with a
/// single block or a single image, its strides may differ from the canonical
/// ones): 8 or 16; 0 otherwise.
std::int64_t ChannelBlockOf(const dnnl::memory::desc& md, const Dims& dims);

/// A dense layout of `md` (dims [N, C, spatial...]) that holds, per image,
/// `blocks` planes of [pixels][lanes] floats: channel-blocked (nChw8c: lanes
/// 8, blocks = C padded up / 8) or channels-last (one block of C lanes).
struct ChannelVectors {
  std::int64_t blocks = 0, lanes = 0;
};
/// `md` as ChannelVectors; nullopt for other layouts.
std::optional<ChannelVectors> ChannelVectorsOf(const dnnl::memory::desc& md, const Dims& dims);

/// A descriptor for `dims` with the same dimension order as `like` (e.g. nhwc),
/// or a zero md when `like` has inner blocks (nChw16c) or is not blocked.
dnnl::memory::desc WithLayoutOf(const dnnl::memory::desc& like, const Dims& dims);

/// A dense descriptor for `dims` with the dimension order and inner blocks of
/// `like` (nChw8c for [1, C, 1, 1] like an nChw8c [1, C, H, W]; blocked dims
/// padded up to their block), or a zero md when `like` is not blocked or has
/// another rank. oneDNN 2.6's jit binary on AVX2 wants a per-channel operand
/// blocked as src0 is; with a plain one it runs ref:any, ~100x slower.
dnnl::memory::desc WithBlockingOf(const dnnl::memory::desc& like, const Dims& dims);

/// Whether oneDNN 2.6 describes `dims` with `strides` (in elements): taken in
/// order of stride, each dim of more than one element must start at or past
/// the extent of those inside it (stride x dim), or memory::desc throws
/// "could not construct a memory descriptor using strides". A step larger
/// than the row it skips breaks this: x[3,3][:, ::2] is [3,2] with strides
/// [3,2]. Matches oneDNN on 20,000 random dims and strides.
bool StridesDescribable(const Dims& dims, const Dims& strides);

/// Strides that view a strided tensor (`dims`, `strides`) as `out` dims without
/// copying (numpy's _attempt_nocopy_reshape), or nullopt when impossible.
std::optional<Dims> ReshapeStrides(const Dims& dims, const Dims& strides, const Dims& out);

/// oneDNN-style layout string: "abcd" (plain), "acdb" (nhwc), "aBcd16b" (nChw16c).
std::string LayoutString(const dnnl::memory::desc& md);

/// A copy of `attr` to change (the C++ API's primitive_attr shares its handle on copy).
dnnl::primitive_attr CopyOf(const dnnl::primitive_attr& attr);

}  // namespace onnxfuse::backend
