// Running a large batch as several passes of a smaller schedule.
//
// Why: a plan runs its steps layer by layer over the whole batch, so at batch
// 32 every step streams its input and output through DRAM, while at batch 1 a
// step finds its input in the cache where the step before left it. Measured
// with `onnx-fuse run --input-shape input=Bx3x224x224 --threads 1` on a Zen 4
// (L3 32 MB), mobilenet_v2 takes 6.9 / 7.1 / 8.3 / 9.0 / 10.9 ms per image at
// batch 1 / 2 / 4 / 8 / 32. A model that computes each sample on its own (no op
// mixes the samples of a batch) gives the same outputs when its batch is cut
// into slices along that dim and each slice runs alone; the session then runs a
// batch B as B / c passes of a schedule compiled for c samples, with c chosen
// so that one step's tensors stay in the cache. The same technique is
// "micro-batching" in TensorFlow Serving's batching guide and TVM's relay
// examples; the separability rules are the ONNX operator semantics (Operators.md).
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace onnxfuse::session {

/// The symbol ("N") of the leading dim of every graph input of `graph` when
/// the model computes each index of that dim on its own, "" otherwise; then
/// `why` (when given) says which input, output or node prevents it. Needs:
/// every graph input's dim 0 is the same symbol and it appears in no other dim
/// of an input; every node that reads a value carrying that axis keeps it at
/// axis 0 and computes along other axes only (elementwise and broadcast ops
/// with constants of no batch extent, Conv/pooling/normalisation per sample
/// (not MaxPool's Indices: offsets into the whole batch),
/// Gemm/MatMul with a constant right operand, Softmax/Concat/Reduce*/Split/
/// Slice/Gather along other axes, Gather of a constant table's rows by batched
/// indices (embeddings), Flatten at axis 1, Transpose, Reshape, Squeeze,
/// Unsqueeze and Pad that keep axis 0); every graph output carries it. Any
/// other op reading such a value (Shape, control flow, non-default domains,
/// ...) makes the model not separable: the analysis is conservative. Throws
/// nothing: a constant it cannot decode also gives "" (with the reason).
std::string SeparableBatchSymbol(const Graph& graph, std::string* why = nullptr);

/// The largest sum of the bytes of one node's non-constant inputs and outputs
/// in `graph` (shapes as loaded; unknown sizes count 0): the working set of
/// its largest step, in bytes.
std::int64_t LargestStepBytes(const Graph& graph);

/// Samples per pass for a batch of `batch` samples whose largest step takes
/// `step_bytes_per_sample` bytes per sample: the largest divisor c of `batch`
/// with c <= max(budget_bytes / step_bytes_per_sample, threads), at least 1;
/// `limit` > 0 caps it (SessionOptions::max_samples_per_pass). The floor of
/// `threads` samples (the OpenMP team of one call) is measured, not derived:
/// at 2 threads on Zen 4, batch 8 in passes of 2 took 4.4 ms per image on
/// mobilenet_v2 and 6.9 on efficientnet_b0 against 4.7-5.9 and 7.4-9.4 in
/// passes of 1, whose late 7x7 steps are too small to split across the team.
std::int64_t SamplesPerPass(std::int64_t batch, std::int64_t step_bytes_per_sample, std::int64_t budget_bytes,
                            std::int64_t limit = 0, std::int64_t threads = 1);

/// How a batch runs: passes of samples_per_pass samples (0: the whole batch in
/// one pass), concurrent_passes of them at once, each then on one thread.
struct PassPlan {
  std::int64_t samples_per_pass = 0;
  int concurrent_passes = 1;
};

/// The passes of a batch of `batch` samples whose largest step takes
/// `step_bytes_per_sample` bytes per sample, for calls on a team of `team`
/// threads: one pass when the whole batch fits `budget_bytes` (and `limit`,
/// SessionOptions::max_samples_per_pass); else, with team > 1 and a batch
/// the team divides, `team` passes at once, each on one thread with 1/team of
/// the budget (SamplesPerPass of batch / team); else passes one after another
/// of up to max(what the budget fits, team) samples (SamplesPerPass). At 2
/// threads on Zen 4 (scripts/bench.sh --session --threads 2 --batches "8 32",
/// 3 rounds), passes at once took batch 8 from 5.5 ms per image to 3.5 on
/// mobilenet_v2 (ORT 4.2), from 6.1 to 5.1 on efficientnet_b0 (ORT 6.4) and
/// from 36.4 to 34.4 on resnet50 (ORT 39.9): a step of one sample is too small
/// to split across the team without waiting.
PassPlan PlanPasses(std::int64_t batch, std::int64_t step_bytes_per_sample, std::int64_t budget_bytes,
                    std::int64_t limit, int team);

/// The cache budget of one pass, in bytes: half of the L3 cache this process
/// runs on (sysfs cpu0/cache, the level-3 entry; shared with the other
/// cores), at least 4 MiB; 16 MiB when the size is not known.
std::int64_t PassBudgetBytes();

}  // namespace onnxfuse::session
