#include "load/shape_substitution.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <set>
#include <utility>

#include "ir/attributes.h"
#include "ir/tensor_io.h"
#include "ir/shape_inputs.h"
#include "load/proto_queries.h"

namespace onnxfuse {

namespace {

using Dim = SymbolicDim;
using Dims = SymbolicDims;

bool IsOne(const Dim& d) { return d.symbol.empty() && d.value == 1; }
bool Known(const Dim& d) { return d.symbol.empty(); }
bool AllKnown(const Dims& dims) { return std::all_of(dims.begin(), dims.end(), Known); }

// A type's dims as numbers and symbols; nullopt for an unknown rank or an
// anonymous dim (libonnx names those "unk__N").
std::optional<Dims> DimsOf(const TensorType& type) {
  if (!type.has_shape) return std::nullopt;
  Dims dims;
  for (std::size_t i = 0; i < type.dims.size(); ++i) {
    if (type.dims[i] >= 0) dims.push_back({type.dims[i], ""});
    else if (i < type.dim_params.size() && !type.dim_params[i].empty() && type.dim_params[i].rfind("unk__", 0) != 0)
      dims.push_back({0, type.dim_params[i]});
    else
      return std::nullopt;
  }
  return dims;
}

// ONNX Broadcasting.md, multidirectional, where it holds at every value of
// the symbols: each dim 1 or the same dim.
std::optional<Dims> Broadcast(const std::vector<Dims>& inputs) {
  std::size_t rank = 0;
  for (const Dims& d : inputs) rank = std::max(rank, d.size());
  Dims out(rank, Dim{1, ""});
  for (const Dims& d : inputs)
    for (std::size_t i = 0; i < d.size(); ++i) {
      Dim& o = out[rank - d.size() + i];
      if (IsOne(d[i])) continue;
      if (IsOne(o)) o = d[i];
      else if (!(o == d[i])) return std::nullopt;
    }
  return out;
}

std::int64_t Axis(std::int64_t axis, std::size_t rank) { return axis < 0 ? axis + static_cast<std::int64_t>(rank) : axis; }

// The ops whose first output has their first input's dims.
bool KeepsShape(const std::string& op) {
  static const std::set<std::string> kOps = {
      "Identity", "Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Floor",
      "Ceil", "Round", "Sign", "Not", "Cast", "CastLike", "Softmax", "LogSoftmax", "Hardmax", "Elu", "Selu",
      "LeakyRelu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Celu", "ThresholdedRelu", "Clip", "IsNaN",
      "IsInf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Mish",
      "Shrink", "LpNormalization", "Dropout", "LayerNormalization", "InstanceNormalization",
      "BatchNormalization", "MeanVarianceNormalization", "Gelu"};
  return kOps.count(op) > 0;
}

bool BroadcastsElementwise(const std::string& op) {
  static const std::set<std::string> kOps = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "And", "Or", "Xor",
                                             "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
                                             "Where", "Max", "Min", "Sum", "Mean", "BitShift", "PRelu"};
  return kOps.count(op) > 0;
}

bool IsReduction(const std::string& op) {
  static const std::set<std::string> kOps = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
                                             "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                                             "ReduceSumSquare", "ArgMax", "ArgMin"};
  return kOps.count(op) > 0;
}

// What one pass over the prepared graph knows: each value's dims, the
// constants among small initializers, and which integer values follow a symbol.
class Checker {
 public:
  explicit Checker(const Graph& graph) : graph_(graph), dims_(graph.values().size()), follows_(graph.values().size()) {
    for (ValueId v = 0; v < graph.values().size(); ++v) dims_[v] = DimsOf(graph.value(v).type);
  }

  const std::vector<std::optional<Dims>>& dims() const { return dims_; }

  // The elements of a small constant initializer, or nullptr.
  const Tensor* Constant(const std::string& name) {
    if (auto it = constants_.find(name); it != constants_.end()) return it->second.get();
    std::unique_ptr<Tensor> value;
    const std::optional<ValueId> v = graph_.FindValue(name);
    const onnx::TensorProto* proto = v ? graph_.ConstantTensor(*v) : nullptr;
    if (proto && graph_.value(*v).type.NumElements().value_or(kMaxSmall + 1) <= kMaxSmall) {
      try {
        value = std::make_unique<Tensor>(TensorFromProto(*proto, name));
      } catch (const std::exception&) {
        value.reset();
      }
    }
    return (constants_[name] = std::move(value)).get();
  }

  // Integer elements of a constant input `slot` of `node`, or nullopt.
  std::optional<std::vector<std::int64_t>> Ints(const Node& node, std::size_t slot) {
    if (slot >= node.num_explicit_inputs || node.inputs[slot] == kNoValue) return std::nullopt;
    const Tensor* t = Constant(graph_.value(node.inputs[slot]).name);
    if (!t || t->elem_type != onnx::TensorProto::INT64) return std::nullopt;
    return t->int_data;
  }

  // Checks `node` against its op's rule; "" when it holds, else the reason.
  // Slices record the per-call checks they need in `no_clamp`.
  template <typename NoClamp>
  std::string Check(const Node& node, std::vector<NoClamp>* no_clamp) {
    std::vector<Dims> in, out;
    bool symbolic = false, reads_follow_as_shape = false;
    for (std::size_t slot = 0; slot < node.num_explicit_inputs; ++slot) {
      const ValueId v = node.inputs[slot];
      if (v == kNoValue) {
        in.emplace_back();
        continue;
      }
      if (!dims_[v]) return "input '" + graph_.value(v).name + "' has no known dims";
      symbolic = symbolic || !AllKnown(*dims_[v]);
      reads_follow_as_shape = reads_follow_as_shape || (follows_[v] && ReadsAsShape(node.op_type, slot));
      in.push_back(*dims_[v]);
    }
    if (node.inputs.size() > node.num_explicit_inputs || HasSubgraph(node.proto)) return "it has a subgraph";
    for (ValueId v : node.outputs) {
      if (v == kNoValue) {
        out.emplace_back();
        continue;
      }
      if (!dims_[v]) return "output '" + graph_.value(v).name + "' has no known dims";
      symbolic = symbolic || !AllKnown(*dims_[v]);
      out.push_back(*dims_[v]);
    }
    // The shape values whose elements follow a symbol: Shape and Size of a
    // symbolic value, and what integer arithmetic makes of them.
    bool reads_follow = false;
    for (std::size_t slot = 0; slot < node.num_explicit_inputs; ++slot)
      reads_follow = reads_follow || (node.inputs[slot] != kNoValue && follows_[node.inputs[slot]]);
    const bool measures = node.op_type == "Shape" || node.op_type == "Size";
    for (ValueId v : node.outputs)  // any element type: a Cast to int32 or float still carries them
      if (v != kNoValue) follows_[v] = measures ? symbolic : reads_follow;

    // Reshape and Slice: the dims their shape values' elements give.
    std::optional<Dims> from_values;
    if (node.domain.empty()) from_values = values_.Visit(node.proto, TypeOf(), ValueOf());
    if (node.domain.empty() && (node.op_type == "Reshape" || node.op_type == "Slice")) {
      if (from_values) {
        if (out.empty() || !(out[0] == *from_values)) return "its output's dims differ from what its shape values give";
        return node.op_type == "Slice" ? CheckSlice(node, in, out[0], no_clamp) : "";
      }
    }
    if (!symbolic && !reads_follow_as_shape) return "";  // the same at every input shape
    if (!node.domain.empty()) return "no shape rule for domain '" + node.domain + "'";
    const std::string& op = node.op_type;
    std::optional<Dims> want;
    if (BroadcastsElementwise(op)) {
      want = Broadcast(in);
      if (!want) return "its inputs broadcast only at some values of their symbols";
    } else if (KeepsShape(op)) {
      if (in.empty() || out.empty()) return "no input or output";
      if (op == "LayerNormalization" || op == "BatchNormalization")
        for (std::size_t k = 1; k < out.size(); ++k)
          if (node.outputs[k] != kNoValue) return "it has statistics outputs";
      if (op == "Dropout" && out.size() > 1 && node.outputs[1] != kNoValue && !(out[1] == in[0])) return "its mask";
      want = in[0];
    } else if (op == "MatMul") {
      want = MatMul(in);
      if (!want) return "its operands' K or batch dims agree only at some values of their symbols";
    } else if (op == "Gemm") {
      want = Gemm(node, in);
      if (!want) return "its operands agree only at some values of their symbols";
    } else if (op == "Transpose") {
      std::vector<std::int64_t> perm = AttrInts(node, "perm");
      if (perm.empty())
        for (std::size_t i = in[0].size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
      if (perm.size() != in[0].size()) return "perm";
      want.emplace();
      for (std::int64_t p : perm) {
        if (p < 0 || p >= static_cast<std::int64_t>(in[0].size())) return "perm";
        want->push_back(in[0][static_cast<std::size_t>(p)]);
      }
    } else if (op == "Gather") {
      const std::int64_t axis = Axis(AttrInt(node, "axis", 0), in[0].size());
      if (in.size() < 2 || axis < 0 || axis >= static_cast<std::int64_t>(in[0].size())) return "axis";
      want = Dims(in[0].begin(), in[0].begin() + axis);
      want->insert(want->end(), in[1].begin(), in[1].end());
      want->insert(want->end(), in[0].begin() + axis + 1, in[0].end());
    } else if (op == "Shape") {
      const auto rank = static_cast<std::int64_t>(in[0].size());
      std::int64_t start = AttrInt(node, "start", 0), end = AttrInt(node, "end", rank);
      start = std::clamp<std::int64_t>(Axis(start, in[0].size()), 0, rank);
      end = std::clamp<std::int64_t>(Axis(end, in[0].size()), start, rank);
      want = Dims{{end - start, ""}};
    } else if (op == "Size") {
      want = Dims{};
    } else if (op == "Unsqueeze" || op == "Squeeze") {
      const std::optional<std::vector<std::int64_t>> axes = in.size() > 1 ? Ints(node, 1) : std::nullopt;
      if (!axes) return "its axes are not constant";
      want = op == "Unsqueeze" ? Unsqueeze(in[0], *axes) : Squeeze(in[0], *axes);
      if (!want) return "axes";
    } else if (op == "Concat") {
      want = Concat(in, AttrInt(node, "axis", 0));
      if (!want) return "its inputs agree only at some values of their symbols";
    } else if (op == "Flatten") {
      want = Flatten(in[0], Axis(AttrInt(node, "axis", 1), in[0].size()));
      if (!want) return "a product of symbols";
    } else if (IsReduction(op)) {
      want = Reduce(node, in);
      if (!want) return "its axes are not constant";
    } else {
      return "no shape rule for " + op + " with symbolic dims";
    }
    if (out.empty() || !(out[0] == *want)) return "its output's dims are not what its inputs give";
    return "";
  }

 private:
  static constexpr std::int64_t kMaxSmall = 4096;

  SymbolicShapeValues::TypeOf TypeOf() const {
    return [this](const std::string& name) -> std::optional<Dims> {
      const std::optional<ValueId> v = graph_.FindValue(name);
      return v ? dims_[*v] : std::nullopt;
    };
  }
  SymbolicShapeValues::ValueOf ValueOf() {
    return [this](const std::string& name) { return Constant(name); };
  }

  static std::optional<Dims> MatMul(const std::vector<Dims>& in) {
    if (in.size() < 2 || in[0].empty() || in[1].empty()) return std::nullopt;
    Dims a = in[0], b = in[1];
    const bool row = a.size() == 1, column = b.size() == 1;
    if (row) a.insert(a.begin(), Dim{1, ""});
    if (column) b.push_back(Dim{1, ""});
    if (!(a.back() == b[b.size() - 2])) return std::nullopt;
    std::optional<Dims> out = Broadcast({Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2)});
    if (!out) return std::nullopt;
    if (!row) out->push_back(a[a.size() - 2]);
    if (!column) out->push_back(b.back());
    return out;
  }

  static std::optional<Dims> Gemm(const Node& node, const std::vector<Dims>& in) {
    if (in.size() < 2 || in[0].size() != 2 || in[1].size() != 2) return std::nullopt;
    const bool ta = AttrInt(node, "transA", 0) != 0, tb = AttrInt(node, "transB", 0) != 0;
    const Dim m = in[0][ta ? 1 : 0], k = in[0][ta ? 0 : 1], k2 = in[1][tb ? 1 : 0], n = in[1][tb ? 0 : 1];
    if (!(k == k2)) return std::nullopt;
    const Dims out = {m, n};
    if (in.size() > 2 && !in[2].empty()) {  // C broadcasts to [M, N] one way
      const std::optional<Dims> c = Broadcast({out, in[2]});
      if (!c || !(*c == out)) return std::nullopt;
    }
    return out;
  }

  static std::optional<Dims> Unsqueeze(const Dims& in, const std::vector<std::int64_t>& axes) {
    const std::size_t rank = in.size() + axes.size();
    std::vector<bool> inserted(rank, false);
    for (std::int64_t a : axes) {
      const std::int64_t at = Axis(a, rank);
      if (at < 0 || at >= static_cast<std::int64_t>(rank) || inserted[static_cast<std::size_t>(at)]) return std::nullopt;
      inserted[static_cast<std::size_t>(at)] = true;
    }
    Dims out;
    std::size_t next = 0;
    for (std::size_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? Dim{1, ""} : in[next++]);
    return out;
  }

  static std::optional<Dims> Squeeze(const Dims& in, const std::vector<std::int64_t>& axes) {
    std::vector<bool> removed(in.size(), false);
    for (std::int64_t a : axes) {
      const std::int64_t at = Axis(a, in.size());
      if (at < 0 || at >= static_cast<std::int64_t>(in.size()) || !IsOne(in[static_cast<std::size_t>(at)]))
        return std::nullopt;
      removed[static_cast<std::size_t>(at)] = true;
    }
    Dims out;
    for (std::size_t i = 0; i < in.size(); ++i)
      if (!removed[i]) out.push_back(in[i]);
    return out;
  }

  static std::optional<Dims> Concat(const std::vector<Dims>& in, std::int64_t axis_attr) {
    if (in.empty()) return std::nullopt;
    const std::int64_t axis = Axis(axis_attr, in[0].size());
    if (axis < 0 || axis >= static_cast<std::int64_t>(in[0].size())) return std::nullopt;
    Dims out = in[0];
    const auto a = static_cast<std::size_t>(axis);
    if (!Known(out[a])) return std::nullopt;
    for (std::size_t k = 1; k < in.size(); ++k) {
      if (in[k].size() != out.size() || !Known(in[k][a])) return std::nullopt;
      for (std::size_t i = 0; i < out.size(); ++i)
        if (i != a && !(in[k][i] == out[i])) return std::nullopt;
      out[a].value += in[k][a].value;
    }
    return out;
  }

  // [product before axis, product from axis]: representable when each
  // product has at most one symbol and no other factor.
  static std::optional<Dims> Flatten(const Dims& in, std::int64_t axis) {
    if (axis < 0 || axis > static_cast<std::int64_t>(in.size())) return std::nullopt;
    const auto product = [](Dims::const_iterator begin, Dims::const_iterator end) -> std::optional<Dim> {
      Dim p{1, ""};
      for (auto it = begin; it != end; ++it) {
        if (Known(*it)) p.value *= it->value;
        else if (p.symbol.empty()) p.symbol = it->symbol;
        else return std::nullopt;
      }
      if (!p.symbol.empty() && p.value != 1) return std::nullopt;
      if (!p.symbol.empty()) p.value = 0;
      return p;
    };
    const std::optional<Dim> left = product(in.begin(), in.begin() + axis), right = product(in.begin() + axis, in.end());
    if (!left || !right) return std::nullopt;
    return Dims{*left, *right};
  }

  std::optional<Dims> Reduce(const Node& node, const std::vector<Dims>& in) {
    const bool arg = node.op_type == "ArgMax" || node.op_type == "ArgMin";
    std::vector<std::int64_t> axes;
    if (arg) {
      axes = {AttrInt(node, "axis", 0)};
    } else if (FindAttr(node, "axes")) {
      axes = AttrInts(node, "axes");
    } else if (in.size() > 1 && !in[1].empty()) {
      const std::optional<std::vector<std::int64_t>> given = Ints(node, 1);
      if (!given) return std::nullopt;
      axes = *given;
    }
    if (axes.empty() && AttrInt(node, "noop_with_empty_axes", 0) != 0) return in[0];
    const bool keep = AttrInt(node, "keepdims", 1) != 0;
    std::vector<bool> reduced(in[0].size(), axes.empty());
    for (std::int64_t a : axes) {
      const std::int64_t at = Axis(a, in[0].size());
      if (at < 0 || at >= static_cast<std::int64_t>(in[0].size())) return std::nullopt;
      reduced[static_cast<std::size_t>(at)] = true;
    }
    Dims out;
    for (std::size_t i = 0; i < in[0].size(); ++i) {
      if (!reduced[i]) out.push_back(in[0][i]);
      else if (keep) out.push_back(Dim{1, ""});
    }
    return out;
  }

  // A Slice of dims its shape values gave: exact while it does not clamp. Its
  // starts and steps must be constants (steps 1); an axis whose extent
  // follows a symbol is checked at each call against its data dim, a number.
  template <typename NoClamp>
  std::string CheckSlice(const Node& node, const std::vector<Dims>& in, const Dims& out, std::vector<NoClamp>* no_clamp) {
    const Dims& data = in[0];
    if (AllKnown(out) && AllKnown(data)) return "";  // the same at every input shape
    const std::optional<std::vector<std::int64_t>> starts = Ints(node, 1);
    if (!starts) return "its starts are not constant";
    std::vector<std::int64_t> axes;
    if (node.num_explicit_inputs > 3 && node.inputs[3] != kNoValue) {
      const std::optional<std::vector<std::int64_t>> given = Ints(node, 3);
      if (!given) return "its axes are not constant";
      axes = *given;
    } else {
      for (std::size_t i = 0; i < starts->size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
    }
    if (node.num_explicit_inputs > 4 && node.inputs[4] != kNoValue) {
      const std::optional<std::vector<std::int64_t>> steps = Ints(node, 4);
      if (!steps || std::any_of(steps->begin(), steps->end(), [](std::int64_t s) { return s != 1; }))
        return "its steps are not constant ones";
    }
    if (axes.size() != starts->size() || out.size() != data.size()) return "its starts and axes";
    std::vector<bool> sliced(data.size(), false);
    for (std::size_t k = 0; k < axes.size(); ++k) {
      const std::int64_t at = Axis(axes[k], data.size());
      if (at < 0 || at >= static_cast<std::int64_t>(data.size())) return "its axes";
      const auto a = static_cast<std::size_t>(at);
      sliced[a] = true;
      if (Known(out[a])) continue;  // a number: the same at every input shape
      if (out[a] == data[a] && (*starts)[k] == 0) continue;  // the whole axis, as long as it is
      if (!Known(data[a]) || (*starts)[k] < 0) return "a symbolic extent of a symbolic or negative start";
      no_clamp->push_back(NoClamp{(*starts)[k], out[a], data[a].value});
    }
    for (std::size_t i = 0; i < data.size(); ++i)
      if (!sliced[i] && !(out[i] == data[i])) return "an axis it does not slice changes";
    return "";
  }

  const Graph& graph_;
  std::vector<std::optional<Dims>> dims_;
  std::vector<bool> follows_;
  std::map<std::string, std::unique_ptr<Tensor>> constants_;
  SymbolicShapeValues values_;
};

}  // namespace

std::optional<ShapeSubstitution> ShapeSubstitution::Of(const Graph& prepared, std::string* why) {
  const auto refuse = [&](const std::string& reason) -> std::optional<ShapeSubstitution> {
    if (why) *why = reason;
    return std::nullopt;
  };
  ShapeSubstitution s;
  Checker checker(prepared);
  std::set<std::string> symbols;
  for (ValueId v : prepared.inputs()) {
    const std::optional<Dims>& dims = checker.dims()[v];
    if (!dims) return refuse("input '" + prepared.value(v).name + "' has no known dims");
    for (const Dim& d : *dims)
      if (!Known(d)) symbols.insert(d.symbol);
    s.inputs_.emplace_back(prepared.value(v).name, *dims);
  }
  if (symbols.empty()) return refuse("no input dim is a symbol");
  for (NodeId id = 0; id < prepared.num_nodes(); ++id) {
    const Node& node = prepared.node(id);
    if (const std::string reason = checker.Check(node, &s.no_clamp_); !reason.empty())
      return refuse("node '" + node.name + "' (" + node.op_type + "): " + reason);
  }
  for (ValueId v = 0; v < prepared.values().size(); ++v) {
    const std::optional<Dims>& dims = checker.dims()[v];
    if (!dims) {
      if (prepared.value(v).producer != kNoNode || prepared.value(v).is_graph_output)
        return refuse("value '" + prepared.value(v).name + "' has no known dims");
      continue;
    }
    for (const Dim& d : *dims)
      if (!Known(d) && !symbols.count(d.symbol))
        return refuse("value '" + prepared.value(v).name + "' has dim '" + d.symbol + "', which no input declares");
  }
  s.dims_ = checker.dims();
  return s;
}

std::optional<std::vector<std::optional<std::vector<std::int64_t>>>> ShapeSubstitution::At(
    const std::map<std::string, std::vector<std::int64_t>>& input_shapes) const {
  std::map<std::string, std::int64_t> bound;
  for (const auto& [name, declared] : inputs_) {
    auto it = input_shapes.find(name);
    if (it == input_shapes.end()) {
      if (!AllKnown(declared)) return std::nullopt;  // a symbol left open
      continue;
    }
    if (it->second.size() != declared.size()) return std::nullopt;
    for (std::size_t i = 0; i < declared.size(); ++i) {
      const std::int64_t given = it->second[i];
      if (Known(declared[i])) {
        if (declared[i].value != given) return std::nullopt;
        continue;
      }
      if (given < 1) return std::nullopt;
      auto [at, fresh] = bound.emplace(declared[i].symbol, given);
      if (!fresh && at->second != given) return std::nullopt;
    }
  }
  const auto value = [&](const Dim& d) -> std::int64_t {
    return Known(d) ? d.value : bound.at(d.symbol) + d.value;
  };
  for (const NoClamp& check : no_clamp_)
    if (!bound.count(check.extent.symbol) || check.start + value(check.extent) > check.data_dim) return std::nullopt;
  std::vector<std::optional<std::vector<std::int64_t>>> dims(dims_.size());
  for (std::size_t v = 0; v < dims_.size(); ++v) {
    if (!dims_[v]) continue;
    std::vector<std::int64_t> concrete;
    for (const Dim& d : *dims_[v]) {
      if (!Known(d) && !bound.count(d.symbol)) return std::nullopt;
      concrete.push_back(value(d));
    }
    dims[v] = std::move(concrete);
  }
  return dims;
}

}  // namespace onnxfuse
