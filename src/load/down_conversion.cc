// Opset 18-23 (IR 9-10) down to opset 17 (IR 8): the walk over the main
// graph, If/Loop/Scan bodies and model-local functions that applies one
// adapter per changed operator (down_adapters.h).
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>
#include <spdlog/spdlog.h>
#include <vector>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include "ir/names.h"
#include "load/conversion_steps.h"
#include "load/down_adapters.h"
#include "load/shape_inference.h"
#include "onnxfuse/error.h"

namespace onnxfuse::load {

namespace {

// Operators whose signature changed after opset 17, with the opset of the
// change and their adapter (ONNX Changelog.md). Every other op of opset 18-23
// either only gained types (Reshape, Shape, Identity, If, ...) and is the
// opset-17 op, or was first defined after 17 and is refused unless listed.
struct AdapterEntry {
  const char* op;
  std::int64_t since;
  Rewrite (*adapt)(const onnx::NodeProto&, DownContext&);
};
constexpr AdapterEntry kAdapters[] = {
    {"ReduceMax", 18, AdaptReduce},        {"ReduceMin", 18, AdaptReduce},
    {"ReduceMean", 18, AdaptReduce},       {"ReduceProd", 18, AdaptReduce},
    {"ReduceL1", 18, AdaptReduce},         {"ReduceL2", 18, AdaptReduce},
    {"ReduceLogSum", 18, AdaptReduce},     {"ReduceLogSumExp", 18, AdaptReduce},
    {"ReduceSumSquare", 18, AdaptReduce},  {"Split", 18, AdaptSplit},
    {"Pad", 18, AdaptPad},                 {"Resize", 18, AdaptResize},
    {"GroupNormalization", 18, AdaptGroupNormalization},
    {"Mish", 18, AdaptMish},               {"Gelu", 20, AdaptGelu},
    {"AveragePool", 19, AdaptPooling},     {"LpPool", 18, AdaptPooling},
    {"Cast", 19, AdaptNewDefaults},        {"CastLike", 19, AdaptNewDefaults},
    {"ScatterElements", 18, AdaptNewDefaults}, {"ScatterND", 18, AdaptNewDefaults},
    {"GridSample", 20, AdaptNewDefaults},
};

// One graph's (or function's) names in scope: constants and declared dims,
// chained to the enclosing scope's.
struct Scope {
  const Scope* outer = nullptr;
  std::map<std::string, const onnx::TensorProto*> constants;
  std::map<std::string, std::vector<std::int64_t>> dims;

  const onnx::TensorProto* Constant(const std::string& name) const {
    auto it = constants.find(name);
    return it != constants.end() ? it->second : outer ? outer->Constant(name) : nullptr;
  }
  std::optional<std::vector<std::int64_t>> Dims(const std::string& name) const {
    auto it = dims.find(name);
    if (it != dims.end()) return it->second;
    return outer ? outer->Dims(name) : std::nullopt;
  }
  void Declare(const onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    std::vector<std::int64_t> d;
    for (const auto& dim : vi.type().tensor_type().shape().dim()) d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    dims[vi.name()] = d;
  }
};

void CollectReads(const onnx::GraphProto& g, std::set<std::string>& reads) {
  for (const auto& n : g.node()) {
    for (const auto& v : n.input()) reads.insert(v);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectReads(a.g(), reads);
      for (const auto& sub : a.graphs()) CollectReads(sub, reads);
    }
  }
  for (const auto& o : g.output()) reads.insert(o.name());
}

// Adapters that need a value's dims (Pad with axes, an uneven Split) read
// them declared (graph inputs, value_info, initializers) or inferred. The main
// graph is converted in topological order (the loader sorts it first), so the
// nodes already emitted are a complete opset-17 graph of everything before the
// node at hand: ONNX shape inference of that prefix gives the dims of every
// value it computes, including those of converted opset-18+ nodes, which
// libonnx 1.12 could not infer at their own opset. Inference runs on demand,
// when a value's dims are wanted and unknown, and again only after the prefix
// has grown; so a chain of such ops converts as a whole. Bodies of If/Loop/Scan
// see the inferred dims of the outer graph; model-local functions (no types)
// only what is constant.
class DownConverter {
 public:
  DownConverter(onnx::ModelProto& model, std::string source, OpsetConversion& record)
      : model_(model), source_(std::move(source)), record_(record) {
    CollectNames(model.graph(), names_);
    for (const auto& f : model.functions())
      for (const auto& n : f.node()) CollectNodeNames(n, names_);
  }

  void Run() {
    // Functions first: the main graph's prefix, inferred, may call them.
    for (auto& f : *model_.mutable_functions()) {
      Scope scope;
      std::vector<onnx::NodeProto> constants;  // a function has no initializers: Constant nodes instead
      ConvertNodes(*f.mutable_node(), scope, [&](onnx::TensorProto t) {
        onnx::NodeProto c = MakeNode("Constant", {}, {t.name()}, t.name());
        auto* a = c.add_attribute();
        a->set_name("value");
        a->set_type(onnx::AttributeProto::TENSOR);
        *a->mutable_t() = std::move(t);
        constants.push_back(std::move(c));
      });
      google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
      for (auto& c : constants) *nodes.Add() = std::move(c);
      for (auto& n : *f.mutable_node()) *nodes.Add() = std::move(n);
      f.mutable_node()->Swap(&nodes);
      for (auto& o : *f.mutable_opset_import())
        if (IsDefaultDomain(o.domain())) o.set_version(kWorkingOpset);
    }
    in_main_graph_ = true;
    ConvertGraph(*model_.mutable_graph(), nullptr);
    in_main_graph_ = false;
  }

 private:
  std::string Fresh(const std::string& base) { return FreshName(base, names_, 1); }

  void ConvertGraph(onnx::GraphProto& g, const Scope* outer) {
    Scope scope;
    scope.outer = outer;
    for (const auto& vi : g.input()) scope.Declare(vi);
    for (const auto& vi : g.output()) scope.Declare(vi);
    for (const auto& vi : g.value_info()) scope.Declare(vi);
    for (const auto& t : g.initializer()) {
      scope.constants[t.name()] = &t;
      scope.dims[t.name()] = std::vector<std::int64_t>(t.dims().begin(), t.dims().end());
    }
    ConvertNodes(*g.mutable_node(), scope, [&](onnx::TensorProto t) { *g.add_initializer() = std::move(t); });
  }

  // Shape inference of the converted prefix of the main graph (the nodes
  // emitted so far), at opset 17, recorded in inferred_. Only the nodes
  // emitted since the last inference are inferred, their other inputs typed as
  // inferred before; data propagation (a shape computed by Shape, Gather, ...)
  // does not cross that boundary, so when `wanted` comes out unknown or with a
  // dim neither a number nor a symbol, the whole prefix is inferred again. So
  // a model with many such ops is not inferred whole once per op.
  void InferPrefix(const std::string& wanted) {
    const int emitted = model_.graph().node_size();
    if (!in_main_graph_ || emitted == inferred_through_) return;
    const int first = std::max(inferred_through_, 0);
    inferred_through_ = emitted;
    bool ok = InferNodes(first, emitted);
    if (first > 0 && (!ok || !Complete(wanted))) ok = InferNodes(0, emitted);
    if (ok) inference_failure_.clear();
  }

  // Infers nodes [first, end) of the main graph with everything else they read
  // as graph inputs (initializers of a few elements, and Constant nodes, as
  // they are: shape inference reads constant values only for shapes, which
  // are short). It runs only once the checker accepts that graph: libonnx's
  // inference assumes a checked graph (the fuzzer crashed it on unchecked
  // ones). False, and inference_failure_ set, when it cannot run.
  bool InferNodes(int first, int end) {
    const onnx::GraphProto& g = model_.graph();
    onnx::ModelProto copy;
    copy.set_ir_version(kWorkingIrVersion);
    *copy.mutable_opset_import() = model_.opset_import();
    for (auto& o : *copy.mutable_opset_import())
      if (IsDefaultDomain(o.domain())) o.set_version(kWorkingOpset);
    *copy.mutable_functions() = model_.functions();
    auto* graph = copy.mutable_graph();
    graph->set_name(g.name());
    std::set<std::string> produced, reads;
    for (int i = first; i < end; ++i) {
      const auto& n = g.node(i);
      if (n.op_type() == "Constant" && IsDefaultDomain(n.domain()) && n.output_size() == 1)
        constant_nodes_[n.output(0)] = i;
      for (const auto& o : n.output()) produced.insert(o);
      for (const auto& v : n.input()) reads.insert(v);
      for (const auto& attr : n.attribute()) {  // bodies read outer values by name
        if (attr.has_g()) CollectReads(attr.g(), reads);
        for (const auto& sub : attr.graphs()) CollectReads(sub, reads);
      }
    }
    std::map<std::string, const onnx::TensorProto*> initializers;
    for (const auto& t : g.initializer()) initializers[t.name()] = &t;
    std::map<std::string, const onnx::ValueInfoProto*> inputs;
    for (const auto& vi : g.input()) inputs[vi.name()] = &vi;
    for (const auto& v : reads) {
      if (v.empty() || produced.count(v)) continue;
      auto init = initializers.find(v);
      auto constant = constant_nodes_.find(v);
      auto input = inputs.find(v);
      auto type = inferred_.find(v);
      if (init != initializers.end()) {
        const onnx::TensorProto& t = *init->second;
        std::int64_t elements = 1;
        for (auto d : t.dims()) elements *= d;
        if (elements <= kInlineElements && t.data_location() != onnx::TensorProto::EXTERNAL) {
          *graph->add_initializer() = t;
          continue;
        }
        auto* vi = graph->add_input();
        vi->set_name(t.name());
        auto* tt = vi->mutable_type()->mutable_tensor_type();
        tt->set_elem_type(t.data_type());
        auto* shape = tt->mutable_shape();
        for (auto d : t.dims()) shape->add_dim()->set_dim_value(d);
      } else if (constant != constant_nodes_.end() && constant->second < first) {
        *graph->add_node() = g.node(constant->second);
      } else if (input != inputs.end()) {
        *graph->add_input() = *input->second;
      } else if (type != inferred_.end()) {
        auto* vi = graph->add_input();
        vi->set_name(v);
        *vi->mutable_type() = type->second;
      }  // else a body's own value, or one the checker will name as undefined
    }
    for (int i = first; i < end; ++i) *graph->add_node() = g.node(i);
    if (graph->input_size() == 0) {
      inference_failure_ = "no graph input";
      return false;
    }
    *graph->add_output() = graph->input(0);  // the checker wants an output; every value gets inferred anyway
    try {
      onnx::checker::check_model(copy);
      InferValueShapes(copy);  // the loader's own inference: strict, stopping at the first inconsistency
    } catch (const std::exception& e) {
      inference_failure_ = e.what();
      return false;
    }
    for (const auto& vi : copy.graph().value_info()) inferred_[vi.name()] = vi.type();
    return true;
  }

  // Whether `name` was inferred with every dim a number or a symbol.
  bool Complete(const std::string& name) const {
    auto it = inferred_.find(name);
    if (it == inferred_.end() || !it->second.tensor_type().has_shape()) return false;
    for (const auto& d : it->second.tensor_type().shape().dim())
      if (!d.has_dim_value() && !d.has_dim_param()) return false;
    return true;
  }

  std::optional<std::vector<std::int64_t>> Inferred(const std::string& name) const {
    auto it = inferred_.find(name);
    if (it == inferred_.end()) return std::nullopt;
    onnx::ValueInfoProto vi;
    vi.set_name(name);
    *vi.mutable_type() = it->second;
    Scope found;
    found.Declare(vi);
    return found.Dims(name);
  }

  void ConvertNodes(google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, Scope& scope,
                    const std::function<void(onnx::TensorProto)>& add_initializer) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> old;
    old.Swap(&nodes);
    for (auto& n : old)  // constants first: a node may read one defined later in file order
      if (n.op_type() == "Constant" && IsDefaultDomain(n.domain()) && n.output_size() == 1)
        for (const auto& a : n.attribute())
          if (a.name() == "value" && a.has_t()) scope.constants[n.output(0)] = &a.t();
    DownContext ctx;
    ctx.source = source_;
    ctx.from_opset = record_.from_opset;
    ctx.constant = [&](const std::string& name) { return scope.Constant(name); };
    ctx.dims = [&](const std::string& name) -> std::optional<std::vector<std::int64_t>> {
      if (auto d = scope.Dims(name)) return d;
      if (auto d = Inferred(name)) return d;
      InferPrefix(name);
      ctx.inference_failure = inference_failure_;
      return Inferred(name);
    };
    ctx.fresh = [&](const std::string& base) { return Fresh(base); };
    ctx.add_initializer = add_initializer;
    for (int i = 0; i < old.size(); ++i) {
      onnx::NodeProto& n = *old.Mutable(i);
      if (n.name().empty()) n.set_name(Fresh(n.op_type() + "_" + std::to_string(i)));
      for (auto& a : *n.mutable_attribute()) {  // If/Loop/Scan bodies: converted in this scope
        if (a.has_g()) ConvertGraph(*a.mutable_g(), &scope);
        for (auto& g : *a.mutable_graphs()) ConvertGraph(g, &scope);
      }
      if (!IsDefaultDomain(n.domain())) {
        *nodes.Add() = std::move(n);
        continue;
      }
      Rewrite rewrite{{n}, ""};
      for (const auto& entry : kAdapters)
        if (n.op_type() == entry.op && record_.from_opset >= entry.since) {
          // No checker has seen the node yet (libonnx 1.12 knows no
          // opset-18 schema): every adapter reads input 0 and output 0.
          if (n.input_size() < 1 || n.input(0).empty() || n.output_size() < 1 || n.output(0).empty())
            ctx.Refuse(n, "has no data input or no output");
          rewrite = entry.adapt(n, ctx);
        }
      for (auto& r : rewrite.nodes) {
        if (!onnx::OpSchemaRegistry::Schema(r.op_type(), static_cast<int>(kWorkingOpset), ""))
          ctx.Refuse(n, "first defined after opset 17, and onnx-fuse has no rewrite of it into opset-17 ops");
        *nodes.Add() = std::move(r);
      }
      if (!rewrite.what.empty()) record_.nodes.push_back({n.name(), n.op_type(), rewrite.what});
    }
  }

  static constexpr std::int64_t kInlineElements = 64;

  onnx::ModelProto& model_;
  std::string source_;
  OpsetConversion& record_;
  std::unordered_set<std::string> names_;
  bool in_main_graph_ = false;
  int inferred_through_ = -1;  ///< main-graph nodes in the prefix last inferred
  std::string inference_failure_;  ///< why that inference gave nothing, if it failed
  std::map<std::string, onnx::TypeProto> inferred_;  ///< value -> its inferred type
  std::map<std::string, int> constant_nodes_;  ///< Constant output -> its node in the main graph
};

// Initializers that only the rewritten nodes read (Reduce axes, Pad's pads and
// axes) are dropped with them; one listed as a graph input stays.
void DropUnreadInitializers(onnx::GraphProto& g) {
  std::set<std::string> reads, inputs;
  CollectReads(g, reads);
  for (const auto& i : g.input()) inputs.insert(i.name());
  auto* inits = g.mutable_initializer();
  inits->erase(std::remove_if(inits->begin(), inits->end(),
                              [&](const onnx::TensorProto& t) { return !reads.count(t.name()) && !inputs.count(t.name()); }),
               inits->end());
}

}  // namespace

void ConvertDown(onnx::ModelProto& model, const std::string& source, OpsetConversion& record) {
  DownConverter converter(model, source, record);
  converter.Run();
  DropUnreadInitializers(*model.mutable_graph());
  if (DefaultOpset(model) > kWorkingOpset) SetDefaultOpset(model, kWorkingOpset);
  model.set_ir_version(kWorkingIrVersion);
  record.to_opset = DefaultOpset(model);
  record.to_ir = kWorkingIrVersion;
  spdlog::warn("{}: converted from opset {} (IR {}) to opset {} (IR {}), {} node(s) rewritten; written models are at "
               "opset {}",
               source, record.from_opset, record.from_ir, record.to_opset, record.to_ir, record.nodes.size(),
               record.to_opset);
}

}  // namespace onnxfuse::load
