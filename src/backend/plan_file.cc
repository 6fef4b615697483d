// Plan files: header + checksum, the Plan message, and the translation between
// oneDNN memory descriptors and their stored form (include/onnxfuse/plan_file.h).
#include "onnxfuse/plan_file.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>

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

// --- reading -----------------------------------------------------------------

planfile::Plan ParsePayload(const unsigned char* data, std::size_t size, const std::string& source) {
  if (size < kPlanHeaderBytes || std::memcmp(data, kMagic, sizeof kMagic) != 0) {
    if (size >= sizeof kMagic && std::memcmp(data, kMagic, sizeof kMagic) == 0)
      Invalid(source, "truncated plan file (" + std::to_string(size) + " bytes, shorter than its header)");
    Invalid(source, "not an onnx-fuse plan file (no \"ONNXFPLN\" magic; write one with onnx-fuse MODEL.onnx -o X.plan)");
  }
  auto version = static_cast<std::uint32_t>(GetLe(data + 8, 4));
  if (version != kPlanFormatVersion)
    throw Error(ErrorKind::kUnsupported, source + ": plan format version " + std::to_string(version) +
                                             "; this onnx-fuse reads version " + std::to_string(kPlanFormatVersion) +
                                             " (rebuild the plan from its model)");
  auto crc = static_cast<std::uint32_t>(GetLe(data + 12, 4));
  std::uint64_t length = GetLe(data + 16, 8);
  std::uint64_t have = size - kPlanHeaderBytes;
  if (length != have)
    Invalid(source, (length > have ? "truncated plan file: payload of " : "plan file longer than its payload of ") +
                        std::to_string(length) + " bytes, " + std::to_string(have) + " present");
  const unsigned char* payload = data + kPlanHeaderBytes;
  if (Crc32(payload, have) != crc) Invalid(source, "corrupted plan file: the payload's CRC-32 differs from the header's");
  if (have > static_cast<std::uint64_t>(INT_MAX)) Invalid(source, "plan payload over 2 GB");
  planfile::Plan plan;
  if (!plan.ParseFromArray(payload, static_cast<int>(have))) Invalid(source, "the plan payload does not parse");
  return plan;
}

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

std::shared_ptr<backend::PackedConstants> ConstantsOf(const planfile::Plan& stored, const std::string& source) {
  auto packed = std::make_shared<backend::PackedConstants>();
  packed->replay = true;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  for (const auto& c : stored.constants()) {
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

  planfile::Plan out;
  out.set_producer(std::string("onnx-fuse ") + ONNXFUSE_VERSION);
  out.set_source(source);
  out.set_model(graph.model().SerializeAsString());
  out.set_fused(options.fuse);
  out.set_strategy(fusion.strategy);
  if (options.fuse)
    for (const FusedGroup& g : fusion.groups) {
      auto* group = out.add_groups();
      for (NodeId id : g.nodes) group->add_nodes(static_cast<std::int64_t>(id));
      group->set_rule(g.rule);
    }
  out.set_cpu_isa(CpuIsaName());
  for (const auto& [key, memory] : packed->by_key) {
    auto* c = out.add_constants();
    c->set_key(key);
    StoreDesc(memory.get_desc(), *c->mutable_desc());
    c->set_data(memory.get_data_handle(), memory.get_desc().get_size());
  }
  for (const ScheduleStep& s : executable.Schedule()) {
    auto* step = out.add_schedule();
    step->set_kind(s.kind), step->set_label(s.label), step->set_impl(s.impl), step->set_layout(s.layout);
  }
  out.set_arena_bytes(executable.stats().arena_bytes);
  if (out.ByteSizeLong() > static_cast<std::size_t>(INT_MAX))
    throw Error(ErrorKind::kUnsupported, path + ": the plan would exceed protobuf's 2 GB message limit");

  std::string payload = out.SerializeAsString();
  unsigned char header[kPlanHeaderBytes];
  std::memcpy(header, kMagic, sizeof kMagic);
  PutU32(header + 8, kPlanFormatVersion);
  PutU32(header + 12, Crc32(payload.data(), payload.size()));
  PutU64(header + 16, payload.size());
  WriteFileAtomically(path, [&](int fd) {
    int error = WriteAll(fd, header, sizeof header);
    return error ? error : WriteAll(fd, payload.data(), payload.size());
  });

  PlanFileInfo info;
  info.producer = out.producer();
  info.source = source;
  info.strategy = out.strategy();
  info.fused = options.fuse;
  info.built_isa = info.running_isa = out.cpu_isa();
  info.constants = out.constants_size();
  info.steps = out.schedule_size();
  info.file_bytes = sizeof header + payload.size();
  return info;
}

bool IsPlanFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof kMagic] = {};
  return in.read(magic, sizeof magic) && std::memcmp(magic, kMagic, sizeof kMagic) == 0;
}

LoadedPlan ParsePlanFile(const void* data, std::size_t size, const std::string& source_name, bool keep_weights) {
  planfile::Plan stored = ParsePayload(static_cast<const unsigned char*>(data), size, source_name);
  const std::string& model_bytes = stored.model();
  auto graph = std::make_unique<Graph>(
      LoadModelProto(ParseModelBytes(model_bytes.data(), model_bytes.size(), source_name + " (its model)"),
                     source_name + " (its model)"));
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
  info.file_bytes = size;
  if (info.built_isa != info.running_isa)
    spdlog::info("{}: built for {}, running on {}: layouts re-derived ({} constants reordered, {} as stored, {} repacked)",
                 source_name, info.built_isa, info.running_isa, info.constants_relaid, info.constants_reused,
                 info.constants_repacked);
  else if (!info.same_schedule)
    spdlog::warn("{}: the schedule compiled here differs from the stored one on the same ISA ({})", source_name,
                 info.running_isa);
  return LoadedPlan{std::move(graph), std::move(fusion), std::move(executable), std::move(info)};
}

LoadedPlan ReadPlanFile(const std::string& path, bool keep_weights) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::kIo, path + ": cannot open: " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(ErrorKind::kIo, path + ": read failed");
  return ParsePlanFile(bytes.data(), bytes.size(), path, keep_weights);
}

}  // namespace onnxfuse
