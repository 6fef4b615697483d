// How a lowering refuses a node it cannot lower: Error(kUnsupported) naming the
// model file and the node, also when oneDNN has no implementation for the
// primitive it asks for (MakePd). Every lowering unit refuses this way, so the
// CLI reports an unsupported model (exit 4) the same whatever the op.
#pragma once

#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/lower/core/builder.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

/// Throws Error(kUnsupported) "<model file>: node '<name>' (<op>): <why>".
[[noreturn]] inline void Unsupported(const Builder& b, const Node& node, const std::string& why) {
  throw Error(ErrorKind::kUnsupported, NodeInFile(b.graph, node) + ": " + why);
}

/// Creates a primitive descriptor, turning oneDNN's "unimplemented" into
/// Error(kUnsupported) naming the node.
template <typename PD, typename Desc>
PD MakePd(const Builder& b, const Node& node, const Desc& desc, const dnnl::primitive_attr& attr) {
  try {
    return PD(desc, attr, b.engine);
  } catch (const dnnl::error& e) {
    Unsupported(b, node, std::string("oneDNN has no implementation: ") + e.what());
  }
}

}  // namespace onnxfuse::backend
