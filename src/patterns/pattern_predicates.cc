#include "patterns/pattern_predicates.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <sstream>
#include <vector>

#include <onnx/defs/tensor_proto_util.h>

#include "ir/node_label.h"
#include "ir/tensor_values.h"
#include "onnxfuse/error.h"
#include "ir/tensor_data.h"

namespace onnxfuse::detail {

using onnx::AttributeProto;

namespace {

enum class ArgKind { kValue, kAttribute };

struct PredicateSpec {
  const char* name;
  std::vector<ArgKind> args;  ///< fixed arguments; empty = one or more values
  const char* signature;
};

const std::vector<PredicateSpec>& Specs() {
  static const std::vector<PredicateSpec> specs = {
      {"constant", {}, "constant(X, ...)"},
      {"scalar", {}, "scalar(X, ...)"},
      {"same_shape", {ArgKind::kValue, ArgKind::kValue}, "same_shape(A, B)"},
      {"per_channel", {ArgKind::kValue, ArgKind::kValue}, "per_channel(S, X)"},
      {"last_axis", {ArgKind::kAttribute, ArgKind::kValue}, "last_axis(attr, X)"},
      {"kernel_1x1", {ArgKind::kValue}, "kernel_1x1(W)"},
      {"kernel_3x3", {ArgKind::kValue}, "kernel_3x3(W)"},
      {"depthwise", {ArgKind::kAttribute, ArgKind::kValue}, "depthwise(attr, W)"},
  };
  return specs;
}

const PredicateSpec* FindSpec(const std::string& name) {
  for (const auto& spec : Specs())
    if (name == spec.name) return &spec;
  return nullptr;
}

bool Contains(const google::protobuf::RepeatedPtrField<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& list) {
  std::string out;
  for (const auto& item : list) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// "W ('w')": the wildcard and the graph value bound to it.
std::string Describe(const Graph& graph, const std::string& arg, ValueId v) {
  return arg + " ('" + graph.value(v).name + "')";
}

std::string Origin(const Graph& graph, ValueId v) {
  const Value& value = graph.value(v);
  if (value.producer == kNoNode) return "a graph input";
  const Node& node = graph.node(value.producer);
  return "computed by " + QuotedNode(node);
}

PredicateFailure Fail(std::string reason, std::string detail, std::size_t arg) {
  return PredicateFailure{std::move(reason), std::move(detail), arg};
}

std::optional<PredicateFailure> Omitted(const PatternRequirement& req, std::size_t i, const char* reason) {
  return Fail(reason, req.args[i] + " is omitted (an absent optional input)", i);
}

std::optional<PredicateFailure> CheckSameShape(const Graph& graph, const PatternRequirement& req,
                                               const std::vector<ValueId>& v) {
  for (std::size_t i = 0; i < 2; ++i)
    if (v[i] == kNoValue) return Omitted(req, i, "shapes_differ");
  const TensorType& a = graph.value(v[0]).type;
  const TensorType& b = graph.value(v[1]).type;
  if (a.SameShape(b)) return std::nullopt;
  std::string what = a.ShapeString() == b.ShapeString() ? "shapes are not known to be equal: " : "shapes differ: ";
  return Fail("shapes_differ",
              what + Describe(graph, req.args[0], v[0]) + " is " + a.ShapeString() + " vs " +
                  Describe(graph, req.args[1], v[1]) + " " + b.ShapeString(),
              0);
}

std::optional<PredicateFailure> CheckPerChannel(const Graph& graph, const PatternRequirement& req,
                                                const std::vector<ValueId>& v) {
  for (std::size_t i = 0; i < 2; ++i)
    if (v[i] == kNoValue) return Omitted(req, i, "not_per_channel");
  const TensorType& s = graph.value(v[0]).type;
  const TensorType& x = graph.value(v[1]).type;
  bool ok = s.has_shape && x.has_shape && x.dims.size() >= 2 && x.dims[1] > 0 && s.dims.size() <= x.dims.size();
  for (std::size_t j = 0; ok && j < s.dims.size(); ++j) {
    std::size_t axis = x.dims.size() - s.dims.size() + j;  // numpy broadcasting aligns trailing dims
    ok = s.dims[j] == 1 || (axis == 1 && s.dims[j] == x.dims[1]);
  }
  if (ok) return std::nullopt;
  return Fail("not_per_channel",
              Describe(graph, req.args[0], v[0]) + " of shape " + s.ShapeString() +
                  " does not broadcast along axis 1 only of " + Describe(graph, req.args[1], v[1]) + " " +
                  x.ShapeString(),
              0);
}

std::optional<PredicateFailure> CheckLastAxis(const Graph& graph, const PatternRequirement& req,
                                              const PredicateBindings& bindings) {
  const std::string& attr_name = req.args[0];
  ValueId x = bindings.value(req.args[1]);
  if (x == kNoValue) return Omitted(req, 1, "not_last_axis");
  const TensorType& type = graph.value(x).type;
  const onnx::AttributeProto* attr = bindings.attribute(attr_name);
  if (!attr) return Fail("not_last_axis", attr_name + " is absent (all axes)", 0);
  std::vector<std::int64_t> axes(attr->ints().begin(), attr->ints().end());
  if (TypeOf(*attr) == onnx::AttributeProto::INT) axes = {attr->i()};
  if (!type.has_shape)
    return Fail("not_last_axis", "the rank of " + Describe(graph, req.args[1], x) + " is unknown", 1);
  auto rank = static_cast<std::int64_t>(type.dims.size());
  if (axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1)) return std::nullopt;
  return Fail("not_last_axis",
              attr_name + " is " + AttrText(*attr) + ", not the last axis of " + Describe(graph, req.args[1], x) + " " +
                  type.ShapeString(),
              0);
}

// kernel_1x1 / kernel_3x3: the spatial dims of a convolution weight W [M, C/group, ...].
std::optional<PredicateFailure> CheckKernel(const Graph& graph, const PatternRequirement& req, ValueId w,
                                            std::int64_t size) {
  const std::string reason = size == 1 ? "not_1x1" : "not_3x3";
  if (w == kNoValue) return Omitted(req, 0, reason.c_str());
  const TensorType& type = graph.value(w).type;
  bool ok = type.has_shape && type.dims.size() >= 3 && (size == 1 || type.dims.size() == 4);
  for (std::size_t j = 2; ok && j < type.dims.size(); ++j) ok = type.dims[j] == size;
  if (ok) return std::nullopt;
  std::string want = size == 1 ? "a 1x1 kernel (spatial dims all 1)" : "a 3x3 kernel (4-D, spatial dims 3, 3)";
  return Fail(reason, Describe(graph, req.args[0], w) + " of shape " + type.ShapeString() + " is not " + want, 0);
}

std::optional<PredicateFailure> CheckDepthwise(const Graph& graph, const PatternRequirement& req,
                                               const PredicateBindings& bindings) {
  ValueId w = bindings.value(req.args[1]);
  if (w == kNoValue) return Omitted(req, 1, "not_depthwise");
  const TensorType& type = graph.value(w).type;
  if (!type.has_shape || type.dims.size() < 3 || type.dims[0] <= 0 || type.dims[1] <= 0)
    return Fail("not_depthwise",
                "the shape of " + Describe(graph, req.args[1], w) + " " + type.ShapeString() +
                    " is not a known convolution weight shape",
                1);
  const onnx::AttributeProto* attr = bindings.attribute(req.args[0]);
  std::int64_t group = attr ? attr->i() : 1;
  std::string group_text = req.args[0] + " " + (attr ? AttrText(*attr) : std::string("absent (1)"));
  if (type.dims[1] == 1 && group == type.dims[0]) return std::nullopt;
  return Fail("not_depthwise",
              group_text + " with " + Describe(graph, req.args[1], w) + " of shape " + type.ShapeString() +
                  " is not depthwise (needs W [M, 1, ...] and group = M)",
              type.dims[1] == 1 ? 0 : 1);
}

}  // namespace

bool Near(double a, double b, double tolerance) {
  return a == b || std::fabs(a - b) <= tolerance * std::max(std::fabs(a), std::fabs(b));
}

int TypeOf(const AttributeProto& a) {
  if (a.type() != AttributeProto::UNDEFINED) return a.type();
  if (a.has_f()) return AttributeProto::FLOAT;  // pre-IR-2 attributes carry no type
  if (a.has_i()) return AttributeProto::INT;
  if (a.has_s()) return AttributeProto::STRING;
  if (a.has_t()) return AttributeProto::TENSOR;
  if (a.has_g()) return AttributeProto::GRAPH;
  if (a.floats_size()) return AttributeProto::FLOATS;
  if (a.ints_size()) return AttributeProto::INTS;
  if (a.strings_size()) return AttributeProto::STRINGS;
  return AttributeProto::UNDEFINED;
}

bool AttrEqual(const AttributeProto& a, const AttributeProto& b) {
  int type = TypeOf(a);
  if (type != TypeOf(b)) return false;
  switch (type) {
    case AttributeProto::FLOAT: return Near(a.f(), b.f(), kAttributeTolerance);
    case AttributeProto::INT: return a.i() == b.i();
    case AttributeProto::STRING: return a.s() == b.s();
    case AttributeProto::INTS: return std::equal(a.ints().begin(), a.ints().end(), b.ints().begin(), b.ints().end());
    case AttributeProto::STRINGS:
      return std::equal(a.strings().begin(), a.strings().end(), b.strings().begin(), b.strings().end());
    case AttributeProto::FLOATS:
      return std::equal(a.floats().begin(), a.floats().end(), b.floats().begin(), b.floats().end(),
                        [](float x, float y) { return Near(x, y, kAttributeTolerance); });
    default: {  // tensors, graphs, ...: by value, names aside
      AttributeProto x = a, y = b;
      x.clear_name();
      y.clear_name();
      x.clear_doc_string();
      y.clear_doc_string();
      return x.SerializeAsString() == y.SerializeAsString();
    }
  }
}

std::string AttrText(const AttributeProto& a) {
  std::ostringstream out;
  auto list = [&](const auto& items, auto print) {
    out << '[';
    for (int i = 0; i < items.size(); ++i) {
      if (i) out << ',';
      print(items.Get(i));
    }
    out << ']';
  };
  switch (TypeOf(a)) {
    case AttributeProto::FLOAT: out << a.f(); break;
    case AttributeProto::INT: out << a.i(); break;
    case AttributeProto::STRING: out << '\'' << a.s() << '\''; break;
    case AttributeProto::INTS: list(a.ints(), [&](auto v) { out << v; }); break;
    case AttributeProto::FLOATS: list(a.floats(), [&](auto v) { out << v; }); break;
    case AttributeProto::STRINGS: list(a.strings(), [&](const auto& v) { out << '\'' << v << '\''; }); break;
    default: out << "<" << AttributeProto::AttributeType_Name(static_cast<AttributeProto::AttributeType>(TypeOf(a))) << ">";
  }
  return out.str();
}

std::optional<double> SingleNumber(const onnx::TensorProto& tensor) {
  const auto type = tensor.data_type();
  if (CheckedElementCount(tensor.dims()) != std::optional<std::int64_t>(1) ||
      (type != onnx::TensorProto::FLOAT && type != onnx::TensorProto::DOUBLE && type != onnx::TensorProto::INT32 &&
       type != onnx::TensorProto::INT64))
    return std::nullopt;
  try {
    return DecodeTensor<double>(tensor, "constant").at(0);
  } catch (const std::exception&) {
    return std::nullopt;  // malformed or external data: not a usable constant
  }
}

namespace {

// An initializer or Constant node's output, or an Identity chain of one:
// torch exports a parameter two layers share as an Identity of one
// initializer, which the backend folds before lowering.
bool IsConstantThroughIdentity(const Graph& graph, ValueId value) {
  while (!graph.IsConstant(value)) {
    const NodeId producer = graph.value(value).producer;
    if (producer == kNoNode) return false;
    const Node& node = graph.node(producer);
    if (node.op_type != "Identity" || !node.domain.empty() || node.inputs.empty() || node.inputs[0] == kNoValue)
      return false;
    value = node.inputs[0];
  }
  return true;
}

}  // namespace

std::optional<ConstantNumber> ConstantScalar(const Graph& graph, ValueId value) {
  if (value == kNoValue || !graph.IsConstant(value)) return std::nullopt;
  if (const onnx::TensorProto* tensor = graph.ConstantTensor(value)) {
    auto number = SingleNumber(*tensor);
    if (!number) return std::nullopt;
    return ConstantNumber{*number, tensor->data_type(), static_cast<std::size_t>(tensor->dims_size())};
  }
  // A Constant node's scalar spellings (opset >= 12).
  for (const auto& attr : graph.node(graph.value(value).producer).proto.attribute()) {
    if (attr.name() == "value_float") return ConstantNumber{attr.f(), onnx::TensorProto::FLOAT, 0};
    if (attr.name() == "value_int")
      return ConstantNumber{static_cast<double>(attr.i()), onnx::TensorProto::INT64, 0};
  }
  return std::nullopt;
}

std::optional<std::pair<std::size_t, std::string>> ValidateRequirement(const PatternRequirement& req,
                                                                       const onnx::FunctionProto& function) {
  const PredicateSpec* spec = FindSpec(req.predicate);
  if (!spec) {
    std::string known;
    for (const auto& s : Specs()) known += (known.empty() ? "" : ", ") + std::string(s.signature);
    return std::make_pair(std::string::npos, "unknown predicate '" + req.predicate + "' (known: " + known + ")");
  }
  bool variadic = spec->args.empty();
  if (variadic ? req.args.empty() : req.args.size() != spec->args.size())
    return std::make_pair(std::string::npos, req.predicate + " takes " +
                                                 (variadic ? std::string("one or more arguments")
                                                           : std::to_string(spec->args.size()) + " arguments") +
                                                 ": " + spec->signature);
  for (std::size_t i = 0; i < req.args.size(); ++i) {
    ArgKind kind = variadic ? ArgKind::kValue : spec->args[i];
    if (kind == ArgKind::kValue && !Contains(function.input(), req.args[i]))
      return std::make_pair(i, "'" + req.args[i] + "' is not an input of " + function.name() + " (inputs: " +
                                   Join(function.input()) + ")");
    if (kind == ArgKind::kAttribute && !Contains(function.attribute(), req.args[i]))
      return std::make_pair(i, "'" + req.args[i] + "' is not an attribute of " + function.name() +
                                   " (attributes: " + Join(function.attribute()) + ")");
  }
  return std::nullopt;
}

std::optional<PredicateFailure> CheckRequirement(const Graph& graph, const PatternRequirement& req,
                                                 const PredicateBindings& bindings) {
  const std::string& name = req.predicate;
  if (name == "last_axis") return CheckLastAxis(graph, req, bindings);
  if (name == "depthwise") return CheckDepthwise(graph, req, bindings);
  std::vector<ValueId> v;
  for (const auto& arg : req.args) v.push_back(bindings.value(arg));
  if (name == "same_shape") return CheckSameShape(graph, req, v);
  if (name == "per_channel") return CheckPerChannel(graph, req, v);
  if (name == "kernel_1x1") return CheckKernel(graph, req, v[0], 1);
  if (name == "kernel_3x3") return CheckKernel(graph, req, v[0], 3);
  Check(name == "constant" || name == "scalar", "predicate " + name + " was validated when its file was parsed");
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (name == "constant") {
      if (v[i] == kNoValue || IsConstantThroughIdentity(graph, v[i])) continue;
      return Fail("not_constant", Describe(graph, req.args[i], v[i]) + " is not a constant: it is " +
                                      Origin(graph, v[i]), i);
    }
    if (name == "scalar") {
      if (v[i] == kNoValue) return Omitted(req, i, "not_scalar");
      if (!graph.IsConstant(v[i]))
        return Fail("not_scalar", Describe(graph, req.args[i], v[i]) + " is not a constant: it is " +
                                      Origin(graph, v[i]), i);
      auto count = graph.value(v[i]).type.NumElements();
      if (count == 1) continue;
      return Fail("not_scalar", Describe(graph, req.args[i], v[i]) + " has shape " +
                                    graph.value(v[i]).type.ShapeString() + ", not one element", i);
    }
  }
  return std::nullopt;
}

}  // namespace onnxfuse::detail
