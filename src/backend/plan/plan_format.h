// The plan file's fixed parts, shared by its writer (plan_file_write.cc) and
// reader (plan_file_read.cc): header fields, CRC-32, and oneDNN memory
// descriptors to and from their stored form (src/backend/plan/plan_file.h).
#pragma once

#include <cstdint>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "onnxfuse/error.h"
#include "onnxfuse_plan.pb.h"

namespace onnxfuse::planformat {

/// The file offset every constant's data starts at a multiple of (the writer
/// pads before it), so that a reader maps the file and uses the constants
/// where they lie, aligned as oneDNN's own allocations are.
inline constexpr std::size_t kConstantAlignment = 64;

inline constexpr char kMagic[8] = {'O', 'N', 'N', 'X', 'F', 'P', 'L', 'N'};

[[noreturn]] inline void Invalid(const std::string& source, const std::string& why) {
  throw Error(ErrorKind::kInvalidModel, source + ": " + why);
}

inline void PutU32(unsigned char* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline void PutU64(unsigned char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
/// The little-endian integer of `bytes` bytes at `p`.
inline std::uint64_t GetLe(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

/// CRC-32 (ISO-HDLC, zlib's crc32) of `size` bytes, continuing from `crc` (0 to start).
std::uint32_t Crc32(const void* data, std::size_t size, std::uint32_t crc = 0);

/// Stores a blocked or Winograd f32 descriptor (no offset, no extra flags).
/// Throws Error(kInternal) otherwise.
void StoreDesc(const dnnl::memory::desc& md, planfile::MemoryDesc& out);

/// Whether StoreDesc stores `md` and LoadDesc reads it back: float32 or s8,
/// plain or blocked without padded offsets or an offset, with the extra data
/// of int8 weights (oneDNN's s8s8 and asymmetric-source compensations, scale
/// adjustment), or float32 Winograd. Anything else is left out of a plan
/// file and packed again from the model when it is loaded
/// (Builder::PackedConstant).
bool CanStoreDesc(const dnnl::memory::desc& md);

/// A stored descriptor, validated so that every element it addresses lies inside
/// the `data_bytes` that come with it (oneDNN trusts a descriptor's strides);
/// a Winograd one only so that its size is `data_bytes`: it must not be used
/// unless it equals a descriptor oneDNN made.
/// Throws std::invalid_argument naming `what`.
dnnl::memory::desc LoadDesc(const planfile::MemoryDesc& in, std::size_t data_bytes, const std::string& what);

}  // namespace onnxfuse::planformat
