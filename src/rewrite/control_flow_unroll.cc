#include "rewrite/control_flow_unroll.h"

#include <algorithm>
#include <map>

#include "ir/attributes.h"

namespace onnxfuse {

namespace {

// Builds the nodes and constants of one expansion.
class Emitter {
 public:
  explicit Emitter(ExpansionSite& site) : site_(site) {}

  std::string Fresh(const std::string& base) { return site_.names.Fresh(site_.prefix + base); }

  // A new int64 or bool initializer of `dims` holding `values`.
  std::string Constant(const std::string& base, std::int32_t type, const std::vector<std::int64_t>& dims,
                       const std::vector<std::int64_t>& values) {
    onnx::TensorProto t;
    t.set_name(Fresh(base));
    t.set_data_type(type);
    for (auto d : dims) t.add_dims(d);
    for (auto v : values) {
      if (type == onnx::TensorProto::BOOL) t.add_int32_data(static_cast<std::int32_t>(v != 0));
      else t.add_int64_data(v);
    }
    out.initializers.push_back(t);
    return t.name();
  }

  std::string Node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output_base,
                   std::vector<onnx::AttributeProto> attributes = {}) {
    onnx::NodeProto node;
    node.set_op_type(op);
    node.set_name(Fresh(op));
    for (const auto& i : inputs) node.add_input(i);
    node.add_output(Fresh(output_base));
    for (auto& a : attributes) *node.add_attribute() = std::move(a);
    out.nodes.push_back(node);
    return node.output(0);
  }

  // Element `index` of `value` along `axis`, the axis dropped (Gather with a scalar index).
  std::string Slice(const std::string& value, std::int64_t axis, std::int64_t index, const std::string& base) {
    auto it = indices_.find(index);
    if (it == indices_.end())
      it = indices_.emplace(index, Constant("index" + std::to_string(index), onnx::TensorProto::INT64, {}, {index})).first;
    return Node("Gather", {value, it->second}, base, {IntAttribute("axis", axis)});
  }

  // The elements stacked along a new `axis` (in reverse order when `reverse`).
  std::string Stack(std::vector<std::string> elements, std::int64_t axis, bool reverse, const std::string& base) {
    if (reverse) std::reverse(elements.begin(), elements.end());
    std::vector<std::string> parts;
    for (const auto& e : elements) {
      if (site_.opset >= 13) {
        auto it = axes_.find(axis);
        if (it == axes_.end())
          it = axes_.emplace(axis, Constant("axes" + std::to_string(axis), onnx::TensorProto::INT64, {1}, {axis})).first;
        parts.push_back(Node("Unsqueeze", {e, it->second}, base + "_item"));
      } else {
        onnx::AttributeProto axes;
        axes.set_name("axes");
        axes.set_type(onnx::AttributeProto::INTS);
        axes.add_ints(axis);
        parts.push_back(Node("Unsqueeze", {e}, base + "_item", {axes}));
      }
    }
    if (parts.size() == 1) return parts[0];
    return Node("Concat", parts, base, {IntAttribute("axis", axis)});
  }

  void Append(BodyCopy copy) {
    for (auto& n : copy.nodes) out.nodes.push_back(std::move(n));
    for (auto& t : copy.initializers) out.initializers.push_back(std::move(t));
  }

  BodyCopy Copy(const onnx::GraphProto& body, const std::vector<std::string>& inputs, const std::string& tag) {
    return CopyBody(body, inputs, site_.prefix + tag, site_.names, site_.label);
  }

  Expansion out;

 private:
  ExpansionSite& site_;
  std::map<std::int64_t, std::string> indices_, axes_;
};

// The dims a Loop body declares for its iteration number or condition: [1] when
// it says so (some exporters do), else a scalar as Operators.md specifies.
std::vector<std::int64_t> DeclaredScalarDims(const onnx::GraphProto& body, int input) {
  const auto& type = body.input(input).type().tensor_type();
  if (type.has_shape() && type.shape().dim_size() == 1) return {1};
  return {};
}

}  // namespace

Expansion InlineBranch(const onnx::GraphProto& branch, ExpansionSite& site) {
  Emitter emit(site);
  BodyCopy copy = emit.Copy(branch, {}, "");
  emit.out.outputs = copy.outputs;
  emit.Append(std::move(copy));
  return emit.out;
}

Expansion SelectBranches(const onnx::GraphProto& then_branch, const onnx::GraphProto& else_branch,
                         const std::string& cond, ExpansionSite& site) {
  Emitter emit(site);
  BodyCopy then_copy = emit.Copy(then_branch, {}, "then/"), else_copy = emit.Copy(else_branch, {}, "else/");
  const std::vector<std::string> then_out = then_copy.outputs, else_out = else_copy.outputs;
  emit.Append(std::move(then_copy));
  emit.Append(std::move(else_copy));
  for (std::size_t k = 0; k < then_out.size() && k < else_out.size(); ++k)
    emit.out.outputs.push_back(emit.Node("Where", {cond, then_out[k], else_out[k]}, "selected"));
  return emit.out;
}

Expansion UnrollLoop(const onnx::GraphProto& body, std::int64_t trip_count, const std::vector<std::string>& carried,
                     ExpansionSite& site) {
  Emitter emit(site);
  const std::size_t n = carried.size();
  const std::size_t k = static_cast<std::size_t>(body.output_size()) - 1 - n;
  const std::string cond = emit.Constant("cond", onnx::TensorProto::BOOL, DeclaredScalarDims(body, 1), {1});
  std::vector<std::string> values = carried;
  std::vector<std::vector<std::string>> scanned(k);
  for (std::int64_t i = 0; i < trip_count; ++i) {
    std::vector<std::string> inputs = {
        emit.Constant("iter" + std::to_string(i), onnx::TensorProto::INT64, DeclaredScalarDims(body, 0), {i}), cond};
    inputs.insert(inputs.end(), values.begin(), values.end());
    BodyCopy copy = emit.Copy(body, inputs, "i" + std::to_string(i) + "/");
    for (std::size_t j = 0; j < n; ++j) values[j] = copy.outputs[1 + j];
    for (std::size_t j = 0; j < k; ++j) scanned[j].push_back(copy.outputs[1 + n + j]);
    emit.Append(std::move(copy));
  }
  emit.out.outputs = values;
  for (std::size_t j = 0; j < k; ++j)
    emit.out.outputs.push_back(emit.Stack(scanned[j], 0, false, body.output(static_cast<int>(1 + n + j)).name()));
  return emit.out;
}

Expansion UnrollScan(const onnx::GraphProto& body, const ScanShape& shape, ExpansionSite& site) {
  Emitter emit(site);
  const std::size_t n = shape.states.size(), m = shape.scan_inputs.size();
  const std::size_t k = static_cast<std::size_t>(body.output_size()) - n;
  std::vector<std::string> states = shape.states;
  std::vector<std::vector<std::string>> scanned(k);
  for (std::int64_t t = 0; t < shape.length; ++t) {
    std::vector<std::string> inputs = states;
    for (std::size_t j = 0; j < m; ++j) {
      const std::int64_t index = shape.input_reverse[j] ? shape.length - 1 - t : t;
      inputs.push_back(emit.Slice(shape.scan_inputs[j], shape.input_axes[j], index,
                                  body.input(static_cast<int>(n + j)).name() + "_t" + std::to_string(t)));
    }
    BodyCopy copy = emit.Copy(body, inputs, "t" + std::to_string(t) + "/");
    for (std::size_t j = 0; j < n; ++j) states[j] = copy.outputs[j];
    for (std::size_t j = 0; j < k; ++j) scanned[j].push_back(copy.outputs[n + j]);
    emit.Append(std::move(copy));
  }
  emit.out.outputs = states;
  for (std::size_t j = 0; j < k; ++j)
    emit.out.outputs.push_back(emit.Stack(scanned[j], shape.output_axes[j], shape.output_reverse[j] != 0,
                                          body.output(static_cast<int>(n + j)).name()));
  return emit.out;
}

Expansion UnrollBatchedScan(const onnx::GraphProto& body, const ScanShape& shape, std::int64_t batch,
                            ExpansionSite& site) {
  Emitter emit(site);
  std::vector<std::vector<std::string>> per_item;  // [output][item]
  for (std::int64_t b = 0; b < batch; ++b) {
    ScanShape item = shape;
    for (auto& name : item.states) name = emit.Slice(name, 0, b, name + "_b" + std::to_string(b));
    for (auto& name : item.scan_inputs) name = emit.Slice(name, 0, b, name + "_b" + std::to_string(b));
    ExpansionSite item_site{site.opset, site.names, site.prefix + "b" + std::to_string(b) + "/", site.label};
    Expansion e = UnrollScan(body, item, item_site);
    for (auto& n : e.nodes) emit.out.nodes.push_back(std::move(n));
    for (auto& t : e.initializers) emit.out.initializers.push_back(std::move(t));
    per_item.resize(e.outputs.size());
    for (std::size_t j = 0; j < e.outputs.size(); ++j) per_item[j].push_back(e.outputs[j]);
  }
  for (std::size_t j = 0; j < per_item.size(); ++j)
    emit.out.outputs.push_back(emit.Stack(per_item[j], 0, false, body.output(static_cast<int>(j)).name()));
  return emit.out;
}

}  // namespace onnxfuse
