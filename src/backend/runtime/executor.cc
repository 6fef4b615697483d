// ExecutablePlan: compile (order the groups, lower them, plan the arena, bind
// memories) and run (copy inputs in, execute the steps, copy outputs out).
#include "backend/runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <queue>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "backend/runtime/arena.h"
#include "backend/runtime/cpu_requirement.h"
#include "backend/lower/core/builder.h"
#include "backend/lower/core/chain.h"
#include "backend/lower/core/fault_injection.h"
#include "eval/host_tensor.h"
#include "backend/lower/own_kernels/own_kernels.h"
#include "backend/lower/fused/pattern_lowerings.h"
#include "backend/lower/core/views.h"
#include "onnxfuse/error.h"
#include "ir/tensor_data.h"

namespace onnxfuse {

using namespace backend;

namespace {

// Largest graph input `run` takes: 1 TiB, far beyond any model that fits a machine's memory.
constexpr std::int64_t kMaxTensorBytes = std::int64_t{1} << 40;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<char, FreeDeleter>;

Buffer Allocate(std::int64_t bytes) {
  auto size = static_cast<std::size_t>((std::max<std::int64_t>(bytes, 1) + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, size);
  if (!p) throw std::bad_alloc();
  return Buffer(static_cast<char*>(p));
}

// An execution unit: a fusion group's members, or one node (unfused; group null).
struct Unit {
  std::vector<NodeId> nodes;
  const FusedGroup* group = nullptr;
};

// The pattern regions of `plan` (FusedGroup::regions) by node: each node's
// region, nullptr for none.
std::vector<const PatternRegion*> RegionOfNode(const Graph& graph, const FusionPlan& plan) {
  std::vector<const PatternRegion*> region_of(graph.num_nodes(), nullptr);
  for (const FusedGroup& group : plan.groups)
    for (const PatternRegion& region : group.regions)
      for (NodeId id : region.nodes) region_of.at(id) = &region;
  return region_of;
}

// The regions with a node among `nodes`, each once: a region may span groups,
// and is lowered by the one that reaches its entry node (pattern_lowerings.h).
std::vector<PatternRegion> RegionsAmong(const std::vector<const PatternRegion*>& region_of,
                                        const std::vector<NodeId>& nodes) {
  std::vector<const PatternRegion*> seen;
  std::vector<PatternRegion> regions;
  for (NodeId id : nodes) {
    const PatternRegion* region = region_of[id];
    if (!region || std::find(seen.begin(), seen.end(), region) != seen.end()) continue;
    seen.push_back(region);
    regions.push_back(*region);
  }
  return regions;
}

// Execution units: fusion groups in dependency order (Kahn's algorithm, ties by
// first member), or one node each, in the graph's topological order, unfused.
std::vector<Unit> Units(const Graph& graph, const FusionPlan& plan, bool fuse) {
  std::vector<Unit> units;
  if (!fuse || plan.groups.empty()) {
    for (NodeId id = 0; id < graph.num_nodes(); ++id) units.push_back({{id}, nullptr});
    return units;
  }
  Check(plan.group_of.size() == graph.num_nodes(), "fusion plan does not cover the graph");
  std::size_t n = plan.groups.size();
  std::vector<std::vector<std::size_t>> succ(n);
  std::vector<int> indegree(n, 0);
  for (std::size_t g = 0; g < n; ++g) {
    std::vector<std::size_t> preds;
    for (NodeId id : plan.groups[g].nodes)
      for (ValueId v : graph.node(id).inputs) {
        if (v == kNoValue || graph.value(v).producer == kNoNode) continue;
        auto p = static_cast<std::size_t>(plan.group_of[graph.value(v).producer]);
        if (p != g) preds.push_back(p);
      }
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (auto p : preds) succ[p].push_back(g), ++indegree[g];
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t g = 0; g < n; ++g)
    if (indegree[g] == 0) ready.push(g);
  while (!ready.empty()) {
    std::size_t g = ready.top();
    ready.pop();
    units.push_back({plan.groups[g].nodes, &plan.groups[g]});
    for (auto s : succ[g])
      if (--indegree[s] == 0) ready.push(s);
  }
  Check(units.size() == n, "fusion groups form a cycle");
  return units;
}

struct IoBinding {
  std::string name;
  int slot = -1;
  Dims dims;
  std::int32_t data_type = onnx::TensorProto::FLOAT;  // the ONNX type; the slot holds StorageTypeOf(it)
  std::optional<Tensor> constant;  // an output known at build time
};

}  // namespace

struct ExecutablePlan::Impl {
  // What bound constants' bytes lie in (a mapped plan file), or nullptr. First:
  // destroyed last, after every memory and primitive that points into it.
  std::shared_ptr<const void> constant_storage;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::vector<Step> steps;
  std::vector<std::unordered_map<int, dnnl::memory>> bound;  // per step: DNNL_ARG_* -> memory
  std::vector<std::vector<void*>> pointers;                   // per custom step: its arguments' data
  std::vector<Slot> slots;
  Buffer arena, scratchpad;
  std::vector<IoBinding> inputs, outputs;
  PlanStats stats;

  char* SlotData(int slot) const { return arena.get() + slots[static_cast<std::size_t>(slot)].offset; }
};

ExecutablePlan::ExecutablePlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ExecutablePlan::ExecutablePlan(ExecutablePlan&&) noexcept = default;
ExecutablePlan& ExecutablePlan::operator=(ExecutablePlan&&) noexcept = default;
ExecutablePlan::~ExecutablePlan() = default;
const PlanStats& ExecutablePlan::stats() const { return impl_->stats; }

ExecutablePlan ExecutablePlan::Compile(const Graph& graph, const FusionPlan& plan, const CompileOptions& options) {
  return CompileInto(graph, nullptr, plan, options);
}

ExecutablePlan ExecutablePlan::CompileReleasingWeights(Graph& graph, const FusionPlan& plan,
                                                       const CompileOptions& options) {
  return CompileInto(graph, &graph, plan, options);
}

ExecutablePlan ExecutablePlan::CompileInto(const Graph& graph, Graph* releasable, const FusionPlan& plan,
                                           const CompileOptions& options) {
  RequireAvx2(graph.source_path());
  const auto start = std::chrono::steady_clock::now();
  auto impl = std::make_unique<Impl>();
  if (options.packed) impl->constant_storage = options.packed->storage;
  Builder b(graph, options.fuse, impl->engine, options.packed.get(), releasable);
  b.fake_quantize = options.fake_quantize;
  b.varying_dims = options.varying_dims;

  for (ValueId v : graph.inputs()) {
    const Value& value = graph.value(v);
    const std::int32_t storage = StorageTypeOf(value.type.elem_type);
    if (storage == onnx::TensorProto::UNDEFINED)
      throw Error(ErrorKind::kUnsupported, graph.source_path() + ": input '" + value.name + "' has element type " +
                                               onnx::TensorProto::DataType_Name(value.type.elem_type) +
                                               ", which the runtime does not take");
    Dims dims;
    for (auto d : value.type.dims) dims.push_back(d >= 0 ? d : 1);
    // A declared shape is untrusted: its byte size must be computable before anything is sized from it.
    std::optional<std::int64_t> bytes = storage == onnx::TensorProto::FLOAT ? 4 : 8;
    for (auto d : dims) bytes = bytes ? CheckedMultiply(*bytes, d) : bytes;
    if (!bytes || *bytes > kMaxTensorBytes)
      throw Error(ErrorKind::kUnsupported, graph.source_path() + ": input '" + value.name + "' of shape " +
                                               DimsString(dims) + " is larger than run handles (2^40 bytes)");
    if (std::count_if(value.type.dims.begin(), value.type.dims.end(), [](auto d) { return d < 0; }) > 0)
      b.defaulted_inputs.push_back(value.name);
    Act act = b.NewAct(dims, StorageDesc(dims, storage));
    act.elem_type = storage;
    b.slots[static_cast<std::size_t>(act.slot)].graph_input = true;
    b.SetAct(v, act);
    impl->inputs.push_back({value.name, act.slot, dims, value.type.elem_type, std::nullopt});
  }
  PrefoldConstants(b);
  const std::vector<const PatternRegion*> region_of = RegionOfNode(graph, plan);
  for (const Unit& unit : Units(graph, plan, options.fuse)) {
    b.group = unit.group ? unit.group->id : -1;
    b.group_pattern = unit.group ? unit.group->pattern_name : "";
    // What the pattern library found (a pattern group, pattern regions) is lowered by name.
    const std::vector<PatternRegion> regions = unit.group ? RegionsAmong(region_of, unit.nodes) : std::vector<PatternRegion>{};
    LowerGroupByPattern(b, unit.nodes, b.group_pattern, regions);
    InjectFault(b, unit.nodes);
  }
  b.group = -1, b.group_pattern.clear();
  LinkPointwise(b);

  for (ValueId v : graph.outputs()) {
    const Value& value = graph.value(v);
    Node pseudo;  // names the graph output in messages
    pseudo.name = value.name, pseudo.op_type = "graph output";
    if (!b.IsAct(v)) {
      Tensor known = b.Const(v, pseudo);
      if (StorageTypeOf(value.type.elem_type) != onnx::TensorProto::UNDEFINED) eval::NarrowTo(known, value.type.elem_type);
      impl->outputs.push_back({value.name, -1, {}, known.DataType(), std::move(known)});
      continue;
    }
    const Act& act = b.AnyActOf(v, pseudo);
    const int slot = act.elem_type == onnx::TensorProto::FLOAT ? b.UsePlain(v, pseudo).slot : act.slot;
    b.slots[static_cast<std::size_t>(slot)].graph_output = true;
    const std::int32_t data_type = StorageTypeOf(value.type.elem_type) == act.elem_type ? value.type.elem_type : act.elem_type;
    impl->outputs.push_back({value.name, slot, act.dims, data_type, std::nullopt});
  }

  // Lifetimes from the steps' arguments; inputs are live from the start,
  // outputs to the end. A use of a view is a use of the buffer it views.
  const int end = static_cast<int>(b.steps.size());
  std::vector<BufferLifetime> lifetimes(b.slots.size());
  for (std::size_t s = 0; s < b.slots.size(); ++s) lifetimes[s] = {b.slots[s].bytes, end, -1};
  auto touch = [&](int slot, int first, int last) {
    auto& life = lifetimes[static_cast<std::size_t>(b.RootOf(slot))];
    life.first = std::min(life.first, first), life.last = std::max(life.last, last);
  };
  for (std::size_t s = 0; s < b.slots.size(); ++s) {
    if (b.slots[s].graph_input) touch(static_cast<int>(s), 0, 0);
    if (b.slots[s].graph_output) touch(static_cast<int>(s), end, end);
  }
  for (int i = 0; i < end; ++i)
    for (const auto& [key, arg] : b.steps[static_cast<std::size_t>(i)].args)
      if (arg.slot >= 0) touch(arg.slot, i, i);
  for (auto& life : lifetimes)
    if (life.last < life.first) life.first = life.last = 0;  // never touched, or a view (no bytes)
  ArenaLayout arena = LayOutArena(lifetimes);
  for (std::size_t s = 0; s < b.slots.size(); ++s) {
    const Slot& slot = b.slots[s];
    b.slots[s].offset = slot.root >= 0 ? arena.offsets[static_cast<std::size_t>(slot.root)] + slot.view_offset : arena.offsets[s];
  }

  try {
    impl->arena = Allocate(arena.total_bytes);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::kUnsupported, graph.source_path() + ": cannot allocate the activation arena of " +
                                             std::to_string(arena.total_bytes) + " bytes");
  }
  std::int64_t scratch = 0;
  for (const Step& step : b.steps) scratch = std::max(scratch, static_cast<std::int64_t>(step.scratchpad.get_size()));
  impl->scratchpad = Allocate(scratch);
  impl->slots = b.slots;
  for (const Step& step : b.steps) {
    std::vector<void*> data;
    for (const auto& [key, arg] : step.args)
      data.push_back(arg.slot >= 0 ? static_cast<void*>(impl->SlotData(arg.slot)) : arg.fixed.get_data_handle());
    if (step.custom && step.scratchpad.get_size() > 0) data.push_back(impl->scratchpad.get());
    impl->pointers.push_back(std::move(data));
    std::unordered_map<int, dnnl::memory> args;
    if (step.custom) {
      impl->bound.push_back(std::move(args));
      continue;
    }
    for (const auto& [key, arg] : step.args)
      args[key] = arg.slot >= 0 ? dnnl::memory(arg.md, impl->engine, impl->SlotData(arg.slot)) : arg.fixed;
    if (step.scratchpad.get_size() > 0)
      args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(step.scratchpad, impl->engine, impl->scratchpad.get());
    impl->bound.push_back(std::move(args));
  }

  PlanStats& st = impl->stats;
  st.kernels = end;
  st.reorders = static_cast<int>(std::count_if(b.steps.begin(), b.steps.end(), [](const Step& s) { return s.reorder; }));
  st.arena_bytes = arena.total_bytes;
  for (const Slot& s : b.slots) st.buffer_bytes_total += s.bytes;
  for (ValueId v = 0; v < graph.values().size(); ++v)
    if (graph.value(v).producer != kNoNode && !b.IsConst(v)) st.intermediate_bytes_total += graph.value(v).type.SizeInBytes().value_or(0);
  st.scratchpad_bytes = scratch;
  st.weight_bytes = b.weight_bytes;
  st.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  impl->steps = std::move(b.steps);
  spdlog::debug("{}: {} kernels ({} reorders), arena {} bytes for {} buffers ({} bytes without reuse)",
                graph.source_path(), st.kernels, st.reorders, st.arena_bytes, impl->slots.size(), st.buffer_bytes_total);
  return ExecutablePlan(std::move(impl));
}

std::vector<Tensor> ExecutablePlan::Run(const std::vector<Tensor>& inputs, std::vector<double>* step_ms) {
  Impl& p = *impl_;
  if (inputs.size() != p.inputs.size())
    throw Error(ErrorKind::kUsage, "expected " + std::to_string(p.inputs.size()) + " inputs, got " + std::to_string(inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const IoBinding& in = p.inputs[i];
    const std::int32_t storage = StorageTypeOf(in.data_type);
    if (inputs[i].elem_type != storage || inputs[i].dims != in.dims)
      throw Error(ErrorKind::kUsage, "input '" + in.name + "' must be " +
                                         onnx::TensorProto::DataType_Name(in.data_type) + " " + DimsString(in.dims) +
                                         ", got " + onnx::TensorProto::DataType_Name(inputs[i].DataType()) + " " +
                                         DimsString(inputs[i].dims) + " (set its shape with --input-shape)");
    if (storage == onnx::TensorProto::INT64)  // none for a 0-size input
      std::copy_n(inputs[i].int_data.data(), inputs[i].int_data.size(), reinterpret_cast<std::int64_t*>(p.SlotData(in.slot)));
    else
      std::copy_n(inputs[i].data.data(), inputs[i].data.size(), reinterpret_cast<float*>(p.SlotData(in.slot)));
  }
  RunSteps(step_ms);
  std::vector<Tensor> outputs;
  for (std::size_t i = 0; i < p.outputs.size(); ++i) outputs.push_back(OutputTensor(i));
  return outputs;
}

namespace {

std::vector<ExecutablePlan::Binding> Bindings(const std::vector<IoBinding>& io) {
  std::vector<ExecutablePlan::Binding> bindings;
  for (const IoBinding& b : io) bindings.push_back({b.name, b.dims, b.data_type, b.constant ? &*b.constant : nullptr});
  return bindings;
}

}  // namespace

std::vector<ExecutablePlan::Binding> ExecutablePlan::InputBindings() const { return Bindings(impl_->inputs); }
std::vector<ExecutablePlan::Binding> ExecutablePlan::OutputBindings() const { return Bindings(impl_->outputs); }

void* ExecutablePlan::InputBuffer(std::size_t i) { return impl_->SlotData(impl_->inputs.at(i).slot); }

const void* ExecutablePlan::OutputBuffer(std::size_t i) const {
  const IoBinding& out = impl_->outputs.at(i);
  return out.constant ? nullptr : impl_->SlotData(out.slot);
}

Tensor ExecutablePlan::OutputTensor(std::size_t i) const {
  const IoBinding& out = impl_->outputs.at(i);
  if (out.constant) {
    Tensor t = *out.constant;
    t.name = out.name;
    return t;
  }
  Tensor t;
  t.name = out.name;
  t.dims = out.dims;
  t.data_type = out.data_type;
  t.elem_type = StorageTypeOf(out.data_type);
  const auto n = static_cast<std::size_t>(Product(out.dims));
  if (t.elem_type == onnx::TensorProto::INT64) {
    t.int_data.resize(n);
    std::copy_n(reinterpret_cast<const std::int64_t*>(impl_->SlotData(out.slot)), n, t.int_data.data());
  } else {
    t.data.resize(n);
    std::copy_n(reinterpret_cast<const float*>(impl_->SlotData(out.slot)), n, t.data.data());
  }
  return t;
}

void ExecutablePlan::RunSteps(std::vector<double>* step_ms) {
  Impl& p = *impl_;
  if (step_ms && step_ms->size() < p.steps.size()) step_ms->resize(p.steps.size(), 0.0);
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const auto start = step_ms ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    if (p.steps[i].custom) {
      p.stream.wait();  // in-order CPU stream: a no-op, kept for clarity
      p.steps[i].custom(p.pointers[i]);
    } else {
      p.steps[i].prim.execute(p.stream, p.bound[i]);
    }
    if (step_ms) {
      p.stream.wait();
      (*step_ms)[i] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
  }
  p.stream.wait();
}

std::vector<ScheduleStep> ExecutablePlan::Schedule() const {
  std::vector<ScheduleStep> schedule;
  for (const Step& s : impl_->steps) schedule.push_back({s.kind, s.label, s.impl, s.layout, s.group, s.pattern, s.note, s.data_type, s.any_shape,
                                                     s.slow, s.flops, s.bytes});
  return schedule;
}

std::vector<std::string> ExecutablePlan::Describe() const {
  std::vector<std::string> lines;
  for (const ScheduleStep& s : Schedule()) lines.push_back(s.kind + " " + s.label + " " + s.impl + " " + s.layout);
  return lines;
}

}  // namespace onnxfuse
