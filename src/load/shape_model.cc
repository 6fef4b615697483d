#include "load/shape_model.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "load/onnx_guards.h"
#include "load/proto_queries.h"
#include "load/shape_inference.h"
#include "onnxfuse/error.h"

namespace onnxfuse {

ShapeModel::ShapeModel(std::shared_ptr<const Graph> prepared) : prepared_(std::move(prepared)) {
  model_ = prepared_->model();  // once per model; the graphs At makes copy only what is left
  for (onnx::TensorProto& tensor : *model_.mutable_graph()->mutable_initializer()) {
    if (NumElements(tensor) <= kCopiedElements) continue;
    onnx::TensorProto stub;
    stub.set_name(tensor.name());
    stub.set_data_type(tensor.data_type());
    *stub.mutable_dims() = tensor.dims();
    tensor.Swap(&stub);
    borrowed_.push_back(tensor.name());
  }
  auto& infos = *model_.mutable_graph()->mutable_value_info();
  infos.erase(
      std::remove_if(infos.begin(), infos.end(), [](const onnx::ValueInfoProto& i) { return !StaticShape(i.type()); }),
      infos.end());
}

Graph ShapeModel::At(const std::map<std::string, std::vector<std::int64_t>>& input_shapes) const {
  detail::InstallOnnxInferenceGuards();
  const std::string& source = prepared_->source_path();
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
