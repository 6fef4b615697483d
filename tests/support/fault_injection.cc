#include "fault_injection.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace onnxfuse::test {

namespace {

// The step adding the fault to `x`: 1 to a float, 3 quantization steps to an
// 8-bit activation (-3 where +3 would saturate).
backend::CustomKernel FaultFor(const backend::Act& x) {
  if (x.elem_type == onnx::TensorProto::UINT8 || x.elem_type == onnx::TensorProto::INT8) {
    const std::size_t count = x.md.get_size();
    if (x.elem_type == onnx::TensorProto::INT8)
      return [count](const std::vector<void*>& data) {
        auto* y = static_cast<std::int8_t*>(data[0]);
        for (std::size_t i = 0; i < count; ++i) y[i] = static_cast<std::int8_t>(y[i] > 124 ? y[i] - 3 : y[i] + 3);
      };
    return [count](const std::vector<void*>& data) {
      auto* y = static_cast<std::uint8_t*>(data[0]);
      for (std::size_t i = 0; i < count; ++i) y[i] = static_cast<std::uint8_t>(y[i] > 252 ? y[i] - 3 : y[i] + 3);
    };
  }
  const std::size_t count = x.md.get_size() / sizeof(float);
  return [count](const std::vector<void*>& data) {
    auto* y = static_cast<float*>(data[0]);
    for (std::size_t i = 0; i < count; ++i) y[i] += 1.f;
  };
}

}  // namespace

void AddOneAtFaultNode(backend::Builder& b, const std::vector<NodeId>&) {
  const char* name = std::getenv("ONNXFUSE_FAULT_NODE");
  if (!name || !b.fuse) return;
  const std::string label = std::string(name) + " (ONNXFUSE_FAULT_NODE)";
  if (std::any_of(b.steps.begin(), b.steps.end(), [&](const backend::Step& s) { return s.label == label; })) return;
  for (const Node& node : b.graph.nodes()) {
    if (node.name != name || node.outputs.empty() || !b.IsAct(node.outputs[0]) || b.IsIntAct(node.outputs[0])) continue;
    const backend::Act& x = b.AnyActOf(node.outputs[0], node);
    b.EmitCustom("fault", label, {{0, backend::Arg{x.slot, x.md, {}}}}, FaultFor(x), x.md);
  }
}

}  // namespace onnxfuse::test
