#include "load/shape_substitution.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <set>
#include <utility>

#include "ir/tensor_io.h"
#include "ir/shape_inputs.h"
#include "load/proto_queries.h"
#include "load/symbolic_shape_rules.h"

namespace onnxfuse {

namespace {

using Dim = SymbolicDim;
using Dims = SymbolicDims;

bool Known(const Dim& d) { return d.symbol.empty(); }
std::int64_t Axis(std::int64_t axis, std::size_t rank) { return axis < 0 ? axis + static_cast<std::int64_t>(rank) : axis; }

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
      } catch (const std::exception&) {  // no data here: not a constant to read
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
  std::string Check(const Node& node, std::vector<ShapeSubstitution::NoClamp>* no_clamp) {
    std::vector<Dims> in, out;
    // Shape values whose elements follow a symbol: Shape and Size of a
    // symbolic value, and what arithmetic makes of them.
    bool symbolic = false, reads_follow = false, reads_follow_as_shape = false;
    for (std::size_t slot = 0; slot < node.num_explicit_inputs; ++slot) {
      const ValueId v = node.inputs[slot];
      if (v == kNoValue) {
        in.emplace_back();
        continue;
      }
      if (!dims_[v]) return "input '" + graph_.value(v).name + "' has no known dims";
      symbolic = symbolic || !AllKnown(*dims_[v]);
      reads_follow = reads_follow || follows_[v];
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
    std::string why;
    const std::optional<Dims> want = RuleOutputDims(
        node, in, [this](const Node& n, std::size_t slot) { return Ints(n, slot); }, &why);
    if (!want) return why;
    // Dropout's mask, its one other output that a rule leaves out, has its input's dims.
    if (node.op_type == "Dropout" && out.size() > 1 && node.outputs[1] != kNoValue && !(out[1] == in[0]))
      return "its mask";
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

  // A Slice of dims its shape values gave: exact while it does not clamp. Its
  // starts and steps must be constants (steps 1); an axis whose extent
  // follows a symbol is checked at each call against its data dim, a number.
  std::string CheckSlice(const Node& node, const std::vector<Dims>& in, const Dims& out,
                         std::vector<ShapeSubstitution::NoClamp>* no_clamp) {
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
      no_clamp->push_back({(*starts)[k], out[a], data[a].value});
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
