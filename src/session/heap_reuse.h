// The C library's heap, set to keep freed memory for the next call.
#pragma once

namespace onnxfuse::session {

/// glibc's malloc (glibc manual, "Malloc Tunable Parameters") serves a block
/// above its mmap threshold (128 KiB at first, raised to the largest block
/// freed, up to 32 MiB) with fresh pages from the kernel, and returns free
/// memory at the top of the heap above its trim threshold: a workload that
/// allocates and frees the same large tensors on every call (the staged
/// runner's tensors between stages, a new stage's arena) page-faults zeroed
/// pages in again each time. This sets the mmap threshold to 32 MiB and the
/// trim threshold to 256 MiB, so blocks up to 32 MiB come from the heap and up
/// to 256 MiB of freed heap is kept for reuse. ONNX Runtime keeps its own arena
/// of freed buffers for the same reason. Torchvision's Faster R-CNN
/// (scripts/bench.sh --dynamic fasterrcnn) spends about a quarter of its time
/// in page faults without it.
///
/// Process-wide and idempotent; nothing is changed when the process sets
/// MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ or GLIBC_TUNABLES (the
/// user's choice), or when the C library is not glibc. No errors.
void KeepFreedMemoryForReuse();

}  // namespace onnxfuse::session
