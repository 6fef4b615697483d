#include "fault_injection.h"

#include <cstdlib>
#include <string>

namespace onnxfuse::test {

void AddOneAtFaultNode(backend::Builder& b, const std::vector<NodeId>& unit) {
  const char* name = std::getenv("ONNXFUSE_FAULT_NODE");
  if (!name || !b.fuse) return;
  for (NodeId id : unit) {
    const Node& node = b.graph.node(id);
    if (node.name != name || node.outputs.empty() || !b.IsAct(node.outputs[0])) continue;
    const backend::Act& x = b.ActOf(node.outputs[0], node);
    const std::size_t count = x.md.get_size() / sizeof(float);
    backend::CustomKernel add_one = [count](const std::vector<void*>& data) {
      auto* y = static_cast<float*>(data[0]);
      for (std::size_t i = 0; i < count; ++i) y[i] += 1.f;
    };
    b.EmitCustom("fault", node.name + " (ONNXFUSE_FAULT_NODE)", {{0, backend::Arg{x.slot, x.md, {}}}},
                 std::move(add_one), x.md);
  }
}

}  // namespace onnxfuse::test
