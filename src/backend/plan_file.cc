// Plan files: header + checksum, the Plan message, and the translation between
// oneDNN memory descriptors and their stored form (include/onnxfuse/plan_file.h).
#include "onnxfuse/plan_file.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <spdlog/spdlog.h>

#include "dnnl_util.h"
#include "onnxfuse_plan.pb.h"
#include "onnxfuse/atomic_file.h"
#include "onnxfuse/error.h"
#include "onnxfuse/loader.h"
#include "packed_constants.h"

namespace onnxfuse {

namespace {

constexpr char kMagic[8] = {'O', 'N', 'N', 'X', 'F', 'P', 'L', 'N'};
// Constants are f32 of at most 2^31 elements per dim; larger values in a file are damage.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 31;

[[noreturn]] void Invalid(const std::string& source, const std::string& why) {
  throw Error(ErrorKind::kInvalidModel, source + ": " + why);
}

void PutU32(unsigned char* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void PutU64(unsigned char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
std::uint64_t GetLe(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint32_t Crc32(const void* data, std::size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  while (size > 0) {  // zlib takes uInt lengths
    auto chunk = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    crc = crc32(crc, p, chunk);
    p += chunk, size -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

// --- memory descriptors --------------------------------------------------------

void StoreDesc(const dnnl::memory::desc& md, planfile::MemoryDesc& out) {
  const dnnl_memory_desc_t& d = md.data;
  Check(d.format_kind == dnnl_blocked && d.offset0 == 0 && d.extra.flags == 0,
        "a prepacked constant has a layout the plan file cannot store");
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
}

bool MulFits(std::int64_t a, std::int64_t b, std::int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
bool AddFits(std::int64_t a, std::int64_t b, std::int64_t& out) { return !__builtin_add_overflow(a, b, &out); }

// A stored descriptor, validated so that every element it addresses lies inside
// the bytes that come with it: oneDNN trusts a descriptor's strides.
dnnl::memory::desc LoadDesc(const planfile::MemoryDesc& in, std::size_t data_bytes, const std::string& what) {
  const int ndims = in.dims_size();
  if (ndims < 1 || ndims > DNNL_MAX_NDIMS || in.padded_dims_size() != ndims || in.strides_size() != ndims ||
      in.inner_blks_size() != in.inner_idxs_size() || in.inner_blks_size() > DNNL_MAX_NDIMS)
    throw std::invalid_argument(what + ": malformed memory descriptor");
  if (in.data_type() != dnnl_f32) throw std::invalid_argument(what + ": data type is not f32");
  dnnl_memory_desc_t d;
  std::memset(&d, 0, sizeof d);
  d.ndims = ndims;
  d.data_type = dnnl_f32;
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
  dnnl::memory::desc md(d);
  std::int64_t elements = static_cast<std::int64_t>(md.get_size()) / 4;
  if (md.get_size() != data_bytes || last >= elements)
    throw std::invalid_argument(what + ": " + std::to_string(data_bytes) + " bytes of data for a descriptor of " +
                                std::to_string(md.get_size()));
  return md;
}

// --- writing -----------------------------------------------------------------

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
    crc_ = crc32(crc_, static_cast<const Bytef*>(buffer), static_cast<uInt>(size));
    return true;
  }
  int error() const { return error_; }
  std::uint32_t crc() const { return static_cast<std::uint32_t>(crc_); }

 private:
  int fd_, error_ = 0;
  uLong crc_ = crc32(0L, Z_NULL, 0);
};

// The Plan payload as `small` (every field but the model and the constants'
// data) followed by field 3 (model) and one field 8 (constant) per constant,
// written with protobuf's wire format (tag, length, bytes) straight from the
// ModelProto and the constants' memories.
class PayloadWriter {
 public:
  PayloadWriter(const planfile::Plan& small, const onnx::ModelProto& model, const std::vector<StreamedConstant>& constants)
      : small_(small), model_(model), constants_(constants) {
    using google::protobuf::io::CodedOutputStream;
    size_ = small_.ByteSizeLong();
    model_bytes_ = model_.ByteSizeLong();
    size_ += 1 + CodedOutputStream::VarintSize64(model_bytes_) + model_bytes_;
    for (const auto& c : constants_) {
      std::uint64_t body = ConstantBody(c);
      size_ += 1 + CodedOutputStream::VarintSize64(body) + body;
    }
  }
  std::uint64_t size() const { return size_; }

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
        coded.WriteTag(Tag(planfile::Plan::kConstantsFieldNumber));
        coded.WriteVarint64(ConstantBody(c));
        c.head.SerializeWithCachedSizes(&coded);
        coded.WriteTag(Tag(planfile::PackedConstant::kDataFieldNumber));
        coded.WriteVarint64(c.memory.get_desc().get_size());
        coded.WriteRaw(c.memory.get_data_handle(), static_cast<int>(c.memory.get_desc().get_size()));
      }
      coded.Trim();
      if (coded.HadError() || !adaptor.Flush()) return sink.error() ? sink.error() : EIO;
    }
    std::memcpy(header, kMagic, sizeof kMagic);
    PutU32(header + 8, kPlanFormatVersion);
    PutU32(header + 12, sink.crc());
    PutU64(header + 16, size_);
    return pwrite(fd, header, sizeof header, 0) == static_cast<ssize_t>(sizeof header) ? 0 : errno;
  }

 private:
  static std::uint32_t Tag(int field) { return static_cast<std::uint32_t>(field << 3) | 2; }  // length-delimited
  static std::uint64_t ConstantBody(const StreamedConstant& c) {
    std::uint64_t data = c.memory.get_desc().get_size();
    return c.head.ByteSizeLong() + 1 + google::protobuf::io::CodedOutputStream::VarintSize64(data) + data;
  }

  const planfile::Plan& small_;
  const onnx::ModelProto& model_;
  const std::vector<StreamedConstant>& constants_;
  std::uint64_t size_ = 0, model_bytes_ = 0;
};

// --- reading -----------------------------------------------------------------

struct Header {
  std::uint32_t crc = 0;
  std::uint64_t length = 0;  // payload bytes
};

// Checks the first bytes of a plan file (`have` of them, up to the header's
// size) against a file of `file_size` bytes.
Header CheckHeader(const unsigned char* data, std::size_t have, std::uint64_t file_size, const std::string& source) {
  if (have < sizeof kMagic || std::memcmp(data, kMagic, sizeof kMagic) != 0)
    Invalid(source, "not an onnx-fuse plan file (no \"ONNXFPLN\" magic; write one with onnx-fuse MODEL.onnx -o X.plan)");
  if (have < kPlanHeaderBytes)
    Invalid(source, "truncated plan file (" + std::to_string(file_size) + " bytes, shorter than its header)");
  auto version = static_cast<std::uint32_t>(GetLe(data + 8, 4));
  if (version != kPlanFormatVersion)
    throw Error(ErrorKind::kUnsupported, source + ": plan format version " + std::to_string(version) +
                                             "; this onnx-fuse reads version " + std::to_string(kPlanFormatVersion) +
                                             " (rebuild the plan from its model)");
  Header h{static_cast<std::uint32_t>(GetLe(data + 12, 4)), GetLe(data + 16, 8)};
  std::uint64_t present = file_size - kPlanHeaderBytes;
  if (h.length != present)
    Invalid(source, (h.length > present ? "truncated plan file: payload of " : "plan file longer than its payload of ") +
                        std::to_string(h.length) + " bytes, " + std::to_string(present) + " present");
  if (h.length > static_cast<std::uint64_t>(INT_MAX)) Invalid(source, "plan payload over 2 GB");
  return h;
}

planfile::Plan ParseChecked(google::protobuf::io::ZeroCopyInputStream& in, const Header& h, const std::string& source) {
  planfile::Plan plan;
  if (!plan.ParseFromBoundedZeroCopyStream(&in, static_cast<int>(h.length)))
    Invalid(source, "the plan payload does not parse");
  return plan;
}

const char* const kCorrupted = "corrupted plan file: the payload's CRC-32 differs from the header's";

FusionPlan GroupsOf(const Graph& graph, const planfile::Plan& stored, const std::string& source) {
  const auto n = static_cast<std::int64_t>(graph.num_nodes());
  std::vector<int> label(graph.num_nodes(), -1);
  std::vector<std::string> rules;
  for (const auto& group : stored.groups()) {
    for (std::int64_t node : group.nodes()) {
      if (node < 0 || node >= n || label[static_cast<std::size_t>(node)] != -1)
        Invalid(source, "plan groups name node " + std::to_string(node) + " out of range or twice");
      label[static_cast<std::size_t>(node)] = static_cast<int>(rules.size());
    }
    rules.push_back(group.rule());
  }
  if (stored.groups_size() == 0) return FusionPlan{};
  for (std::size_t id = 0; id < label.size(); ++id)
    if (label[id] == -1) Invalid(source, "plan groups leave out node " + std::to_string(id));
  FusionPlan fusion = MakeFusionPlan(graph, ClassifyAll(graph), label, rules, stored.strategy());
  try {
    ValidateFusionPlan(graph, fusion);
  } catch (const Error& e) {
    Invalid(source, std::string("plan groups are not a valid fusion: ") + e.what());
  }
  return fusion;
}

// The stored constants as oneDNN memories; each one's bytes are freed from `stored` once copied.
std::shared_ptr<backend::PackedConstants> ConstantsOf(planfile::Plan& stored, const std::string& source) {
  auto packed = std::make_shared<backend::PackedConstants>();
  packed->replay = true;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  for (auto& c : *stored.mutable_constants()) {
    dnnl::memory::desc md;
    try {
      md = LoadDesc(c.desc(), c.data().size(), "constant '" + c.key() + "'");
    } catch (const std::invalid_argument& e) {
      Invalid(source, e.what());
    } catch (const dnnl::error& e) {
      Invalid(source, "constant '" + c.key() + "': " + e.what());
    }
    dnnl::memory m(md, engine);
    std::memcpy(m.get_data_handle(), c.data().data(), c.data().size());
    std::string().swap(*c.mutable_data());
    if (!packed->by_key.emplace(c.key(), m).second) Invalid(source, "constant '" + c.key() + "' is stored twice");
  }
  return packed;
}

bool SameSchedule(const std::vector<ScheduleStep>& now, const planfile::Plan& stored) {
  if (static_cast<int>(now.size()) != stored.schedule_size()) return false;
  for (std::size_t i = 0; i < now.size(); ++i) {
    const auto& s = stored.schedule(static_cast<int>(i));
    if (now[i].kind != s.kind() || now[i].label != s.label() || now[i].impl != s.impl() || now[i].layout != s.layout())
      return false;
  }
  return true;
}

}  // namespace

std::string CpuIsaName() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41: return "sse41";
    case isa::avx: return "avx";
    case isa::avx2: return "avx2";
    case isa::avx2_vnni: return "avx2_vnni";
    case isa::avx512_core: return "avx512_core";
    case isa::avx512_core_vnni: return "avx512_core_vnni";
    case isa::avx512_core_bf16: return "avx512_core_bf16";
    case isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other (dnnl::cpu_isa " + std::to_string(static_cast<int>(dnnl::get_effective_cpu_isa())) + ")";
  }
}

PlanFileInfo WritePlanFile(const std::string& path, const Graph& graph, const FusionPlan& fusion,
                           const CompileOptions& options, const std::string& source) {
  auto packed = std::make_shared<backend::PackedConstants>();
  CompileOptions record = options;
  record.packed = packed;
  ExecutablePlan executable = ExecutablePlan::Compile(graph, fusion, record);

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
    }
  out.set_cpu_isa(CpuIsaName());
  for (const ScheduleStep& s : executable.Schedule()) {
    auto* step = out.add_schedule();
    step->set_kind(s.kind), step->set_label(s.label), step->set_impl(s.impl), step->set_layout(s.layout);
  }
  out.set_arena_bytes(executable.stats().arena_bytes);
  std::vector<StreamedConstant> constants;
  for (const auto& [key, memory] : packed->by_key) {
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
  return info;
}

bool IsPlanFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof kMagic] = {};
  return in.read(magic, sizeof magic) && std::memcmp(magic, kMagic, sizeof kMagic) == 0;
}

namespace {

// The parsed payload into a compiled plan. The payload's large strings (the
// model, the constants) are freed as soon as they are copied out, so loading
// holds each byte about once.
LoadedPlan Load(planfile::Plan stored, const std::string& source_name, bool keep_weights, std::uint64_t file_bytes) {
  onnx::ModelProto model = ParseModelBytes(stored.model().data(), stored.model().size(), source_name + " (its model)");
  std::string().swap(*stored.mutable_model());
  auto graph = std::make_unique<Graph>(LoadModelProto(std::move(model), source_name + " (its model)"));
  FusionPlan fusion = GroupsOf(*graph, stored, source_name);
  CompileOptions options;
  options.fuse = stored.fused();
  options.packed = ConstantsOf(stored, source_name);
  ExecutablePlan executable = keep_weights ? ExecutablePlan::Compile(*graph, fusion, options)
                                           : ExecutablePlan::CompileReleasingWeights(*graph, fusion, options);

  PlanFileInfo info;
  info.producer = stored.producer();
  info.source = stored.source();
  info.strategy = stored.strategy();
  info.fused = stored.fused();
  info.built_isa = stored.cpu_isa();
  info.running_isa = CpuIsaName();
  info.constants = stored.constants_size();
  info.constants_reused = options.packed->reused;
  info.constants_relaid = options.packed->relaid;
  info.constants_repacked = options.packed->recomputed;
  info.steps = stored.schedule_size();
  info.same_schedule = SameSchedule(executable.Schedule(), stored);
  info.file_bytes = file_bytes;
  if (info.built_isa != info.running_isa)
    spdlog::info("{}: built for {}, running on {}: layouts re-derived ({} constants reordered, {} as stored, {} repacked)",
                 source_name, info.built_isa, info.running_isa, info.constants_relaid, info.constants_reused,
                 info.constants_repacked);
  else if (!info.same_schedule)
    spdlog::warn("{}: the schedule compiled here differs from the stored one on the same ISA ({})", source_name,
                 info.running_isa);
  return LoadedPlan{std::move(graph), std::move(fusion), std::move(executable), std::move(info)};
}

}  // namespace

LoadedPlan ParsePlanFile(const void* data, std::size_t size, const std::string& source_name, bool keep_weights) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  Header h = CheckHeader(bytes, std::min(size, kPlanHeaderBytes), size, source_name);
  if (Crc32(bytes + kPlanHeaderBytes, h.length) != h.crc) Invalid(source_name, kCorrupted);
  google::protobuf::io::ArrayInputStream in(bytes + kPlanHeaderBytes, static_cast<int>(h.length));
  return Load(ParseChecked(in, h, source_name), source_name, keep_weights, size);
}

LoadedPlan ReadPlanFile(const std::string& path, bool keep_weights) {
  // Streamed twice (checksum, then parse) rather than read into memory whole:
  // a plan is about twice its model's size.
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::kIo, path + ": cannot open: " + std::strerror(errno));
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorKind::kIo, path + ": " + ec.message());
  unsigned char header[kPlanHeaderBytes];
  in.read(reinterpret_cast<char*>(header), sizeof header);
  Header h = CheckHeader(header, static_cast<std::size_t>(in.gcount()), size, path);
  std::vector<char> chunk(std::size_t{1} << 22);
  uLong crc = crc32(0L, Z_NULL, 0);
  std::uint64_t read = 0;
  while (read < h.length && in.read(chunk.data(), static_cast<std::streamsize>(std::min<std::uint64_t>(chunk.size(), h.length - read)))) {
    crc = crc32(crc, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<uInt>(in.gcount()));
    read += static_cast<std::uint64_t>(in.gcount());
  }
  if (read != h.length) throw Error(ErrorKind::kIo, path + ": read failed");
  if (static_cast<std::uint32_t>(crc) != h.crc) Invalid(path, kCorrupted);
  std::vector<char>().swap(chunk);
  in.clear();
  in.seekg(static_cast<std::streamoff>(kPlanHeaderBytes));
  google::protobuf::io::IstreamInputStream stream(&in);
  return Load(ParseChecked(stream, h, path), path, keep_weights, size);
}

}  // namespace onnxfuse
