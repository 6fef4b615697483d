#include "load/shape_inference.h"

#include <algorithm>
#include <set>
#include <utility>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "load/computed_types.h"
#include "load/proto_queries.h"
#include "onnxfuse/error.h"

namespace onnxfuse {

void CheckInputShapes(const onnx::GraphProto& graph, const std::map<std::string, std::vector<std::int64_t>>& input_shapes,
                      const std::string& source) {
  std::set<std::string> found;
  for (const auto& input : graph.input()) {
    auto it = input_shapes.find(input.name());
    if (it == input_shapes.end()) continue;
    found.insert(input.name());
    const auto& shape = input.type().tensor_type().shape();
    if (shape.dim_size() != 0 && shape.dim_size() != static_cast<int>(it->second.size()))
      throw Error(ErrorKind::kUsage, source + ": --input-shape " + input.name() + " has rank " +
                                         std::to_string(it->second.size()) + " but the model declares rank " +
                                         std::to_string(shape.dim_size()));
    for (int i = 0; i < shape.dim_size(); ++i)
      if (shape.dim(i).has_dim_value() && shape.dim(i).dim_value() != it->second[static_cast<std::size_t>(i)])
        throw Error(ErrorKind::kUsage, source + ": --input-shape " + input.name() + " dim " + std::to_string(i) +
                                           " is " + std::to_string(it->second[static_cast<std::size_t>(i)]) +
                                           " but the model fixes it to " + std::to_string(shape.dim(i).dim_value()));
  }
  for (const auto& [name, shape] : input_shapes)
    if (!found.count(name))
      throw Error(ErrorKind::kUsage, source + ": --input-shape names '" + name + "', which is not a graph input");
}

void PinInputShapes(onnx::ModelProto& model, const std::map<std::string, std::vector<std::int64_t>>& input_shapes,
                    const std::string& source) {
  CheckInputShapes(model.graph(), input_shapes, source);
  std::map<std::string, std::int64_t> symbols;
  for (auto& input : *model.mutable_graph()->mutable_input()) {
    auto it = input_shapes.find(input.name());
    if (it == input_shapes.end()) continue;
    auto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (std::size_t i = 0; i < it->second.size(); ++i) {
      auto* dim = i < static_cast<std::size_t>(shape->dim_size()) ? shape->mutable_dim(static_cast<int>(i))
                                                                  : shape->add_dim();
      if (dim->has_dim_param()) symbols[dim->dim_param()] = it->second[i];
      dim->set_dim_value(it->second[i]);
    }
  }
  if (symbols.empty()) return;
  auto substitute = [&](onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    for (auto& dim : *vi.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
      if (dim.has_dim_param() && symbols.count(dim.dim_param())) dim.set_dim_value(symbols[dim.dim_param()]);
  };
  for (auto& vi : *model.mutable_graph()->mutable_input()) substitute(vi);
  for (auto& vi : *model.mutable_graph()->mutable_output()) substitute(vi);
  for (auto& vi : *model.mutable_graph()->mutable_value_info()) substitute(vi);
}

void InferValueShapes(onnx::ModelProto& model) {
  std::vector<std::pair<int, onnx::NodeProto>> with_subgraphs;
  for (int i = 0; i < model.graph().node_size(); ++i) {
    if (HasSubgraph(model.graph().node(i)))
      with_subgraphs.emplace_back(i, model.graph().node(i));
  }
  onnx::ShapeInferenceOptions inference(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/true);
  // What inference would leave open but the input shapes and small constants
  // decide, typed first (computed_types.h); then, after inference, what
  // needed its types.
  // A seed inference turns down (an evaluator that disagrees with a schema)
  // is dropped: the inference is then as without it.
  const auto infer = [&](const std::vector<std::string>& seeded) {
    try {
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), inference);
    } catch (const std::exception&) {
      if (seeded.empty()) throw;
      DropValueInfo(model, seeded);
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), inference);
    }
  };
  infer(SeedComputedTypes(model));
  if (std::vector<std::string> seeded = SeedComputedTypes(model); !seeded.empty()) infer(seeded);
  for (auto& [index, node] : with_subgraphs) model.mutable_graph()->mutable_node(index)->Swap(&node);
}

}  // namespace onnxfuse
