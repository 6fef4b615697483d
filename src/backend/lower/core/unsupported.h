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

/// Throws Error(kUnsupported) for an op the backend has no lowering for:
/// "operator not supported by the oneDNN backend", and for an op of another
/// domain than ONNX's default one (ONNX Runtime's com.microsoft contrib ops
/// other than its quantized ones, which run as their QDQ form before
/// lowering, rewrite/contrib_qoperators.h: FusedConv, Attention, ...) that
/// domain named.
[[noreturn]] inline void UnsupportedOp(const Builder& b, const Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx")
    Unsupported(b, node, "operator of domain '" + node.domain +
                             "' not supported (onnx-fuse runs the default ONNX domain's operators and ONNX "
                             "Runtime's quantized com.microsoft ones)");
  Unsupported(b, node, "operator not supported by the oneDNN backend");
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
