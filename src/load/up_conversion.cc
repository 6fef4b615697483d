// Opset 1-6 to opset 9 with ONNX's own version converter
// (onnx/version_converter/convert.h), with what it needs first: initializers
// listed as inputs, a checked model, shape inference; and one fix of ours.
#include <algorithm>
#include <set>
#include <spdlog/spdlog.h>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include "load/conversion_steps.h"
#include "onnxfuse/error.h"

namespace onnxfuse::load {

namespace {

// Old models go to opset 9, not 7: Constant-9 is the first to allow every
// tensor type, and torch's old exports carry int64 Constants (shape inference
// refuses them at 7 and 8); the version converter has adapters for every op
// of these models up to 9 (pytorch-converted/, pytorch-operator/).
constexpr int kUpConversionTarget = 9;

// PRelu-6 applied a slope of C values per channel (axis 1); PRelu-7 broadcasts
// it numpy-style from the last axis, and ONNX's converter keeps its shape
// (torch's PReLU(num_parameters=C) at opset 6: [3] against [2, 3, 4]). A
// constant slope of [C] for an input of rank > 2 becomes [C, 1, ...].
void ChannelSlopesOfOldPRelu(onnx::GraphProto& g) {
  std::map<std::string, int> rank;
  for (const auto& vi : g.input())
    if (vi.type().tensor_type().has_shape()) rank[vi.name()] = vi.type().tensor_type().shape().dim_size();
  for (const auto& vi : g.value_info())
    if (vi.type().tensor_type().has_shape()) rank[vi.name()] = vi.type().tensor_type().shape().dim_size();
  for (const auto& n : g.node()) {
    if (n.op_type() != "PRelu" || n.input_size() < 2 || !rank.count(n.input(0)) || rank[n.input(0)] <= 2) continue;
    for (auto& t : *g.mutable_initializer()) {
      if (t.name() != n.input(1) || t.dims_size() != 1 || t.dims(0) == 1) continue;
      for (int k = 2; k < rank[n.input(0)]; ++k) t.add_dims(1);
      for (auto& vi : *g.mutable_input())  // IR 3 lists it as an input too
        if (vi.name() == t.name() && vi.type().tensor_type().has_shape())
          for (int k = 2; k < rank[n.input(0)]; ++k)
            vi.mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
    }
  }
}

std::string FirstLine(const std::exception& e) {
  std::string message = e.what();
  if (auto cut = message.find('\n'); cut != std::string::npos) message.resize(cut);
  return message;
}

}  // namespace

void ConvertUp(onnx::ModelProto& model, const std::string& source, OpsetConversion& record) {
  // ONNX's converter resolves names through graph inputs only (IR 3 listed
  // every initializer as one): initializers that are not get listed for it.
  std::set<std::string> listed, added;
  for (const auto& i : model.graph().input()) listed.insert(i.name());
  for (const auto& t : model.graph().initializer())
    if (!listed.count(t.name())) {
      auto* in = model.mutable_graph()->add_input();
      in->set_name(t.name());
      auto* type = in->mutable_type()->mutable_tensor_type();
      type->set_elem_type(t.data_type());
      for (auto d : t.dims()) type->mutable_shape()->add_dim()->set_dim_value(d);
      added.insert(t.name());
    }
  // Both shape inference and the converter assume a model the checker accepts.
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kInvalidModel, source + ": the ONNX checker refuses it: " + FirstLine(e));
  }
  try {
    // Its adapters read value shapes (Add-6's broadcast needs both sizes):
    // shape inference at the model's own opset gives them.
    try {
      onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/false);
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception&) {  // what it inferred before stopping still helps
    }
    ChannelSlopesOfOldPRelu(*model.mutable_graph());
    model = onnx::version_conversion::ConvertVersion(model, kUpConversionTarget);
    auto* inputs = model.mutable_graph()->mutable_input();
    if (model.ir_version() >= 4)  // IR 3 wants every initializer listed as an input
      inputs->erase(std::remove_if(inputs->begin(), inputs->end(),
                                 [&](const onnx::ValueInfoProto& i) { return added.count(i.name()) > 0; }),
                  inputs->end());
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kUnsupported, source + ": opset " + std::to_string(record.from_opset) +
                                             " cannot be converted to opset " + std::to_string(kUpConversionTarget) +
                                             " by ONNX's version converter: " + FirstLine(e));
  }
  record.to_opset = DefaultOpset(model);
  record.to_ir = model.ir_version();
  spdlog::warn("{}: converted from opset {} to opset {} (ONNX's version converter)", source, record.from_opset,
               record.to_opset);
}

}  // namespace onnxfuse::load
