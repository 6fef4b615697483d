// Executable plan files: `onnx-fuse model.onnx -o model.plan` writes one,
// `onnx-fuse run model.plan` loads and runs it.
//
// File layout (integers little-endian):
//   bytes  0-7   magic "ONNXFPLN"
//   bytes  8-11  uint32 format version (kPlanFormatVersion)
//   bytes 12-15  uint32 CRC-32 of the payload (ISO-HDLC polynomial, zlib's crc32)
//   bytes 16-23  uint64 payload length in bytes
//   bytes 24-    payload: one onnxfuse.planfile.Plan message (proto/onnxfuse_plan.proto)
// The payload holds the model (input shapes pinned, weights included), the
// fusion groups, the compiled schedule with each step's oneDNN implementation
// and destination layout, and every prepacked constant operand (weights with
// BatchNormalization folded in, biases) in the layout its primitive chose on
// the building CPU. Size: about the model's size plus its prepacked weights.
//
// Loading recompiles the schedule on this CPU from the model and the groups:
// oneDNN picks each primitive's layouts again (the choice depends on the
// instruction set, e.g. nChw16c with AVX-512, nChw8c with AVX2). A stored
// constant whose layout is still the chosen one is used as stored; otherwise it
// is reordered from the stored layout into the new one. So a plan built on an
// AVX-512 machine runs on an AVX2 one, re-deriving its layouts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "onnxfuse/executor.h"
#include "onnxfuse/fusion_plan.h"
#include "onnxfuse/graph.h"
#include "onnxfuse/pipeline.h"

namespace onnxfuse {

/// The plan-file format this build writes and the only one it reads.
inline constexpr std::uint32_t kPlanFormatVersion = 2;  ///< 2: Winograd weights layouts
/// Bytes before the payload.
inline constexpr std::size_t kPlanHeaderBytes = 24;

/// What a plan file says about itself, and how loading it went.
struct PlanFileInfo {
  std::string producer;      ///< "onnx-fuse 0.1.0"
  std::string source;        ///< the model it was built from
  std::string strategy;      ///< fuser of its groups
  bool fused = true;         ///< false: an unfused (baseline) plan
  std::string built_isa;     ///< oneDNN's effective ISA where it was built, e.g. "avx512_core"
  std::string running_isa;   ///< ... and here
  int constants = 0;         ///< prepacked constants in the file
  int constants_reused = 0;  ///< loading: used in their stored layout
  int constants_relaid = 0;  ///< loading: reordered into the layout chosen here
  int constants_repacked = 0;  ///< loading: packed again from the model (node lowered differently here)
  int steps = 0;             ///< steps of the stored schedule
  bool same_schedule = true; ///< loading: the recompiled schedule has the stored steps, impls and layouts
  std::uint64_t file_bytes = 0;
};

/// oneDNN's effective instruction set on this machine: "avx512_core", "avx2", ...
std::string CpuIsaName();

/// Compiles `graph` with `fusion` (or unfused when options.fuse is false),
/// recording its prepacked constants, and writes the plan file to `path`
/// atomically (atomic_file.h: a failure leaves no partial file and the
/// previous one untouched). `source` names the model in the file.
/// With `verify` (and options.fuse), the compiled plan first runs once on
/// deterministic inputs (RandomInputs) next to the unfused plan of `graph`
/// (onnxfuse/verify.h): about one unfused compilation and inference more.
/// Throws what ExecutablePlan::Compile throws (kUnsupported naming the node),
/// Error(kVerification) naming the differing output and the first differing
/// group when the two disagree beyond kVerifyRtol (nothing is written),
/// Error(kUnsupported) for a plan over protobuf's 2 GB message limit, Error(kIo).
PlanFileInfo WritePlanFile(const std::string& path, const Graph& graph, const FusionPlan& fusion,
                           const CompileOptions& options, const std::string& source, bool verify = true);

/// The fuse job's plan-file step (onnxfuse/pipeline.h, PlanFileWriter):
/// WritePlanFile(job.output_path, graph, fusion, CompileOptions{},
/// job.input_path, job.verify), logged, and returned as the report's
/// "plan_file" section {path, format_version, steps, constants, cpu_isa, bytes}.
/// Throws what WritePlanFile throws.
nlohmann::json WritePlanFileForJob(const FuseJob& job, const Graph& graph, const FusionPlan& fusion);

/// A loaded plan: its model, groups and compiled executable. Unless loaded
/// with keep_weights, the graph's initializer data is released once compiled
/// (Graph::ReleaseInitializer): enough for its inputs and outputs, not to compile again.
struct LoadedPlan {
  std::unique_ptr<Graph> graph;
  FusionPlan fusion;
  ExecutablePlan executable;
  PlanFileInfo info;
};

/// True when the file at `path` starts with the plan magic.
bool IsPlanFile(const std::string& path);

/// Reads, verifies and compiles a plan file. Nothing in it is used before the
/// header and checksum are verified. Throws Error with a message naming the file:
/// kInvalidModel when it is not a plan file, is truncated or longer than its
/// header says, fails its checksum ("corrupted"), or holds an invalid model,
/// groups or constants; kUnsupported for another format version (rebuild the
/// plan with this onnx-fuse); kIo when unreadable.
LoadedPlan ReadPlanFile(const std::string& path, bool keep_weights = false);

/// ReadPlanFile for bytes in memory; `source_name` stands for the file in messages.
LoadedPlan ParsePlanFile(const void* data, std::size_t size, const std::string& source_name, bool keep_weights = false);

}  // namespace onnxfuse
