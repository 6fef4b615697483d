// Element types opset 17 has no type for (load/opset_conversion.h,
// RefuseNewElementTypes): refused before the loader validates tensor data,
// which knows only opset-17 types.
#include <string>

#include "load/conversion_steps.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse {

namespace {

// Element types opset 17 lacks: BFLOAT16 (16) is refused as the issue asks,
// FLOAT8* (17-20, IR 9), UINT4/INT4 (21-22, IR 10), FLOAT4E2M1 (23, IR 11).
bool NewType(std::int32_t type) { return type >= 16; }

std::string TypeName(std::int32_t type) {
  switch (type) {
    case 16: return "bfloat16";
    case 17: case 18: case 19: case 20: return "float8";
    case 21: return "uint4";
    case 22: return "int4";
    default: return "element type " + std::to_string(type);
  }
}

[[noreturn]] void RefuseType(const std::string& source, const std::string& what, std::int32_t type) {
  throw Error(ErrorKind::kUnsupported,
              source + ": " + what + " is a " + TypeName(type) + " tensor, which opset 17 has no type for");
}

void CheckValueTypes(const onnx::ValueInfoProto& vi, const std::string& source, const char* where) {
  if (vi.type().has_tensor_type() && NewType(vi.type().tensor_type().elem_type()))
    RefuseType(source, std::string(where) + " '" + vi.name() + "'", vi.type().tensor_type().elem_type());
}

void CheckGraphTypes(const onnx::GraphProto& g, const std::string& source) {
  for (const auto& vi : g.input()) CheckValueTypes(vi, source, "graph input");
  for (const auto& vi : g.output()) CheckValueTypes(vi, source, "graph output");
  for (const auto& vi : g.value_info()) CheckValueTypes(vi, source, "value");
  for (const auto& t : g.initializer())
    if (NewType(t.data_type())) RefuseType(source, "initializer '" + t.name() + "'", t.data_type());
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      const std::string label = NodeLabel(n);
      if (a.has_t() && NewType(a.t().data_type())) RefuseType(source, label + " attribute '" + a.name() + "'", a.t().data_type());
      if ((n.op_type() == "Cast" || n.op_type() == "CastLike") && a.name() == "to" &&
          NewType(static_cast<std::int32_t>(a.i())))
        throw Error(ErrorKind::kUnsupported, source + ": " + label + " casts to " +
                                                 TypeName(static_cast<std::int32_t>(a.i())) + ", which opset 17 has no type for");
      if (a.has_g()) CheckGraphTypes(a.g(), source);
      for (const auto& sub : a.graphs()) CheckGraphTypes(sub, source);
    }
}

}  // namespace

void RefuseNewElementTypes(const onnx::ModelProto& model, const std::string& source) {
  if (load::DefaultOpset(model) <= kWorkingOpset && model.ir_version() <= kWorkingIrVersion) return;
  CheckGraphTypes(model.graph(), source);
}

}  // namespace onnxfuse
