#include "load/symbolic_shape_values.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "ir/attributes.h"

namespace onnxfuse {

namespace {

// The dim_param libonnx's inference gives a dim it cannot name ("unk__0",
// "unk__1", ...): one unknown extent each, which no other dim is known to share.
constexpr const char* kUnknownPrefix = "unk__";

bool HasSymbol(const SymbolicDims& dims) {
  return std::any_of(dims.begin(), dims.end(), [](const SymbolicDim& d) { return !d.symbol.empty(); });
}

// Attribute `name`'s ints (axes of Unsqueeze and Squeeze before opset 13), or none.
std::optional<std::vector<std::int64_t>> IntsAttribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
  return std::nullopt;
}

// A known integer (no symbol) of `dims`, or nullopt.
std::optional<std::int64_t> KnownInt(const SymbolicDims& dims, std::size_t i) {
  if (i >= dims.size() || !dims[i].symbol.empty()) return std::nullopt;
  return dims[i].value;
}

// A product of dims: a known factor times symbols (sorted, with repeats).
struct Product {
  std::int64_t factor = 1;
  std::vector<std::string> symbols;
};

std::optional<Product> ProductOf(const SymbolicDims& dims) {
  Product p;
  for (const SymbolicDim& d : dims) {
    if (!d.symbol.empty()) {
      if (d.value != 0) return std::nullopt;
      p.symbols.push_back(d.symbol);
    } else if (d.value < 0 || (d.value > 0 && p.factor > std::numeric_limits<std::int64_t>::max() / d.value)) {
      return std::nullopt;
    } else {
      p.factor *= d.value;
    }
  }
  std::sort(p.symbols.begin(), p.symbols.end());
  return p;
}

}  // namespace

std::optional<SymbolicDims> DimsOfType(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  SymbolicDims dims;
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (d.has_dim_value()) dims.push_back({d.dim_value(), ""});
    else if (d.has_dim_param() && !d.dim_param().empty() && d.dim_param().rfind(kUnknownPrefix, 0) != 0)
      dims.push_back({0, d.dim_param()});
    else return std::nullopt;
  }
  return dims;
}

std::optional<SymbolicDims> SymbolicShapeValues::Recorded(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() ? std::optional<SymbolicDims>(it->second) : std::nullopt;
}

std::optional<SymbolicDims> SymbolicShapeValues::Elements(const std::string& name, const ValueOf& value_of) const {
  if (std::optional<SymbolicDims> recorded = Recorded(name)) return recorded;
  const Tensor* t = name.empty() ? nullptr : value_of(name);
  if (!t || t->elem_type != onnx::TensorProto::INT64 || t->dims.size() > 1) return std::nullopt;
  SymbolicDims dims;
  for (std::int64_t v : t->int_data) dims.push_back({v, ""});
  return dims;
}

std::optional<SymbolicDims> SymbolicShapeValues::Visit(const onnx::NodeProto& node, const TypeOf& type_of,
                                                       const ValueOf& value_of) {
  const std::string& op = node.op_type();
  if (op == "Slice" && node.input_size() >= 3 && !values_.count(node.input(0))) return SliceDims(node, type_of, value_of);
  if (op == "Reshape" && node.input_size() == 2) return ReshapeDims(node, type_of, value_of);
  if (node.output_size() < 1 || node.input_size() < 1) return std::nullopt;
  std::optional<SymbolicDims> result;
  if (op == "Shape") {
    std::optional<SymbolicDims> dims = type_of(node.input(0));
    if (!dims) return std::nullopt;
    const auto rank = static_cast<std::int64_t>(dims->size());
    std::int64_t start = AttrInt(node, "start", 0), end = AttrInt(node, "end", rank);
    start = std::clamp<std::int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<std::int64_t>(end < 0 ? end + rank : end, start, rank);
    result = SymbolicDims(dims->begin() + start, dims->begin() + end);
  } else if (op == "Identity" || op == "Cast" || op == "Squeeze" || op == "Unsqueeze") {
    // The elements stay as they are: a scalar becomes one element, and back.
    if (op == "Cast" && AttrInt(node, "to", 0) != onnx::TensorProto::INT64 &&
        AttrInt(node, "to", 0) != onnx::TensorProto::INT32)
      return std::nullopt;
    result = Recorded(node.input(0));
    if (result && (op == "Squeeze" || op == "Unsqueeze")) {
      const auto axes = node.input_size() > 1 ? Elements(node.input(1), value_of) : std::nullopt;
      const bool only_axis_0 = axes ? axes->size() == 1 && KnownInt(*axes, 0) == 0
                                    : IntsAttribute(node, "axes").value_or(std::vector<std::int64_t>{0}) ==
                                          std::vector<std::int64_t>{0};
      if (!only_axis_0 || result->size() != 1) return std::nullopt;  // only scalar <-> [1]
    }
  } else if (op == "Gather") {
    const std::optional<SymbolicDims> data = Recorded(node.input(0));
    const std::optional<SymbolicDims> indices = node.input_size() > 1 ? Elements(node.input(1), value_of) : std::nullopt;
    if (!data || !indices || AttrInt(node, "axis", 0) != 0) return std::nullopt;
    result.emplace();
    const auto size = static_cast<std::int64_t>(data->size());
    for (std::size_t i = 0; i < indices->size(); ++i) {
      std::optional<std::int64_t> at = KnownInt(*indices, i);
      if (!at || *at < -size || *at >= size) return std::nullopt;
      result->push_back((*data)[static_cast<std::size_t>(*at < 0 ? *at + size : *at)]);
    }
  } else if ((op == "Add" || op == "Sub") && node.input_size() == 2) {
    // One element plus or minus a known integer (past + 1).
    const std::optional<SymbolicDims> a = Elements(node.input(0), value_of), b = Elements(node.input(1), value_of);
    if (!a || !b || a->size() != 1 || b->size() != 1) return std::nullopt;
    const std::optional<std::int64_t> right = KnownInt(*b, 0);
    if (!right) return std::nullopt;
    result = SymbolicDims{{(*a)[0].value + (op == "Add" ? *right : -*right), (*a)[0].symbol}};
  } else if (op == "Concat") {
    if (AttrInt(node, "axis", 0) != 0 && AttrInt(node, "axis", 0) != -1) return std::nullopt;
    result.emplace();
    for (const std::string& in : node.input()) {
      std::optional<SymbolicDims> part = Elements(in, value_of);
      if (!part) return std::nullopt;
      result->insert(result->end(), part->begin(), part->end());
    }
  }
  if (result) values_[node.output(0)] = *result;
  return std::nullopt;
}

std::optional<SymbolicDims> SymbolicShapeValues::SliceDims(const onnx::NodeProto& node, const TypeOf& type_of,
                                                           const ValueOf& value_of) const {
  std::optional<SymbolicDims> dims = type_of(node.input(0));
  if (!dims) {
    const Tensor* data = value_of(node.input(0));
    if (!data) return std::nullopt;
    dims.emplace();
    for (std::int64_t d : data->dims) dims->push_back({d, ""});
  }
  const std::optional<SymbolicDims> starts = Elements(node.input(1), value_of);
  const std::optional<SymbolicDims> ends = Elements(node.input(2), value_of);
  if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
  const std::optional<SymbolicDims> axes =
      node.input_size() > 3 && !node.input(3).empty() ? Elements(node.input(3), value_of) : std::nullopt;
  const std::optional<SymbolicDims> steps =
      node.input_size() > 4 && !node.input(4).empty() ? Elements(node.input(4), value_of) : std::nullopt;
  if ((node.input_size() > 3 && !node.input(3).empty() && !axes) || (node.input_size() > 4 && !node.input(4).empty() && !steps))
    return std::nullopt;
  const auto rank = static_cast<std::int64_t>(dims->size());
  SymbolicDims out = *dims;
  for (std::size_t i = 0; i < starts->size(); ++i) {
    std::int64_t axis = static_cast<std::int64_t>(i);
    if (axes) {
      const std::optional<std::int64_t> a = KnownInt(*axes, i);
      if (!a || *a < -rank || *a >= rank) return std::nullopt;
      axis = *a < 0 ? *a + rank : *a;
    }
    if (steps && KnownInt(*steps, i) != 1) return std::nullopt;
    const std::optional<std::int64_t> start = KnownInt(*starts, i), end = KnownInt(*ends, i);
    const SymbolicDim &from = (*starts)[i], &to = (*ends)[i];
    SymbolicDim& d = out[static_cast<std::size_t>(axis)];
    if (start == 0 && !end && to.value == 0) {
      d = to;  // [0, symbol): the symbol, unclamped (see the header)
    } else if (!start && !end && from.symbol == to.symbol && to.value >= from.value) {
      d = {to.value - from.value, ""};  // [past, past + 1): 1, unclamped
    } else if (start && end && d.symbol.empty()) {
      const std::int64_t n = d.value;
      const std::int64_t s = std::clamp<std::int64_t>(*start < 0 ? *start + n : *start, 0, n);
      const std::int64_t e = std::clamp<std::int64_t>(*end < 0 ? *end + n : *end, 0, n);
      d = {std::max<std::int64_t>(0, e - s), ""};
    } else if (start == 0 && end == std::numeric_limits<std::int64_t>::max()) {
      // the whole axis, whatever it is
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<SymbolicDims> SymbolicShapeValues::ReshapeDims(const onnx::NodeProto& node, const TypeOf& type_of,
                                                             const ValueOf& value_of) const {
  const std::optional<SymbolicDims> in = type_of(node.input(0));
  const std::optional<SymbolicDims> shape = Elements(node.input(1), value_of);
  if (!in || !shape || AttrInt(node, "allowzero", 0) != 0) return std::nullopt;
  // ONNX Reshape: 0 copies the input's dim at that index, -1 (at most one) is
  // what the element count leaves; the count's symbols must cancel for it.
  SymbolicDims out;
  std::optional<std::size_t> inferred;
  for (std::size_t i = 0; i < shape->size(); ++i) {
    const SymbolicDim& d = (*shape)[i];
    if (d.symbol.empty() && d.value == 0) {
      if (i >= in->size()) return std::nullopt;
      out.push_back((*in)[i]);
    } else if (d.symbol.empty() && d.value == -1) {
      if (inferred) return std::nullopt;
      inferred = i;
      out.push_back({});
    } else if (d.symbol.empty() && d.value < 0) {
      return std::nullopt;
    } else {
      out.push_back(d);
    }
  }
  if (inferred) {
    SymbolicDims rest = out;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(*inferred));
    const std::optional<Product> total = ProductOf(*in), known = ProductOf(rest);
    if (!total || !known || known->factor == 0 || total->factor % known->factor != 0) return std::nullopt;
    std::vector<std::string> left;
    std::set_difference(total->symbols.begin(), total->symbols.end(), known->symbols.begin(), known->symbols.end(),
                        std::back_inserter(left));
    if (!std::includes(total->symbols.begin(), total->symbols.end(), known->symbols.begin(), known->symbols.end()))
      return std::nullopt;
    const std::int64_t factor = total->factor / known->factor;
    if (left.empty()) out[*inferred] = {factor, ""};
    else if (left.size() == 1 && factor == 1) out[*inferred] = {0, left[0]};
    else return std::nullopt;
  }
  if (std::any_of(out.begin(), out.end(), [](const SymbolicDim& d) { return !d.symbol.empty() && d.value != 0; }))
    return std::nullopt;
  return HasSymbol(out) ? std::optional<SymbolicDims>(out) : std::nullopt;
}

}  // namespace onnxfuse
