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
  if (substitution_) {
    CheckInputShapes(model_.graph(), input_shapes, source);
    if (auto dims = substitution_->At(input_shapes)) return Graph::Retyped(prepared_, *dims);
  }
  onnx::ModelProto model = model_;
  PinInputShapes(model, input_shapes, source);
  try {
    InferValueShapes(model);
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (auto cut = message.find('\n'); cut != std::string::npos) message.resize(cut);
    throw Error(ErrorKind::kInvalidModel, source + ": shape inference failed at these input shapes: " + message);
  }
  Graph graph(std::move(model), source);
  graph.set_conversion(prepared_->conversion());
  graph.BorrowConstants(prepared_, borrowed_);
  return graph;
}

}  // namespace onnxfuse
