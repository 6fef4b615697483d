// Executable plan files: `onnx-fuse model.onnx -o model.plan` writes one,
// `onnx-fuse run model.plan [--input-shape NAME=DIMS]...` loads and runs it.
//
// File layout (integers little-endian):
//   bytes  0-7   magic "ONNXFPLN"
//   bytes  8-11  uint32 format version (kPlanFormatVersion; kPlanFormatOldest.. read)
//   bytes 12-15  uint32 CRC-32 of the payload (ISO-HDLC polynomial, zlib's crc32)
//   bytes 16-23  uint64 payload length in bytes
//   bytes 24-    payload: one onnxfuse.planfile.Plan message (proto/onnxfuse_plan.proto)
// The payload holds the model (with its symbolic input dims, weights
// included), the fusion groups, the input shapes the schedule was compiled at
// (`built_shapes`: a symbolic dim as 1), the compiled schedule with each
// step's oneDNN implementation and destination layout, and every prepacked
// constant operand (weights with BatchNormalization folded in, biases) in the
// layout its primitive chose on the building CPU. Size: about the model's size
// plus its prepacked weights, once whatever the shapes it runs at.
//
// Each constant's data starts at a file offset that is a multiple of 64 (the
// writer pads before it: PackedConstant.alignment). ReadPlanFile maps the file
// and parses the payload where it lies: the model is parsed from the mapping
// and each aligned constant becomes a oneDNN memory over it, not a copy
// (PlanFileInfo::constants_mapped). The mapping lives as long as a plan
// compiled from it, so a mapped plan file must not be truncated in place
// (onnx-fuse replaces files by rename, which is safe). A convolution replayed
// from stored weights never decodes the model's copy of them.
//
// Loading recompiles the schedule on this CPU from the model and the groups:
// oneDNN picks each primitive's layouts again (the choice depends on the
// instruction set, e.g. nChw16c with AVX-512, nChw8c with AVX2). A stored
// constant whose layout is still the chosen one is used as stored; otherwise it
// is reordered from the stored layout into the new one. So a plan built on an
// AVX-512 machine runs on an AVX2 one, re-deriving its layouts.
//
// Shapes (format version 3): loading at the built shapes replays the stored
// schedule (the model loaded with them pinned, as `--input-shape` pins them).
// Loading at other shapes (PlanReadOptions::input_shapes) loads the model with
// those pinned and lowers the same groups again for them: the size-dependent
// lowering decisions (layouts, chain splits, implementations, shape
// subgraphs folded) are made for that shape, so a symbolic batch run at 1
// gets the fixed export's kernels. The stored weights are reused (they do not
// depend on the shape). A dim the model fixes cannot change. Version 2 files
// load as before, at their one shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/runtime/executor.h"
#include "fuse/fusion_plan.h"
#include "ir/graph.h"
#include "load/shape_model.h"
#include "pipeline/pipeline.h"

namespace onnxfuse {

/// The plan-file format this build writes. 2: Winograd weights layouts;
/// 3: symbolic input dims kept, the built shapes stored (any input shape);
/// 4: the pattern regions of postdom and greedy groups stored (FusedGroup::regions);
/// 5: a model whose shapes follow values stored to run in stages (PlanFileInfo::staged);
/// 6: int8 convolutions' s8 weights stored with oneDNN's compensation data.
inline constexpr std::uint32_t kPlanFormatVersion = 6;
/// The oldest format this build reads (versions kPlanFormatOldest..kPlanFormatVersion).
inline constexpr std::uint32_t kPlanFormatOldest = 2;
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
  /// loading (ReadPlanFile): constants used where they lie in the mapped file,
  /// not copied; those stored at 64-byte file offsets (written since 2026-11-27)
  int constants_mapped = 0;
  int steps = 0;             ///< steps of the stored schedule
  bool same_schedule = true; ///< loading: the recompiled schedule has the stored steps, impls and layouts
  std::uint64_t file_bytes = 0;
  std::uint32_t format_version = kPlanFormatVersion;
  /// The graph inputs' shapes the stored schedule was compiled at, by name
  /// (format 3; empty for version 2 files).
  std::map<std::string, std::vector<std::int64_t>> built_shapes;
  /// The shapes compiled now: every graph input of known rank, by name
  /// (written: the built shapes; read: the built or the requested ones).
  std::map<std::string, std::vector<std::int64_t>> input_shapes;
  /// Wall-clock ms: loading the stored model at those shapes and applying the groups.
  double load_ms = 0;
  /// Wall-clock ms of compiling the schedule at those shapes (PlanStats::compile_ms).
  double compile_ms = 0;
  /// A model whose shapes follow values (ShapesFollowValues): the file holds
  /// its prepared model and fuser, no schedule; it runs in stages
  /// (session/staged_model.h), compiled at the shapes each run finds.
  bool staged = false;
};

/// oneDNN's effective instruction set on this machine: "avx512_core", "avx2", ...
std::string CpuIsaName();

/// Compiles `graph` with `fusion` (or unfused when options.fuse is false),
/// recording its prepacked constants, and writes the plan file to `path`
/// atomically (atomic_file.h: a failure leaves no partial file and the
/// previous one untouched). `source` names the model in the file.
/// Shapes: the file keeps `graph`'s model as it is, symbolic input dims
/// included; when an input has symbolic or unknown dims, the schedule is
/// compiled at the built shapes (each such dim 1) on `graph`'s model loaded
/// again with them pinned (LoadOptions::input_shapes), with the same groups:
/// the schedule `run --input-shape` would give that shape.
/// A model whose shapes follow values (pipeline/shapes_follow_values.h) has
/// no one schedule: its file holds the prepared model, the groups and the
/// fuser only (PlanFileInfo::staged), and nothing is compiled or verified.
/// With `verify` (and options.fuse), the compiled plan first runs once on
/// deterministic inputs (RandomInputs) next to the unfused plan of `graph`
/// (onnxfuse/verify.h): about one unfused compilation and inference more.
/// Throws what ExecutablePlan::Compile throws (kUnsupported naming the node),
/// what the loader throws for the pinned model, Error(kVerification) naming
/// the differing output and the first differing group when the two disagree
/// beyond kVerifyRtol (nothing is written), Error(kUnsupported) for a plan
/// over protobuf's 2 GB message limit, Error(kIo).
PlanFileInfo WritePlanFile(const std::string& path, const Graph& graph, const FusionPlan& fusion,
                           const CompileOptions& options, const std::string& source, bool verify = true);

/// The fuse job's plan-file step (pipeline/pipeline.h, PlanFileWriter):
/// WritePlanFile(job.output_path, graph, fusion, CompileOptions{},
/// job.input_path, job.verify), logged, and returned as the report's
/// "plan_file" section {path, format_version, steps, constants, cpu_isa, bytes,
/// input_shapes: {name: dims} compiled at, compile_ms: that compile's ms}.
/// Throws what WritePlanFile throws.
nlohmann::json WritePlanFileForJob(const FuseJob& job, const Graph& graph, const FusionPlan& fusion);

/// How to read a plan file.
struct PlanReadOptions {
  /// Keep the compiled graph's initializer data (to compile it again, e.g.
  /// unfused); otherwise released once compiled.
  bool keep_weights = false;
  /// Graph input name -> full shape to compile at instead of the built one
  /// (`run model.plan --input-shape`). Inputs not named keep their built
  /// shapes, but for dims whose symbol a named input pins. Format 3 only: a
  /// version 2 plan accepts only its own shapes. Empty: the built shapes.
  std::map<std::string, std::vector<std::int64_t>> input_shapes;
  /// Also keep the model as stored in LoadedPlan::model, to compile at more
  /// shapes later (PlanModelAt); format 3 only. Holds one more copy of the
  /// model's weights.
  bool keep_model = false;
};

/// A loaded plan: its model, groups and compiled executable. Unless loaded
/// with keep_weights, the graph's initializer data is released once compiled
/// (Graph::ReleaseInitializer): enough for its inputs and outputs, not to compile again.
struct LoadedPlan {
  /// The model at the compiled shapes (info.input_shapes). A staged plan
  /// (info.staged) has none, nor groups nor executable: only `model`.
  std::unique_ptr<Graph> graph;
  FusionPlan fusion;
  std::optional<ExecutablePlan> executable;
  PlanFileInfo info;
  /// keep_model (format 3): the stored model loaded with only
  /// PlanReadOptions::input_shapes pinned, so its other symbolic dims stay
  /// symbolic; the same nodes, in the same order, as `graph`. nullptr for a
  /// version 2 plan, which has one shape. A staged plan always has it, the
  /// prepared model to run in stages, whatever keep_model says.
  std::shared_ptr<const Graph> model;
  /// The prepacked constants as loaded (the file's, and those packed again
  /// here), by Builder key, for later compiles to share (CompileOptions::packed).
  std::shared_ptr<backend::PackedConstants> packed;
};

/// True when the file at `path` starts with the plan magic.
bool IsPlanFile(const std::string& path);

/// Reads, verifies and compiles a plan file. Nothing in it is used before the
/// header and checksum are verified. Throws Error with a message naming the file:
/// kInvalidModel when it is not a plan file, is truncated or longer than its
/// header says, fails its checksum ("corrupted"), or holds an invalid model,
/// groups, built shapes or constants; kUnsupported for a format version
/// outside kPlanFormatOldest..kPlanFormatVersion (rebuild the plan with this
/// onnx-fuse); kIo when unreadable; kUsage naming the input (and dim) for
/// input_shapes naming no graph input, of another rank, or changing a dim the
/// model fixes (for a version 2 plan: any dim); the compiler's errors.
LoadedPlan ReadPlanFile(const std::string& path, const PlanReadOptions& options);
LoadedPlan ReadPlanFile(const std::string& path, bool keep_weights = false);

/// ReadPlanFile for bytes in memory; `source_name` stands for the file in messages.
LoadedPlan ParsePlanFile(const void* data, std::size_t size, const std::string& source_name,
                         const PlanReadOptions& options);
LoadedPlan ParsePlanFile(const void* data, std::size_t size, const std::string& source_name, bool keep_weights = false);

/// A plan's model and groups at other input shapes, ready to compile.
struct PlanGraph {
  std::unique_ptr<Graph> graph;
  FusionPlan fusion;
};

/// `model`'s prepared graph (LoadedPlan::model, or a session's model prepared
/// once) at `input_shapes` (full shapes by input name), its shapes inferred
/// again (load/shape_model.h: no second load; the graph borrows the prepared
/// graph's weights), with `groups` (LoadedPlan::fusion, or the groups of any
/// load of the same model) applied to it node for node. Throws
/// Error(kUsage) naming the input and dim for a shape that changes a fixed dim
/// or the rank, kInvalidModel when shape inference fails at those shapes or
/// the groups do not fit the model.
PlanGraph PlanModelAt(const ShapeModel& model, const FusionPlan& groups,
                      const std::map<std::string, std::vector<std::int64_t>>& input_shapes);

}  // namespace onnxfuse
