#include "load/shape_model.h"

#include <algorithm>
#include <exception>
#include <utility>

#include <google/protobuf/field_mask.pb.h>
#include <google/protobuf/util/field_mask_util.h>
#include <spdlog/spdlog.h>

#include "load/onnx_guards.h"
#include "load/proto_queries.h"
#include "load/shape_inference.h"
#include "onnxfuse/error.h"

namespace onnxfuse {

namespace {

// Every field of a model but its graph's initializers, which hold the weights:
// the copy costs what the model's structure does, not its size.
google::protobuf::FieldMask AllButInitializers() {
  google::protobuf::FieldMask mask;
  const google::protobuf::Descriptor* model = onnx::ModelProto::descriptor();
  for (int i = 0; i < model->field_count(); ++i)
    if (model->field(i)->name() != "graph") mask.add_paths(model->field(i)->name());
  const google::protobuf::Descriptor* graph = onnx::GraphProto::descriptor();
  for (int i = 0; i < graph->field_count(); ++i)
    if (graph->field(i)->name() != "initializer") mask.add_paths("graph." + graph->field(i)->name());
  return mask;
}

// Types every value of `prepared` at `dims` (ShapeSubstitution::At) in
// `model` (prepared's model with its inputs pinned): graph outputs in place,
// the others as value_info.
void TypeValues(onnx::ModelProto& model, const Graph& prepared,
                const std::vector<std::optional<std::vector<std::int64_t>>>& dims) {
  const auto set = [](onnx::TypeProto& type, std::int32_t elem_type, const std::vector<std::int64_t>& value_dims) {
    auto* tensor = type.mutable_tensor_type();
    if (elem_type != 0) tensor->set_elem_type(elem_type);
    auto* shape = tensor->mutable_shape();
    shape->clear_dim();
    for (std::int64_t d : value_dims) shape->add_dim()->set_dim_value(d);
  };
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.clear_value_info();
  for (onnx::ValueInfoProto& output : *graph.mutable_output()) {
    const std::optional<ValueId> v = prepared.FindValue(output.name());
    if (v && dims[*v]) set(*output.mutable_type(), prepared.value(*v).type.elem_type, *dims[*v]);
  }
  for (ValueId v = 0; v < prepared.values().size(); ++v) {
    const Value& value = prepared.value(v);
    if (!dims[v] || value.is_graph_input || value.is_graph_output || value.initializer >= 0) continue;
    onnx::ValueInfoProto& info = *graph.add_value_info();
    info.set_name(value.name);
    set(*info.mutable_type(), value.type.elem_type, *dims[v]);
  }
}

}  // namespace

ShapeModel::ShapeModel(std::shared_ptr<const Graph> prepared) : prepared_(std::move(prepared)) {
  // Once per model; the graphs At makes copy only what is left.
  static const google::protobuf::FieldMask mask = AllButInitializers();
  google::protobuf::util::FieldMaskUtil::MergeMessageTo(prepared_->model(), mask, {}, &model_);
  auto& initializers = *model_.mutable_graph()->mutable_initializer();
  for (const onnx::TensorProto& tensor : prepared_->model().graph().initializer()) {  // in order: the same ValueIds
    if (NumElements(tensor) <= kCopiedElements) {
      *initializers.Add() = tensor;
      continue;
    }
    onnx::TensorProto& stub = *initializers.Add();
    stub.set_name(tensor.name());
    stub.set_data_type(tensor.data_type());
    *stub.mutable_dims() = tensor.dims();
    borrowed_.push_back(tensor.name());
  }
  auto& infos = *model_.mutable_graph()->mutable_value_info();
  infos.erase(
      std::remove_if(infos.begin(), infos.end(), [](const onnx::ValueInfoProto& i) { return !StaticShape(i.type()); }),
      infos.end());
  std::string why;
  substitution_ = ShapeSubstitution::Of(*prepared_, &why);
  if (!substitution_) spdlog::debug("{}: shapes at new input dims are inferred: {}", prepared_->source_path(), why);
}

Graph ShapeModel::At(const std::map<std::string, std::vector<std::int64_t>>& input_shapes) const {
  detail::InstallOnnxInferenceGuards();
  const std::string& source = prepared_->source_path();
  onnx::ModelProto model = model_;
  PinInputShapes(model, input_shapes, source);
  std::optional<std::vector<std::optional<std::vector<std::int64_t>>>> dims;
  if (substitution_) dims = substitution_->At(input_shapes);
  if (dims) {
    TypeValues(model, *prepared_, *dims);
  } else {
    try {
      InferValueShapes(model);
    } catch (const std::exception& e) {
      std::string message = e.what();
      if (auto cut = message.find('\n'); cut != std::string::npos) message.resize(cut);
      throw Error(ErrorKind::kInvalidModel, source + ": shape inference failed at these input shapes: " + message);
    }
  }
  Graph graph(std::move(model), source);
  graph.set_conversion(prepared_->conversion());
  graph.BorrowConstants(prepared_, borrowed_);
  return graph;
}

}  // namespace onnxfuse
