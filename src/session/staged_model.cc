#include "session/staged_model.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/stopwatch.h"
#include "eval/host_eval.h"
#include "ir/node_label.h"
#include "ir/tensor_io.h"
#include "load/loader.h"
#include "onnxfuse/error.h"

namespace onnxfuse::session {

namespace {


// Drops the values no node left to run reads, but for the model's outputs:
// what a run keeps, and what each stage's key looks through, is only what is
// still needed (a decoder's past and present caches of every layer are not).
void ForgetUnread(const Graph& graph, const std::vector<bool>& done, KnownValues& known) {
  for (auto it = known.begin(); it != known.end();) {
    const std::optional<ValueId> v = graph.FindValue(it->first);
    const bool read = !v || graph.value(*v).is_graph_output ||
                      std::any_of(graph.value(*v).consumers.begin(), graph.value(*v).consumers.end(),
                                  [&](NodeId n) { return !done[n]; });
    it = read ? std::next(it) : known.erase(it);
  }
}

}  // namespace

struct StagedModel::CachedStage {
  std::vector<NodeId> nodes;
  // null: no node is ready, or the nodes are evaluated one by one on the
  // host (a stage with an empty tensor, which the compiled kernels refuse).
  std::unique_ptr<ShapeSchedule> schedule;
};

StagedModel::StagedModel(std::shared_ptr<const Graph> prepared, PrepareOptions prepare, bool fuse,
                         std::size_t cache_size, std::vector<bool> host_nodes)
    : shapes_(std::move(prepared)),
      prepare_(std::move(prepare)),
      fuse_(fuse),
      cache_size_(cache_size),
      host_nodes_(std::move(host_nodes)) {
  const Graph& graph = shapes_.prepared();
  evaluated_always_.resize(graph.num_nodes());
  host_evaluable_.resize(graph.num_nodes());
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    evaluated_always_[id] = OutputsFollowValues(node) || (id < host_nodes_.size() && host_nodes_[id]);
    host_evaluable_[id] = node.domain.empty() && eval::HostEvaluable(node);
  }
}

StagedModel::~StagedModel() = default;

StagedStats StagedModel::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  StagedStats total = stats_;
  for (const auto& [key, body] : bodies_) {
    const StagedStats nested = body->stats();
    total.stages_compiled += nested.stages_compiled, total.stage_hits += nested.stage_hits;
    total.stages_run += nested.stages_run, total.nodes_evaluated += nested.nodes_evaluated;
    total.compile_ms += nested.compile_ms;
  }
  return total;
}

std::vector<Tensor> StagedModel::Run(KnownValues inputs) {
  const Graph& graph = prepared();
  KnownValues known;
  for (ValueId v : graph.inputs()) {
    const std::string& name = graph.value(v).name;
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error(ErrorKind::kUsage, graph.source_path() + ": input '" + name + "' is missing");
    known[name] = std::move(it->second);
  }
  std::vector<bool> done(graph.num_nodes(), false);
  auto outputs_known = [&] {
    return std::all_of(graph.outputs().begin(), graph.outputs().end(), [&](ValueId v) {
      return known.count(graph.value(v).name) > 0 || graph.value(v).initializer >= 0;
    });
  };
  while (!outputs_known()) {
    const std::shared_ptr<CachedStage> stage = StageFor(done, known);
    bool progress = false;
    if (stage->schedule) {
      RunStage(*stage, done, known), progress = true;
    } else if (!stage->nodes.empty()) {
      for (NodeId id : stage->nodes) Evaluated(id, EvaluateNode(id, known), done, known);
      progress = true;
    }
    progress = EvaluateKnown(done, known, /*any=*/false) || progress;
    ForgetUnread(graph, done, known);
    if (!progress && !EvaluateKnown(done, known, /*any=*/true)) {
      for (NodeId id = 0; id < graph.num_nodes(); ++id)
        if (!done[id])
          throw Error(ErrorKind::kUnsupported, NodeInFile(graph, graph.node(id)) +
                                                   ": its output shapes are not known from what this run has "
                                                   "computed, and the host evaluator does not run it");
      Check(false, "StagedModel::Run: outputs missing after every node ran");
    }
  }
  std::vector<Tensor> outputs;
  const std::vector<ValueId>& results = graph.outputs();
  for (auto v = results.begin(); v != results.end(); ++v) {
    const std::string& name = graph.value(*v).name;
    auto it = known.find(name);
    Tensor out;
    if (it == known.end()) out = TensorFromProto(*graph.ConstantTensor(*v), graph.source_path());
    else if (std::find(v + 1, results.end(), *v) != results.end()) out = it->second;  // given again below
    else out = std::move(it->second);
    out.name = name;
    outputs.push_back(std::move(out));
  }
  return outputs;
}

std::shared_ptr<StagedModel::CachedStage> StagedModel::StageFor(const std::vector<bool>& done,
                                                                 const KnownValues& known) {
  const std::string key = StageKey(prepared(), done, known, host_nodes_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = stages_.begin(); it != stages_.end(); ++it)
      if (it->first == key) {
        stages_.splice(stages_.begin(), stages_, it);
        ++stats_.stage_hits;
        return stages_.front().second;
      }
  }
  const auto start = std::chrono::steady_clock::now();
  Stage split = SplitStage(shapes_, done, known, host_nodes_);
  auto cached = std::make_shared<CachedStage>();
  cached->nodes = split.nodes;
  if (!split.nodes.empty()) {
    auto graph = std::make_unique<Graph>(std::move(split.model), prepared().source_path());
    const bool host = std::all_of(graph->nodes().begin(), graph->nodes().end(), [](const Node& n) {
      return n.domain.empty() && eval::HostEvaluable(n);
    });
    graph->set_conversion(prepared().conversion());
    if (!split.borrowed.empty()) graph->BorrowConstants(shapes_.shared_prepared(), split.borrowed);
    FusionPlan fusion;
    if (fuse_) {
      fusion = FuseGraph(*graph, prepare_.fusion);
      ValidateFusionPlan(*graph, fusion);
    }
    std::string nodes_key;
    for (NodeId id : split.nodes) nodes_key += std::to_string(id) + ",";
    SameNodes* same = nullptr;
    std::map<std::string, std::string> implementations;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& slot = same_nodes_[nodes_key];
      if (!slot) slot = std::make_unique<SameNodes>();
      same = slot.get();
      implementations = same->implementations;
    }
    try {
      cached->schedule = std::make_unique<ShapeSchedule>(std::move(graph), std::move(fusion), fuse_, &same->packed,
                                                         nullptr, MsSince(start), implementations);
      std::lock_guard<std::mutex> lock(mutex_);
      if (same->implementations.empty()) same->implementations = cached->schedule->implementations();
    } catch (const Error& e) {
      // What the compiled kernels refuse at these shapes (an empty tensor:
      // no detection) is evaluated on the host, where every op knows them.
      if (e.kind() != ErrorKind::kUnsupported || !host) throw;
      spdlog::debug("{}: a stage of {} nodes runs on the host evaluator: {}", prepared().source_path(),
                    split.nodes.size(), e.what());
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.stages_compiled;
  stats_.compile_ms += MsSince(start);
  stages_.emplace_front(key, cached);
  while (stages_.size() > cache_size_) stages_.pop_back();
  return cached;
}

void StagedModel::RunStage(const CachedStage& stage, std::vector<bool>& done, KnownValues& known) {
  ShapeSchedule::Lease lease = stage.schedule->Acquire();
  ExecutablePlan& plan = lease.plan();
  const std::vector<ExecutablePlan::Binding> inputs = plan.InputBindings();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = known.at(inputs[i].name);
    Check(t.dims == inputs[i].dims, "StagedModel: a stage's input '" + inputs[i].name + "' has other dims than its key");
    if (t.elem_type == onnx::TensorProto::INT64)
      std::copy(t.int_data.begin(), t.int_data.end(), static_cast<std::int64_t*>(plan.InputBuffer(i)));
    else
      std::copy(t.data.begin(), t.data.end(), static_cast<float*>(plan.InputBuffer(i)));
  }
  plan.RunSteps();
  const std::size_t outputs = plan.OutputBindings().size();
  for (std::size_t i = 0; i < outputs; ++i) {
    Tensor t = plan.OutputTensor(i);
    known[t.name] = std::move(t);
  }
  for (NodeId id : stage.nodes) done[id] = true;
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.stages_run;
}

bool StagedModel::EvaluateKnown(std::vector<bool>& done, KnownValues& known, bool any) {
  const Graph& graph = prepared();
  bool evaluated = false;
  const auto empty_float = [](const Tensor& t) {
    return t.NumElements() == 0 && t.elem_type == onnx::TensorProto::FLOAT;
  };
  const bool some_empty =
      std::any_of(known.begin(), known.end(), [&](const auto& entry) { return empty_float(entry.second); });
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (done[id]) continue;
    const Node& node = graph.node(id);
    const bool listed = evaluated_always_[id];
    if (!listed && !any && !some_empty) continue;  // nothing here for this node: skip the lookups
    const bool inputs_known = std::all_of(node.inputs.begin(), node.inputs.end(), [&](ValueId v) {
      return v == kNoValue || graph.value(v).initializer >= 0 || known.count(graph.value(v).name) > 0;
    });
    if (!inputs_known) continue;
    const bool empty_input = some_empty && std::any_of(node.inputs.begin(), node.inputs.end(), [&](ValueId v) {
      if (v == kNoValue) return false;
      auto it = known.find(graph.value(v).name);
      return it != known.end() && empty_float(it->second);
    });
    const bool follows = listed || (empty_input && host_evaluable_[id]);
    if (!follows && !(any && host_evaluable_[id])) continue;
    Evaluated(id, EvaluateNode(id, known), done, known);
    evaluated = true;
    if (!follows) return true;  // one at a time: the next stage may compile what it unblocked
  }
  return evaluated;
}

void StagedModel::Evaluated(NodeId id, std::vector<Tensor> outputs, std::vector<bool>& done, KnownValues& known) {
  const Node& node = prepared().node(id);
  for (std::size_t k = 0; k < node.outputs.size() && k < outputs.size(); ++k) {
    if (node.outputs[k] == kNoValue) continue;
    const std::string& name = prepared().value(node.outputs[k]).name;
    outputs[k].name = name;
    known[name] = std::move(outputs[k]);
  }
  done[id] = true;
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.nodes_evaluated;
}

const Tensor* StagedModel::InputOf(const Node& node, std::size_t slot, const KnownValues& known,
                                   std::vector<Tensor>& held) const {
  if (slot >= node.num_explicit_inputs || node.inputs[slot] == kNoValue) return nullptr;
  const Value& value = prepared().value(node.inputs[slot]);
  if (auto it = known.find(value.name); it != known.end()) return &it->second;
  held.push_back(TensorFromProto(*prepared().ConstantTensor(node.inputs[slot]), prepared().source_path()));
  return &held.back();
}

std::vector<Tensor> StagedModel::EvaluateNode(NodeId id, const KnownValues& known) {
  const Node& node = prepared().node(id);
  std::vector<Tensor> held;
  held.reserve(node.num_explicit_inputs);  // InputOf's pointers into it stay valid
  std::vector<const Tensor*> inputs;
  for (std::size_t slot = 0; slot < node.num_explicit_inputs; ++slot) inputs.push_back(InputOf(node, slot, known, held));
  if (node.domain.empty() && node.op_type == "If") return RunIf(id, inputs, known);
  if (node.domain.empty() && node.op_type == "Loop") return RunLoop(id, inputs, known);
  if (node.domain.empty() && node.op_type == "Scan") return RunScan(id, inputs, known);
  if (!host_evaluable_[id])
    throw Error(ErrorKind::kUnsupported, NodeInFile(prepared(), node) +
                                             ": its output shapes follow values at run time, and the host "
                                             "evaluator does not run it");
  return eval::EvalAsDeclared(prepared(), node, inputs);
}

StagedModel& StagedModel::Body(NodeId id, const std::string& attribute, const KnownValues& known) {
  const std::string key = std::to_string(id) + "/" + attribute;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = bodies_.find(key); it != bodies_.end()) return *it->second;
  }
  const Node& node = prepared().node(id);
  const onnx::GraphProto* body = nullptr;
  for (const onnx::AttributeProto& a : node.proto.attribute())
    if (a.name() == attribute) body = &a.g();
  if (!body)
    throw Error(ErrorKind::kInvalidModel, NodeInFile(prepared(), node) + ": it has no '" + attribute + "' attribute");
  // The body as a model: its own inputs, then each value it reads from
  // outside (the node's captures) as an input of its type.
  onnx::ModelProto model;
  model.set_ir_version(prepared().model().ir_version());
  *model.mutable_opset_import() = prepared().model().opset_import();
  *model.mutable_graph() = *body;
  model.mutable_graph()->set_name(node.name + "/" + attribute);
  std::vector<std::string> declared;
  for (const auto& input : body->input()) declared.push_back(input.name());
  for (std::size_t slot = node.num_explicit_inputs; slot < node.inputs.size(); ++slot) {
    const Value& captured = prepared().value(node.inputs[slot]);
    if (std::find(declared.begin(), declared.end(), captured.name) != declared.end()) continue;
    // Of its element type and rank, every dim left open: the body serves any shape.
    auto* input = model.mutable_graph()->add_input();
    input->set_name(captured.name);
    auto* type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(captured.type.elem_type);
    auto* shape = type->mutable_shape();
    const auto it = known.find(captured.name);
    const std::size_t rank = captured.type.has_shape ? captured.type.dims.size()
                             : it != known.end()     ? it->second.dims.size()
                                                     : 0;
    for (std::size_t d = 0; d < rank; ++d) shape->add_dim();
  }
  const std::string where = prepared().source_path() + " (node '" + node.name + "' " + attribute + ")";
  PrepareOptions options = prepare_;
  options.fuse = false;
  options.keep_run_time_control_flow = true;
  PreparedModel prepared = PrepareGraph(LoadModelProto(std::move(model), where), options);
  auto nested = std::make_unique<StagedModel>(std::shared_ptr<const Graph>(std::move(prepared.graph)), prepare_, fuse_,
                                              cache_size_);
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = bodies_[key];
  if (!slot) slot = std::move(nested);
  return *slot;
}

KnownValues StagedModel::OuterValues(const Graph& body, std::size_t first, const KnownValues& known) const {
  KnownValues outer;
  for (std::size_t i = first; i < body.inputs().size(); ++i) {
    const std::string& name = body.value(body.inputs()[i]).name;
    if (auto it = known.find(name); it != known.end()) {
      outer[name] = it->second;
    } else if (auto v = prepared().FindValue(name); v && prepared().value(*v).initializer >= 0) {
      outer[name] = TensorFromProto(*prepared().ConstantTensor(*v), prepared().source_path());
    }
  }
  return outer;
}

}  // namespace onnxfuse::session
