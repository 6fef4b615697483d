// Writing plan files: compile with the constants recorded, then stream the
// payload into the file (src/backend/plan/plan_file.h).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include <google/protobuf/io/coded_stream.h>
#include <spdlog/spdlog.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "common/atomic_file.h"
#include "onnxfuse/error.h"
#include "load/loader.h"
#include "backend/plan/plan_file.h"
#include "ir/tensor_io.h"
#include "backend/runtime/verify.h"
#include "backend/lower/core/packed_constants.h"
#include "backend/plan/plan_format.h"
#include "backend/plan/plan_shapes.h"
#include "pipeline/prepare_model.h"
#include "pipeline/shapes_follow_values.h"

namespace onnxfuse {

using namespace planformat;

namespace {

// A packed constant to stream: its key and descriptor as a message, its bytes in place.
struct StreamedConstant {
  planfile::PackedConstant head;  // key, desc; data left empty
  dnnl::memory memory;
};

// Bytes to a file descriptor, keeping their CRC-32.
class CrcFileSink : public google::protobuf::io::CopyingOutputStream {
 public:
  explicit CrcFileSink(int fd) : fd_(fd) {}
  bool Write(const void* buffer, int size) override {
    error_ = WriteAll(fd_, buffer, static_cast<std::size_t>(size));
    if (error_ != 0) return false;
    crc_ = Crc32(buffer, static_cast<std::size_t>(size), crc_);
    return true;
  }
  int error() const { return error_; }
  std::uint32_t crc() const { return crc_; }

 private:
  int fd_, error_ = 0;
  std::uint32_t crc_ = 0;
};

// The Plan payload as `small` (every field but the model and the constants'
// data) followed by field 3 (model) and one field 8 (constant) per constant,
// written with protobuf's wire format (tag, length, bytes) straight from the
// ModelProto and the constants' memories. Each constant's data is preceded by
// its `alignment` field, sized so that the data starts at a file offset that
// is a multiple of kConstantAlignment.
class PayloadWriter {
 public:
  PayloadWriter(const planfile::Plan& small, const onnx::ModelProto& model, const std::vector<StreamedConstant>& constants)
      : small_(small), model_(model), constants_(constants) {
    using google::protobuf::io::CodedOutputStream;
    bound_ = small_.ByteSizeLong();
    model_bytes_ = model_.ByteSizeLong();
    bound_ += 1 + CodedOutputStream::VarintSize64(model_bytes_) + model_bytes_;
    for (const auto& c : constants_) {
      std::uint64_t body = ConstantBody(c, kMaxAlignmentBytes);
      bound_ += 1 + CodedOutputStream::VarintSize64(body) + body;
    }
  }
  /// The payload's size at most (before WriteFile), and exactly (after it).
  std::uint64_t size() const { return written_ ? written_ : bound_; }

  // The header (with the payload's CRC, known only at the end, written last) and the payload. Returns 0 or errno.
  int WriteFile(int fd) {
    using google::protobuf::io::CodedOutputStream;
    unsigned char header[kPlanHeaderBytes] = {};
    if (int error = WriteAll(fd, header, sizeof header)) return error;
    CrcFileSink sink(fd);
    {
      google::protobuf::io::CopyingOutputStreamAdaptor adaptor(&sink);
      CodedOutputStream coded(&adaptor);
      small_.SerializeWithCachedSizes(&coded);
      coded.WriteTag(Tag(planfile::Plan::kModelFieldNumber));
      coded.WriteVarint64(model_bytes_);
      model_.SerializeWithCachedSizes(&coded);
      for (const auto& c : constants_) {
        const std::uint64_t padding = AlignmentBytes(kPlanHeaderBytes + static_cast<std::uint64_t>(coded.ByteCount()), c);
        coded.WriteTag(Tag(planfile::Plan::kConstantsFieldNumber));
        coded.WriteVarint64(ConstantBody(c, padding));
        c.head.SerializeWithCachedSizes(&coded);
        if (padding > 0) {
          static const unsigned char kZeros[kMaxAlignmentBytes] = {};
          coded.WriteTag(Tag(planfile::PackedConstant::kAlignmentFieldNumber));
          coded.WriteVarint64(padding - 2);
          coded.WriteRaw(kZeros, static_cast<int>(padding - 2));
        }
        coded.WriteTag(Tag(planfile::PackedConstant::kDataFieldNumber));
        coded.WriteVarint64(c.memory.get_desc().get_size());
        coded.WriteRaw(c.memory.get_data_handle(), static_cast<int>(c.memory.get_desc().get_size()));
      }
      coded.Trim();
      if (coded.HadError() || !adaptor.Flush()) return sink.error() ? sink.error() : EIO;
      written_ = static_cast<std::uint64_t>(coded.ByteCount());
    }
    std::memcpy(header, kMagic, sizeof kMagic);
    PutU32(header + 8, kPlanFormatVersion);
    PutU32(header + 12, sink.crc());
    PutU64(header + 16, written_);
    return pwrite(fd, header, sizeof header, 0) == static_cast<ssize_t>(sizeof header) ? 0 : errno;
  }

 private:
  // The alignment field's bytes: its tag, a one-byte length, and up to
  // kConstantAlignment - 1 zeros (0, or 2 to 65 in all).
  static constexpr std::size_t kMaxAlignmentBytes = kConstantAlignment + 1;

  static std::uint32_t Tag(int field) { return static_cast<std::uint32_t>(field << 3) | 2; }  // length-delimited
  static std::uint64_t ConstantBody(const StreamedConstant& c, std::uint64_t padding) {
    std::uint64_t data = c.memory.get_desc().get_size();
    return c.head.ByteSizeLong() + padding + 1 + google::protobuf::io::CodedOutputStream::VarintSize64(data) + data;
  }
  // The alignment field's size for constant `c` written from file offset `at`:
  // what puts its data at a multiple of kConstantAlignment. The constant's
  // length prefix grows with the padding only across a varint boundary, so
  // this settles in a second round; a reader copies a constant left unaligned.
  static std::uint64_t AlignmentBytes(std::uint64_t at, const StreamedConstant& c) {
    using google::protobuf::io::CodedOutputStream;
    const std::uint64_t data = c.memory.get_desc().get_size();
    std::uint64_t padding = 0;
    for (int round = 0; round < 3; ++round) {
      const std::uint64_t before = 1 + CodedOutputStream::VarintSize64(ConstantBody(c, padding)) +
                                   c.head.ByteSizeLong() + 1 + CodedOutputStream::VarintSize64(data);
      const std::uint64_t need = (kConstantAlignment - (at + before) % kConstantAlignment) % kConstantAlignment;
      const std::uint64_t next = need == 0 ? 0 : need == 1 ? need + kConstantAlignment : need;  // a field is 2 bytes at least
      if (next == padding) break;
      padding = next;
    }
    return padding;
  }

  const planfile::Plan& small_;
  const onnx::ModelProto& model_;
  const std::vector<StreamedConstant>& constants_;
  std::uint64_t bound_ = 0, written_ = 0, model_bytes_ = 0;
};

}  // namespace

PlanFileInfo WritePlanFile(const std::string& path, const Graph& graph, const FusionPlan& fusion,
                           const CompileOptions& options, const std::string& source, bool verify) {
  // A model with open input dims is compiled at its built shapes (each open
  // dim 1) on its model loaded again with them pinned, and the same groups:
  // the schedule a reader replays by pinning the same shapes, and the one
  // `run --input-shape` gives that shape. The file keeps the open model.
  const planshapes::Shapes built = planshapes::BuiltShapes(graph);
  // A model whose shapes follow values has no one schedule: only its prepared
  // model and fuser are stored, and a reader runs it in stages.
  const bool staged = ShapesFollowValues(graph);
  std::unique_ptr<Graph> pinned;
  FusionPlan pinned_fusion;
  const Graph* target = &graph;
  const FusionPlan* groups = &fusion;
  if (!staged && planshapes::HasOpenDims(graph)) {
    pinned = std::make_unique<Graph>(LoadModelProto(graph.model(), graph.source_path(), LoadOptions{built}));
    if (options.fuse) pinned_fusion = planshapes::SameGroupsOn(*pinned, fusion);
    target = pinned.get();
    groups = &pinned_fusion;
  }
  auto packed = std::make_shared<backend::PackedConstants>();
  CompileOptions record = options;
  record.packed = packed;
  std::optional<ExecutablePlan> executable;
  if (!staged) executable.emplace(ExecutablePlan::Compile(*target, *groups, record));
  if (!staged && verify && options.fuse) {  // the plan as it will be stored, against the unfused one
    const std::vector<Tensor> inputs = RandomInputs(*target);
    const std::vector<Tensor> fused = executable->Run(inputs);
    const std::vector<Tensor> unfused = ExecutablePlan::Compile(*target, *groups, CompileOptions{false}).Run(inputs);
    const Verification v = VerifyOutputs(*target, *groups, inputs, fused, unfused);
    if (!v.ok)
      throw Error(ErrorKind::kVerification,
                  path + ": not written: the fused plan of " + source + " differs from the unfused one: " +
                      v.Summary() + ". This is a bug in onnx-fuse; another --strategy may avoid it");
  }

  // Everything but the two large fields (the model, the constants' data), which
  // are streamed into the file from where they are instead of copied into the
  // message: protobuf merges repeated and concatenated fields on parsing.
  planfile::Plan out;
  out.set_producer(std::string("onnx-fuse ") + ONNXFUSE_VERSION);
  out.set_source(source);
  out.set_fused(options.fuse);
  out.set_strategy(fusion.strategy);
  if (options.fuse)
    for (const FusedGroup& g : fusion.groups) {
      auto* group = out.add_groups();
      for (NodeId id : g.nodes) group->add_nodes(static_cast<std::int64_t>(id));
      group->set_rule(g.rule);
      group->set_pattern(g.pattern_name);
      for (const PatternRegion& r : g.regions) {
        auto* region = group->add_regions();
        region->set_pattern(r.pattern);
        for (NodeId id : r.nodes) region->add_nodes(static_cast<std::int64_t>(id));
      }
    }
  out.set_cpu_isa(CpuIsaName());
  out.set_staged(staged);
  if (executable) {
    for (const ScheduleStep& s : executable->Schedule()) {
      auto* step = out.add_schedule();
      step->set_kind(s.kind), step->set_label(s.label), step->set_impl(s.impl), step->set_layout(s.layout);
    }
    out.set_arena_bytes(executable->stats().arena_bytes);
  }
  for (ValueId v : graph.inputs())  // in model order
    if (auto it = built.find(graph.value(v).name); it != built.end()) {
      planfile::InputShape* shape = out.add_built_shapes();
      shape->set_name(it->first);
      for (std::int64_t d : it->second) shape->add_dims(d);
    }
  std::vector<StreamedConstant> constants;
  for (const auto& [key, memory] : packed->by_key) {
    if (!planformat::CanStoreDesc(memory.get_desc())) continue;  // packed again when the plan is loaded
    StreamedConstant c;
    c.head.set_key(key);
    StoreDesc(memory.get_desc(), *c.head.mutable_desc());
    c.memory = memory;
    constants.push_back(std::move(c));
  }
  PayloadWriter writer(out, graph.model(), constants);
  if (writer.size() > static_cast<std::uint64_t>(INT_MAX))
    throw Error(ErrorKind::kUnsupported, path + ": the plan would exceed protobuf's 2 GB message limit");

  WriteFileAtomically(path, [&](int fd) { return writer.WriteFile(fd); });

  PlanFileInfo info;
  info.producer = out.producer();
  info.source = source;
  info.strategy = out.strategy();
  info.fused = options.fuse;
  info.built_isa = info.running_isa = out.cpu_isa();
  info.constants = static_cast<int>(constants.size());
  info.steps = out.schedule_size();
  info.file_bytes = kPlanHeaderBytes + writer.size();
  info.built_shapes = info.input_shapes = built;
  info.compile_ms = executable ? executable->stats().compile_ms : 0;
  info.staged = staged;
  return info;
}

nlohmann::json WritePlanFileForJob(const FuseJob& job, const Graph& graph, const FusionPlan& fusion) {
  // The groups fused on the symbolic graph hold at every shape the plan runs
  // at (shapes equal by number or symbol are equal to the fusers).
  PlanFileInfo info = WritePlanFile(job.output_path, graph, fusion, CompileOptions{}, job.input_path, job.verify);
  if (info.staged)
    spdlog::info("{}: plan of a model whose shapes follow values, {:.1f} MB: it runs in stages compiled at the "
                 "shapes each run finds",
                 job.output_path, static_cast<double>(info.file_bytes) / 1e6);
  else
    spdlog::info("{}: executable plan of {} steps, {} prepacked constants, {:.1f} MB, for {}", job.output_path,
                 info.steps, info.constants, static_cast<double>(info.file_bytes) / 1e6, info.built_isa);
  return {{"path", job.output_path},         {"format_version", kPlanFormatVersion},
          {"steps", info.steps},                {"constants", info.constants},
          {"cpu_isa", info.built_isa},          {"bytes", info.file_bytes},
          {"input_shapes", info.input_shapes},  {"compile_ms", info.compile_ms},
          {"staged", info.staged}};
}

}  // namespace onnxfuse
