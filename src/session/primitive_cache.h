// oneDNN's primitive cache, bounded for sessions that serve many shapes.
#pragma once

namespace onnxfuse::session {

/// The capacity a session gives oneDNN's primitive cache.
inline constexpr int kPrimitiveCacheCapacity = 128;

/// Sets oneDNN's process-wide primitive cache (oneDNN's developer guide,
/// "Primitive cache": the last 1,024 primitives created, by default) to
/// kPrimitiveCacheCapacity primitives, unless ONEDNN_PRIMITIVE_CACHE_CAPACITY
/// is set, which then decides. A session's schedules hold their own
/// primitives; the cache serves only a compile that asks again for a primitive
/// made before (a layer equal to an earlier one). Left at 1,024, it grows with
/// every new input shape until full: one session serving the encoder at 1,000
/// random lengths ended at 1.24x the memory it had after 10 calls, 1.16x with
/// 128 and at the same speed (scripts/bench_memory.py). Idempotent; no errors.
void BoundPrimitiveCache();

}  // namespace onnxfuse::session
