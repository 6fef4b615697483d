#include "load/computed_types.h"

#include <algorithm>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "eval/host_eval.h"
#include "ir/attributes.h"
#include "ir/graph.h"
#include "ir/node_label.h"
#include "ir/tensor_io.h"
#include "load/proto_queries.h"
#include "load/symbolic_shape_values.h"

namespace onnxfuse {

namespace {

// `proto` as the host evaluator takes a node: its attributes and arity, no graph.
Node EvaluatorNode(const onnx::NodeProto& proto, int index) {
  Node node;
  node.name = NodeName(proto, index);
  node.op_type = proto.op_type();
  node.domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
  for (const auto& in : proto.input()) node.inputs.push_back(in.empty() ? kNoValue : ValueId{0});
  node.num_explicit_inputs = node.inputs.size();
  for (const auto& out : proto.output()) node.outputs.push_back(out.empty() ? kNoValue : ValueId{0});
  node.proto = proto;
  return node;
}

std::int64_t DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

// The input whose element type an op's outputs have, where the evaluator's
// result does not say (it builds new tensors in their storage type): the data
// of the ops that move, select or combine elements of one type (Where: its
// first branch); nullptr for others.
const Tensor* SameTypeAs(const onnx::NodeProto& node, const std::vector<const Tensor*>& inputs) {
  static const std::set<std::string> kFirst = {
      "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice", "Gather", "Concat", "Expand",
      "Tile", "Split", "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Min", "Max", "Sum", "ReduceSum", "ReduceProd",
      "ReduceMin", "ReduceMax", "Range", "Clip"};
  const std::size_t at = node.op_type() == "Where" ? 1 : kFirst.count(node.op_type()) ? 0 : inputs.size();
  return at < inputs.size() ? inputs[at] : nullptr;
}

}  // namespace

std::vector<std::string> SeedComputedTypes(onnx::ModelProto& model) {
  onnx::GraphProto& g = *model.mutable_graph();
  std::map<std::string, const onnx::TypeProto*> types;
  std::map<std::string, int> info_at;
  for (const auto& vi : g.input()) types[vi.name()] = &vi.type();
  for (int i = 0; i < g.value_info_size(); ++i) {
    types[g.value_info(i).name()] = &g.value_info(i).type();
    info_at[g.value_info(i).name()] = i;
  }
  const auto typed = [&](const std::string& name) {
    auto it = types.find(name);
    return it != types.end() && StaticShape(*it->second);
  };
  std::set<std::string> graph_outputs;  // typed by the model itself, never seeded
  for (const auto& vi : g.output()) graph_outputs.insert(vi.name());
  const bool open = std::any_of(g.node().begin(), g.node().end(), [&](const onnx::NodeProto& n) {
    return std::any_of(n.output().begin(), n.output().end(), [&](const std::string& o) {
      return !o.empty() && !typed(o) && !graph_outputs.count(o);
    });
  });
  if (!open) return {};


  // Known values: small initializers (decoded when first read) and what the loop computes.
  std::map<std::string, const onnx::TensorProto*> small;
  for (const auto& init : g.initializer())
    if (NumElements(init) <= kMaxSeedElements) small[init.name()] = &init;
  std::map<std::string, Tensor> known;
  const auto value = [&](const std::string& name) -> const Tensor* {
    if (auto it = known.find(name); it != known.end()) return &it->second;
    auto it = small.find(name);
    if (it == small.end()) return nullptr;
    const onnx::TensorProto* init = it->second;
    small.erase(it);  // decoded once, or never again if it cannot be
    try {
      return &known.emplace(name, TensorFromProto(*init, name)).first->second;
    } catch (const std::exception&) {  // no data here (external, or a stub of a large one)
      return nullptr;
    }
  };
  const std::int64_t opset = DefaultOpset(model);
  struct Seed {
    std::string name;
    std::int32_t elem_type;
    SymbolicDims dims;
  };
  std::vector<Seed> seeds;
  // Shape values with symbols, and the Slice dims they decide (symbolic_shape_values.h).
  SymbolicShapeValues symbolic;
  const auto type_of = [&](const std::string& name) -> std::optional<SymbolicDims> {
    auto it = types.find(name);
    return it != types.end() ? DimsOfType(*it->second) : std::nullopt;
  };
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& proto = g.node(i);
    const bool standard = proto.domain().empty() || proto.domain() == "ai.onnx";
    if (standard && !HasSubgraph(proto) && proto.output_size() > 0 && !graph_outputs.count(proto.output(0))) {
      if (std::optional<SymbolicDims> dims = symbolic.Visit(proto, type_of, value); dims && !type_of(proto.output(0))) {
        // A Slice or a Reshape keeps its data's element type.
        std::int32_t elem = 0;
        if (auto it = types.find(proto.input(0)); it != types.end()) elem = it->second->tensor_type().elem_type();
        if (const Tensor* data = elem == 0 ? value(proto.input(0)) : nullptr) elem = data->DataType();
        if (elem != 0) seeds.push_back({proto.output(0), elem, std::move(*dims)});
      }
    }
    const bool shape_of_static = standard && (proto.op_type() == "Shape" || proto.op_type() == "Size") &&
                                 proto.input_size() > 0 && typed(proto.input(0));
    std::vector<const Tensor*> inputs;
    if (!shape_of_static) {
      if (!standard || HasSubgraph(proto)) continue;
      bool all = true;
      for (const auto& in : proto.input()) {
        const Tensor* t = in.empty() ? nullptr : value(in);
        if (!in.empty() && !t) {
          all = false;
          break;
        }
        inputs.push_back(t);
      }
      if (!all) continue;
    }
    const Node node = EvaluatorNode(proto, i);
    std::vector<Tensor> outputs;
    try {
      if (shape_of_static) {
        std::vector<std::int64_t> dims;
        for (const auto& d : types.at(proto.input(0))->tensor_type().shape().dim()) dims.push_back(d.dim_value());
        outputs.push_back(eval::ShapeOrSize(node, dims));
      } else if (eval::HostEvaluable(node)) {
        outputs = eval::EvalOnHost(node, inputs, opset);
      }
    } catch (const std::exception&) {  // not evaluable here: left to inference, and to run time
      continue;
    }
    if (const Tensor* from = SameTypeAs(proto, inputs))
      for (Tensor& t : outputs)
        if (t.data_type == 0) t.data_type = from->DataType();
    for (int k = 0; k < proto.output_size() && k < static_cast<int>(outputs.size()); ++k) {
      const std::string& name = proto.output(k);
      if (name.empty()) continue;
      Tensor& t = outputs[static_cast<std::size_t>(k)];
      if (!typed(name) && !graph_outputs.count(name)) {
        // The element type inference gave, else the evaluator's own where it
        // carries one (its storage alone does not tell int32 from int64).
        auto it = types.find(name);
        std::int32_t elem = it != types.end() ? it->second->tensor_type().elem_type() : 0;
        if (elem == 0) elem = t.data_type;
        if (elem != 0) {
          SymbolicDims dims;
          for (std::int64_t d : t.dims) dims.push_back({d, ""});
          seeds.push_back({name, elem, std::move(dims)});
        }
      }
      if (t.NumElements() <= kMaxSeedElements) known[name] = std::move(t);
    }
  }
  std::vector<std::string> names;
  for (const Seed& seed : seeds) {
    // A value both ways (a Slice of constants by computed ends): one value_info, the last.
    if (std::find(names.begin(), names.end(), seed.name) == names.end()) names.push_back(seed.name);
    auto it = info_at.find(seed.name);
    if (it == info_at.end()) {
      it = info_at.emplace(seed.name, g.value_info_size()).first;
      g.add_value_info();
    }
    onnx::ValueInfoProto* info = g.mutable_value_info(it->second);
    info->set_name(seed.name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(seed.elem_type);
    auto* shape = tensor->mutable_shape();
    shape->clear_dim();
    for (const SymbolicDim& d : seed.dims) {
      if (d.symbol.empty()) shape->add_dim()->set_dim_value(d.value);
      else shape->add_dim()->set_dim_param(d.symbol);
    }
  }
  return names;
}

void DropValueInfo(onnx::ModelProto& model, const std::vector<std::string>& names) {
  const std::set<std::string> drop(names.begin(), names.end());
  auto& infos = *model.mutable_graph()->mutable_value_info();
  infos.erase(std::remove_if(infos.begin(), infos.end(), [&](const onnx::ValueInfoProto& i) { return drop.count(i.name()); }),
              infos.end());
}

}  // namespace onnxfuse
