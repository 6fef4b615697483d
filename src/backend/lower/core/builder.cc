// The Builder: the values being lowered, constants and activations, and their
// uses (builder.h); packing constants and emitting steps: builder_emit.cc.
#include "backend/lower/core/builder.h"

#include <algorithm>
#include <utility>

#include "ir/node_label.h"
#include "eval/host_tensor.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

namespace {
constexpr int kGraphOutputUses = 1 << 28;  // graph outputs are never dead
}

bool IsSlowImpl(const std::string& kind, const std::string& impl) {
  // oneDNN 2.6 names its RNN driver "ref" when it runs the cell's products on
  // its jit sgemm rather than on brgemm (GRU, lbr_gru): not a reference loop.
  // The 2-layer bidirectional GRU (hidden 128, 50 steps) runs
  // so at 0.72x ONNX Runtime's time on one thread.
  if (kind == "lstm" || kind == "gru" || kind == "lbr_gru" || kind == "rnn") return false;
  // "ref:any", and the reference kernels named after their primitive
  // ("bnorm_ref:any" for batch normalization).
  if (impl.rfind("ref", 0) == 0 || impl.find("_ref:") != std::string::npos) return true;
  // oneDNN's gemm convolutions (im2col + sgemm); our own GEMM convolution
  // ("onnxfuse:gemm", backend/kernels/gemm.h) reads its rows in place at the
  // GEMM's speed and is not one of them, nor is oneDNN's convolution as an
  // inner product ("ip:x64:gemm:jit": a kernel that covers the whole input,
  // one product with no im2col), an inner product like those above.
  return (kind == "conv" || kind == "deconv") && impl.find("gemm") != std::string::npos &&
         impl.rfind("onnxfuse:", 0) != 0 && impl.rfind("ip:", 0) != 0;
}

bool IsSlowPrimitive(const std::string& kind, const dnnl::primitive_desc_base& pd) {
  const std::string impl = pd.impl_info_str();
  if (!IsSlowImpl(kind, impl)) return false;
  if (kind != "deconv" || impl.find("gemm") == std::string::npos) return true;
  // The weights' spatial dims are the last src-rank - 2 (a grouped one has a leading group dim).
  const dnnl::memory::desc weights = pd.query_md(dnnl::query::weights_md, 0), src = pd.query_md(dnnl::query::src_md, 0);
  const int spatial = src.data.ndims - 2;
  for (int d = weights.data.ndims - spatial; d < weights.data.ndims; ++d)
    if (weights.data.dims[d] != 1) return true;
  return false;
}

Builder::Builder(const Graph& g, bool fuse_mode, dnnl::engine eng, PackedConstants* packed, Graph* releasable)
    : graph(g), fuse(fuse_mode), engine(std::move(eng)), stream(engine), absorbed(g.num_nodes(), false),
      packed_(packed), releasable_(releasable) {
  std::size_t n = graph.values().size();
  consts_.resize(n);
  folded_released_.resize(n, false);
  deferred_.resize(n, kNoNode);
  acts_.resize(n);
  alternates_.resize(n);
  remaining_.resize(n);
  for (ValueId v = 0; v < n; ++v) {
    remaining_[v] = static_cast<int>(graph.value(v).consumers.size());
    if (graph.value(v).is_graph_output) remaining_[v] += kGraphOutputUses;
  }
}

std::vector<bool> Builder::VaryingDimsOf(ValueId v) const {
  const Value& value = graph.value(v);
  const std::size_t rank = value.type.dims.size();
  return varying_dims ? VaryingDimsAt(*varying_dims, value.name, rank) : std::vector<bool>(rank, false);
}

bool Builder::DimsVary(ValueId v) const {
  const std::vector<bool> varying = VaryingDimsOf(v);
  return std::find(varying.begin(), varying.end(), true) != varying.end();
}

bool Builder::IsConst(ValueId v) const {
  return consts_[v] != nullptr || graph.IsConstant(v) || folded_released_[v] || deferred_[v] != kNoNode;
}

bool Builder::HasConstData(ValueId v) const {
  return consts_[v] != nullptr || graph.ConstantTensor(v) != nullptr || deferred_[v] != kNoNode;
}

void Builder::DeferFold(ValueId v, NodeId producer) { deferred_[v] = producer; }

const Tensor& Builder::Const(ValueId v, const Node& user) {
  if (!consts_[v] && deferred_[v] != kNoNode) {
    const NodeId producer = std::exchange(deferred_[v], kNoNode);
    if (!fold || !fold(*this, producer) || !consts_[v])
      throw Error(ErrorKind::kInternal, "internal error: " + NodeLabel(user) + " reads '" + graph.value(v).name +
                                            "', which could not be evaluated at build time after all");
  }
  if (!consts_[v]) {
    const onnx::TensorProto* proto = graph.ConstantTensor(v);
    if (!proto && (graph.IsReleased(v) || folded_released_[v]))
      throw Error(ErrorKind::kInternal, "internal error: " + NodeLabel(user) + " reads initializer '" +
                                            graph.value(v).name + "' after its data was released");
    if (!proto)
      throw Error(ErrorKind::kUnsupported, NodeInFile(graph, user) + ": input '" +
                                               graph.value(v).name + "' must be a constant known at build time");
    const std::string& name = graph.value(v).name;
    if (const std::string key = SharedKey(v); !key.empty()) {
      if (auto it = packed_->decoded.find(key); it != packed_->decoded.end()) return *(consts_[v] = it->second);
    }
    consts_[v] = std::make_shared<const Tensor>(TensorFromProto(*proto, graph.source_path() + ": '" + name + "'"));
  }
  return *consts_[v];
}

std::string Builder::SharedKey(ValueId v) const {
  // Only a constant read in place from the model every compile borrows from
  // is the same tensor in each: a stage's own constants (the values a staged
  // run knew) share names, not values.
  const Graph* owner = graph.BorrowedFrom(v);
  if (!packed_ || !owner) return {};
  return std::to_string(reinterpret_cast<std::uintptr_t>(owner)) + ":" + graph.value(v).name;
}

std::shared_ptr<const Tensor> Builder::SharedConst(ValueId v, const Node& user) {
  Const(v, user);
  if (const std::string key = SharedKey(v); !key.empty()) packed_->decoded.emplace(key, consts_[v]);
  return consts_[v];
}

bool Builder::ConstFact(ValueId v, const Node& user, const std::string& fact,
                        const std::function<bool(const Tensor&)>& test) {
  const std::string key = SharedKey(v);
  if (key.empty()) return test(Const(v, user));
  const auto found = packed_->facts.find(key + "#" + fact);
  if (found != packed_->facts.end()) return found->second;
  return packed_->facts[key + "#" + fact] = test(*SharedConst(v, user));
}

dnnl::memory::desc StorageDesc(const Dims& dims, std::int32_t elem_type) {
  if (elem_type == onnx::TensorProto::FLOAT) return PlainDesc(dims);
  Dims pairs = dims;
  pairs.push_back(2);  // an int64 as two s32 words: oneDNN 2.6 has no s64
  return dnnl::memory::desc(pairs, dnnl::memory::data_type::s32, eval::DenseStrides(pairs));
}

const Act& Builder::AnyActOf(ValueId v, const Node& user) const {
  if (!IsAct(v))
    throw Error(ErrorKind::kInternal, "internal error: " + NodeLabel(user) + " reads '" + graph.value(v).name +
                                          "' before it is computed");
  return *acts_[v];
}

const Act& Builder::ActOf(ValueId v, const Node& user) const {
  const Act& act = AnyActOf(v, user);
  if (act.elem_type != onnx::TensorProto::FLOAT)
    throw Error(ErrorKind::kUnsupported, NodeInFile(graph, user) + ": input '" +
                                             graph.value(v).name + "' is an integer or bool tensor computed at run "
                                             "time, which this lowering does not take");
  return act;
}

Dims Builder::DimsOfValue(ValueId v, const Node& user) {  // any storage type
  if (IsAct(v)) return acts_[v]->dims;
  return ConstDims(v, user);  // a constant's dims need no decoding of its data
}

Dims Builder::ConstDims(ValueId v, const Node& user) {
  const onnx::TensorProto* proto = consts_[v] ? nullptr : graph.ConstantTensor(v);
  if (!proto) return Const(v, user).dims;  // decoded already, or its error
  return Dims(proto->dims().begin(), proto->dims().end());  // checked against its data by the loader
}

void Builder::SetConst(ValueId v, Tensor t) { consts_[v] = std::make_shared<const Tensor>(std::move(t)); }

void Builder::ConstAsAct(ValueId v, const Node& user) {
  const Tensor& t = Const(v, user);
  if (t.elem_type != onnx::TensorProto::FLOAT)
    throw Error(ErrorKind::kUnsupported, NodeInFile(graph, user) + ": input '" +
                                             graph.value(v).name + "' is a non-float32 constant that only a run-time computation could use");
  const dnnl::memory::desc md = PlainDesc(t.dims);
  const Arg source{-1, md, HostMemory(md, t.data.data())};
  SetAct(v, EmitReorder(source, t.dims, md, user.name));
}

void Builder::SetAct(ValueId v, Act act) {
  const TensorType& type = graph.value(v).type;
  bool known = type.has_shape;
  for (auto d : type.dims) known &= d >= 0;
  if (known && type.dims != act.dims) {
    if (!defaulted_inputs.empty())  // the guess of 1 for an unknown input dim was wrong
      throw Error(ErrorKind::kUnsupported,
                  graph.source_path() + ": graph input '" + defaulted_inputs.front() +
                      "' has unknown dims, taken as 1, but then '" + graph.value(v).name + "' would be " +
                      DimsString(act.dims) + " where the model says " + type.ShapeString() +
                      ": give the input's shape with --input-shape");
    throw Error(ErrorKind::kInternal, "internal error: computed shape " + DimsString(act.dims) + " of '" +
                                          graph.value(v).name +
                                          "' differs from the inferred " + type.ShapeString());
  }
  if (act.elem_type == onnx::TensorProto::FLOAT && IsPlainEquivalent(act.md)) act.md = PlainDesc(act.dims);  // one spelling of plain
  if (std::find(slots[act.slot].values.begin(), slots[act.slot].values.end(), v) == slots[act.slot].values.end())
    AddToSlot(act.slot, v);
  acts_[v] = std::move(act);
}

void Builder::Consume(const Node& node) {
  for (std::size_t i = 0; i < node.num_explicit_inputs; ++i)
    if (node.inputs[i] != kNoValue) --remaining_[node.inputs[i]];
}

void Builder::ReleaseConsts(const std::vector<NodeId>& nodes) {
  auto release = [&](ValueId v) {
    if (v == kNoValue || remaining_[v] > 0 || graph.value(v).is_graph_output) return;
    if (graph.ConstantTensor(v)) {
      consts_[v].reset();
      if (releasable_) releasable_->ReleaseInitializer(v);
    } else if (!graph.IsConstant(v) && (consts_[v] || deferred_[v] != kNoNode) && !IsAct(v)) {
      consts_[v].reset();  // folded at build time (a DequantizeLinear's float weights), or never, and read no more
      deferred_[v] = kNoNode;
      folded_released_[v] = true;
    }
  };
  // A DequantizeLinear's integer weights and scales stay until its output's
  // readers are lowered: an int8 convolution takes them from there
  // (backend/lower/fused/int8_conv.h), not from the folded float weights.
  auto dequantize_read = [&](const Node& n) {
    return n.op_type == "DequantizeLinear" && !n.outputs.empty() && remaining_[n.outputs[0]] > 0;
  };
  for (NodeId id : nodes) {
    const Node& node = graph.node(id);
    if (dequantize_read(node)) continue;
    for (ValueId v : node.inputs) {
      release(v);
      const NodeId producer = v == kNoValue ? kNoNode : graph.value(v).producer;
      if (producer != kNoNode && graph.node(producer).op_type == "DequantizeLinear" && remaining_[v] <= 0)
        for (ValueId u : graph.node(producer).inputs) release(u);
    }
  }
}

bool Builder::DeadNow(int slot, const Node* reading) const {
  auto uses_by_reading = [&](ValueId v) {
    if (!reading) return 0;
    return static_cast<int>(std::count(reading->inputs.begin(), reading->inputs.begin() + static_cast<std::ptrdiff_t>(reading->num_explicit_inputs), v));
  };
  auto dead = [&](int i) {
    const Slot& s = slots[static_cast<std::size_t>(i)];
    if (s.graph_output) return false;
    for (ValueId v : s.values)
      if (remaining_[v] - uses_by_reading(v) > 0) return false;
    return true;
  };
  const int root = RootOf(slot);
  if (!dead(root)) return false;
  const auto views = views_of_.find(root);
  if (views == views_of_.end()) return true;
  return std::all_of(views->second.begin(), views->second.end(), dead);
}

int Builder::RootOf(int slot) const {
  const int root = slots[static_cast<std::size_t>(slot)].root;
  return root >= 0 ? root : slot;
}

Act Builder::NewView(int slot, std::int64_t byte_offset, const Dims& dims, const dnnl::memory::desc& md) {
  if (byte_offset == 0) return Act{slot, md, dims};
  Slot view;
  view.root = RootOf(slot);
  view.view_offset = slots[static_cast<std::size_t>(slot)].view_offset + byte_offset;
  slots.push_back(view);
  views_of_[view.root].push_back(static_cast<int>(slots.size() - 1));
  return Act{static_cast<int>(slots.size() - 1), md, dims};
}

Act Builder::NewAct(const Dims& dims, const dnnl::memory::desc& md) {
  Slot slot;
  slot.bytes = static_cast<std::int64_t>(md.get_size());
  slots.push_back(slot);
  return Act{static_cast<int>(slots.size() - 1), md, dims};
}

Arg Builder::Use(ValueId v, const dnnl::memory::desc& want, const Node& user) {
  return UseAct(ActOf(v, user), v, want, user);
}

Arg Builder::UseQuantized(ValueId v, const dnnl::memory::desc& want, const Node& user) {
  const Act& a = AnyActOf(v, user);
  if ((a.elem_type != onnx::TensorProto::UINT8 && a.elem_type != onnx::TensorProto::INT8) ||
      want.data_type() != a.md.data_type())
    throw Error(ErrorKind::kInternal, "internal error: " + NodeLabel(user) + " reads '" + graph.value(v).name +
                                          "' as an 8-bit integer tensor of its own type, which it is not");
  return UseAct(a, v, want, user);
}

Arg Builder::UseAct(const Act& a, ValueId v, const dnnl::memory::desc& want, const Node& user) {
  // oneDNN calls two descriptors equal when they differ only in the strides
  // of dims of size 1, but its binary kernel then reads src1 with other
  // offsets than src0 (onednn_limits.h, limit 5): the reader gets exactly `want`.
  if (a.md == want) return Arg{a.slot, want, {}};
  if (IsPlainEquivalent(a.md) && IsPlainEquivalent(want) && Product(a.md.dims()) == Product(want.dims()))
    return Arg{a.slot, want, {}};
  if (SameBytes(a.md, want)) return Arg{a.slot, want, {}};
  // A plain `want` of other dims (a collapsed matmul's [B*M, K] of a blocked
  // [B, M, K]): v made plain with its own dims, then seen with want's. A
  // reorder cannot change dims.
  if (IsPlainEquivalent(want) && want.dims() != a.dims && Product(want.dims()) == Product(a.dims))
    return Arg{Use(v, PlainDesc(a.dims), user).slot, want, {}};
  for (const Act& alt : alternates_[v])
    if (alt.md == want) return Arg{alt.slot, want, {}};  // exactly `want`, as above
  Act alt = EmitReorder(Arg{a.slot, a.md, {}}, a.dims, want, user.name, DimsVary(v));
  AddToSlot(alt.slot, v);
  alternates_[v].push_back(alt);
  return Arg{alt.slot, alt.md, {}};
}

Arg Builder::UsePlain(ValueId v, const Node& user) { return Use(v, PlainDesc(ActOf(v, user).dims), user); }

Arg Builder::UseAsIs(ValueId v, const Node& user) {
  const Act& a = ActOf(v, user);
  return Arg{a.slot, a.md, {}};
}

}  // namespace onnxfuse::backend
