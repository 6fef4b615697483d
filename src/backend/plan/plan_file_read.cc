// Reading plan files: header and checksum first, then the payload parsed in
// place from the file mapped into memory (its constants used where they lie),
// its model loaded and its schedule recompiled (src/backend/plan/plan_file.h).
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>

#include <spdlog/spdlog.h>

#include "common/mapped_file.h"
#include "fuse/pattern_regions.h"
#include "load/loader.h"
#include "backend/plan/plan_file.h"
#include "backend/lower/core/packed_constants.h"
#include "backend/plan/plan_format.h"
#include "backend/plan/plan_payload.h"
#include "backend/plan/plan_shapes.h"

namespace onnxfuse {

using namespace planformat;

namespace {

struct Header {
  std::uint32_t crc = 0;
  std::uint64_t length = 0;  // payload bytes
  std::uint32_t version = 0;
};

// Checks the first bytes of a plan file (`have` of them, up to the header's
// size) against a file of `file_size` bytes.
Header CheckHeader(const unsigned char* data, std::size_t have, std::uint64_t file_size, const std::string& source) {
  if (have < sizeof kMagic || std::memcmp(data, kMagic, sizeof kMagic) != 0)
    Invalid(source, "not an onnx-fuse plan file (no \"ONNXFPLN\" magic; write one with onnx-fuse MODEL.onnx -o X.plan)");
  if (have < kPlanHeaderBytes)
    Invalid(source, "truncated plan file (" + std::to_string(file_size) + " bytes, shorter than its header)");
  auto version = static_cast<std::uint32_t>(GetLe(data + 8, 4));
  if (version < kPlanFormatOldest || version > kPlanFormatVersion)
    throw Error(ErrorKind::kUnsupported, source + ": plan format version " + std::to_string(version) +
                                             "; this onnx-fuse reads versions " + std::to_string(kPlanFormatOldest) +
                                             " to " + std::to_string(kPlanFormatVersion) +
                                             " (rebuild the plan from its model)");
  Header h{static_cast<std::uint32_t>(GetLe(data + 12, 4)), GetLe(data + 16, 8), version};
  std::uint64_t present = file_size - kPlanHeaderBytes;
  if (h.length != present)
    Invalid(source, (h.length > present ? "truncated plan file: payload of " : "plan file longer than its payload of ") +
                        std::to_string(h.length) + " bytes, " + std::to_string(present) + " present");
  if (h.length > static_cast<std::uint64_t>(INT_MAX)) Invalid(source, "plan payload over 2 GB");
  return h;
}

const char* const kCorrupted = "corrupted plan file: the payload's CRC-32 differs from the header's";

FusionPlan GroupsOf(const Graph& graph, const planfile::Plan& stored, const Header& header, const std::string& source) {
  const auto n = static_cast<std::int64_t>(graph.num_nodes());
  std::vector<int> label(graph.num_nodes(), -1);
  std::vector<planshapes::GroupLabel> groups;
  for (const auto& group : stored.groups()) {
    for (std::int64_t node : group.nodes()) {
      if (node < 0 || node >= n || label[static_cast<std::size_t>(node)] != -1)
        Invalid(source, "plan groups name node " + std::to_string(node) + " out of range or twice");
      label[static_cast<std::size_t>(node)] = static_cast<int>(groups.size());
    }
    planshapes::GroupLabel g{group.rule(), group.pattern(), {}};
    for (const auto& region : group.regions()) {
      PatternRegion r{region.pattern(), {}};
      for (std::int64_t node : region.nodes()) {
        if (node < 0 || node >= n) Invalid(source, "pattern region names node " + std::to_string(node) + " out of range");
        r.nodes.push_back(static_cast<NodeId>(node));
      }
      g.regions.push_back(std::move(r));
    }
    groups.push_back(std::move(g));
  }
  FusionPlan fusion = planshapes::GroupsFromLabels(graph, label, groups, stored.strategy(), source);
  // Files before format 4 store no pattern regions: the library finds them
  // again, as the fuser would have.
  if (header.version < 4 && !fusion.groups.empty()) AnnotatePatternRegions(graph, fusion, LoadPatterns({}));
  return fusion;
}

// The stored built shapes by input name, checked for what pinning them needs
// (the loader checks names, ranks and fixed dims).
planshapes::Shapes BuiltShapesOf(const planfile::Plan& stored, const std::string& source) {
  planshapes::Shapes shapes;
  for (const auto& input : stored.built_shapes()) {
    std::vector<std::int64_t> dims(input.dims().begin(), input.dims().end());
    if (dims.size() > 64 || std::any_of(dims.begin(), dims.end(), [](std::int64_t d) { return d < 0; }))
      Invalid(source, "built shape of input '" + input.name() + "' is malformed");
    if (!shapes.emplace(input.name(), std::move(dims)).second)
      Invalid(source, "built shape of input '" + input.name() + "' is stored twice");
  }
  return shapes;
}

// A version 2 plan has the one shape its model declares: requested shapes must be those.
void RequireOwnShapes(const Graph& graph, const planshapes::Shapes& requested, const std::string& source) {
  for (const auto& [name, dims] : requested) {
    const ValueId* input = nullptr;
    for (const ValueId& v : graph.inputs())
      if (graph.value(v).name == name) input = &v;
    if (!input) throw Error(ErrorKind::kUsage, source + ": --input-shape names '" + name + "', which is not a graph input");
    const TensorType& type = graph.value(*input).type;
    if (type.dims != dims)
      throw Error(ErrorKind::kUsage, source + ": input '" + name + "' has shape " + type.ShapeString() +
                                         " in this plan of format version 2, which runs at that shape only; "
                                         "rebuild the plan with this onnx-fuse to run it at others");
  }
}

// The stored constants as oneDNN memories. With `storage` (the mapped file
// the views point into), a constant whose bytes start on a kConstantAlignment
// boundary is used where it lies: no copy, and its pages are shared with the
// page cache. Any other (a plan written before the alignment, or bytes not
// kept alive) is copied into memory of its own.
std::shared_ptr<backend::PackedConstants> ConstantsOf(const std::vector<PayloadConstant>& stored,
                                                      const std::shared_ptr<const void>& storage,
                                                      const std::string& source) {
  auto packed = std::make_shared<backend::PackedConstants>();
  packed->replay = true;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  for (const PayloadConstant& c : stored) {
    const std::string& key = c.head.key();
    dnnl::memory::desc md;
    try {
      md = LoadDesc(c.head.desc(), c.data.size(), "constant '" + key + "'");
    } catch (const std::invalid_argument& e) {
      Invalid(source, e.what());
    } catch (const dnnl::error& e) {
      Invalid(source, "constant '" + key + "': " + e.what());
    }
    dnnl::memory m;
    if (storage && reinterpret_cast<std::uintptr_t>(c.data.data()) % kConstantAlignment == 0) {
      // Read only, like every packed constant: primitives take weights as sources.
      m = dnnl::memory(md, engine, const_cast<char*>(c.data.data()));
      ++packed->mapped;
    } else {
      m = dnnl::memory(md, engine);
      std::memcpy(m.get_data_handle(), c.data.data(), c.data.size());
    }
    if (!packed->by_key.emplace(key, m).second) Invalid(source, "constant '" + key + "' is stored twice");
  }
  if (packed->mapped > 0) packed->storage = storage;
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

bool IsPlanFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof kMagic] = {};
  return in.read(magic, sizeof magic) && std::memcmp(magic, kMagic, sizeof kMagic) == 0;
}

namespace {

// What the file says about itself: producer, source, fuser, ISA, size, format.
PlanFileInfo StoredInfo(const planfile::Plan& stored, const Header& header, std::uint64_t file_bytes) {
  PlanFileInfo info;
  info.producer = stored.producer();
  info.source = stored.source();
  info.strategy = stored.strategy();
  info.fused = stored.fused();
  info.built_isa = stored.cpu_isa();
  info.running_isa = CpuIsaName();
  info.file_bytes = file_bytes;
  info.format_version = header.version;
  return info;
}

// A plan of a model whose shapes follow values (format 5): its model, with
// only the requested shapes pinned, to run in stages; nothing compiled.
LoadedPlan LoadStaged(onnx::ModelProto model, const planfile::Plan& stored, const Header& header,
                      const std::string& source_name, const PlanReadOptions& read, std::uint64_t file_bytes,
                      std::chrono::steady_clock::time_point start) {
  LoadedPlan loaded;
  loaded.model = std::make_shared<Graph>(
      LoadModelProto(std::move(model), source_name + " (its model)", LoadOptions{read.input_shapes}));
  loaded.packed = std::make_shared<backend::PackedConstants>();
  PlanFileInfo& info = loaded.info = StoredInfo(stored, header, file_bytes);
  info.input_shapes = read.input_shapes;
  info.staged = true;
  info.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return loaded;
}

// The parsed payload into a compiled plan. The model is parsed from where it
// lies; the constants are used there too when `storage` keeps those bytes.
LoadedPlan Load(const PayloadView& payload, const Header& header, const std::string& source_name,
                const PlanReadOptions& read, std::uint64_t file_bytes, const std::shared_ptr<const void>& storage) {
  const auto start = std::chrono::steady_clock::now();
  const std::string model_name = source_name + " (its model)";
  const planfile::Plan& stored = payload.plan;
  onnx::ModelProto model = ParseModelBytes(payload.model.data(), payload.model.size(), model_name);
  if (stored.staged()) return LoadStaged(std::move(model), stored, header, source_name, read, file_bytes, start);
  const bool shaped = header.version >= 3;  // format 3: the model keeps its symbolic dims
  const planshapes::Shapes built = shaped ? BuiltShapesOf(stored, source_name) : planshapes::Shapes{};
  const planshapes::Shapes target = !shaped || read.input_shapes.empty()
                                        ? built
                                        : planshapes::ShapesToCompile(model.graph(), built, read.input_shapes);
  std::shared_ptr<const Graph> kept;
  if (shaped && read.keep_model) kept = std::make_shared<Graph>(LoadModelProto(model, model_name, LoadOptions{read.input_shapes}));
  std::unique_ptr<Graph> graph;
  try {
    graph = std::make_unique<Graph>(LoadModelProto(std::move(model), model_name, LoadOptions{target}));
  } catch (const Error& e) {
    // Pinning the file's own built shapes can only fail on a damaged file.
    if (e.kind() != ErrorKind::kUsage || !read.input_shapes.empty()) throw;
    Invalid(source_name, std::string("the built shapes do not fit the model: ") + e.what());
  }
  if (!shaped) RequireOwnShapes(*graph, read.input_shapes, source_name);
  const bool as_built = !shaped || target == built;
  FusionPlan fusion = GroupsOf(*graph, stored, header, source_name);
  CompileOptions options;
  options.fuse = stored.fused();
  options.packed = ConstantsOf(payload.constants, storage, source_name);
  // The stored implementations were chosen for the built shapes.
  if (as_built)
    for (const auto& step : stored.schedule())  // a step's label starts with its anchor node's name
      options.packed->implementations.emplace(step.kind() + ":" + step.label().substr(0, step.label().find('+')),
                                              step.impl());
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ExecutablePlan executable = read.keep_weights ? ExecutablePlan::Compile(*graph, fusion, options)
                                                : ExecutablePlan::CompileReleasingWeights(*graph, fusion, options);

  PlanFileInfo info = StoredInfo(stored, header, file_bytes);
  info.constants = static_cast<int>(payload.constants.size());
  info.constants_mapped = options.packed->mapped;
  info.constants_reused = options.packed->reused;
  info.constants_relaid = options.packed->relaid;
  info.constants_repacked = options.packed->recomputed;
  info.steps = stored.schedule_size();
  info.same_schedule = as_built && SameSchedule(executable.Schedule(), stored);
  info.built_shapes = built;
  info.input_shapes = planshapes::BuiltShapes(*graph);
  info.load_ms = load_ms;
  info.compile_ms = executable.stats().compile_ms;
  if (!as_built)
    spdlog::info("{}: compiled at other input shapes than it was built at: schedule and layouts derived here",
                 source_name);
  else if (info.built_isa != info.running_isa)
    spdlog::info("{}: built for {}, running on {}: layouts re-derived ({} constants reordered, {} as stored, {} repacked)",
                 source_name, info.built_isa, info.running_isa, info.constants_relaid, info.constants_reused,
                 info.constants_repacked);
  else if (!info.same_schedule)
    spdlog::warn("{}: the schedule compiled here differs from the stored one on the same ISA ({})", source_name,
                 info.running_isa);
  LoadedPlan loaded{std::move(graph), std::move(fusion), std::move(executable), std::move(info), std::move(kept),
                    options.packed};
  loaded.packed->implementations.clear();  // for the built shapes only; later compiles time their own
  return loaded;
}

}  // namespace

namespace {

struct Payload {
  Header header;
  PayloadView view;  // into the bytes parsed
};

// The checked header and the payload of the `size` bytes at `data`, parsed in place.
Payload ParsePayload(const void* data, std::size_t size, const std::string& source_name) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  Header h = CheckHeader(bytes, std::min(size, kPlanHeaderBytes), size, source_name);
  if (Crc32(bytes + kPlanHeaderBytes, h.length) != h.crc) Invalid(source_name, kCorrupted);
  return {h, ParsePayloadInPlace(bytes + kPlanHeaderBytes, h.length, source_name)};
}

}  // namespace

LoadedPlan ParsePlanFile(const void* data, std::size_t size, const std::string& source_name,
                         const PlanReadOptions& options) {
  const Payload payload = ParsePayload(data, size, source_name);
  return Load(payload.view, payload.header, source_name, options, size, nullptr);  // the caller's bytes: copied
}

LoadedPlan ParsePlanFile(const void* data, std::size_t size, const std::string& source_name, bool keep_weights) {
  PlanReadOptions options;
  options.keep_weights = keep_weights;
  return ParsePlanFile(data, size, source_name, options);
}

// The file is mapped (common/mapped_file.h) and the payload parsed where it
// lies (plan_payload.h), and the constants are used there: loading copies no
// weight byte, only the model's initializers into its parsed message. The
// mapping then lives as long as a plan uses its constants.
LoadedPlan ReadPlanFile(const std::string& path, const PlanReadOptions& options) {
  // The mapping lives as long as a constant used in place (PackedConstants::storage).
  auto file = std::make_shared<const MappedFile>(path);
  const Payload payload = ParsePayload(file->data(), file->size(), path);
  return Load(payload.view, payload.header, path, options, file->size(), file);
}

LoadedPlan ReadPlanFile(const std::string& path, bool keep_weights) {
  PlanReadOptions options;
  options.keep_weights = keep_weights;
  return ReadPlanFile(path, options);
}

}  // namespace onnxfuse
