// What opset conversion at load time did to a model (load/opset_conversion.h
// converts; Graph keeps the record): the opsets and IR versions it went
// between, and the nodes its adapters rewrote.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxfuse {

/// One node an adapter rewrote.
struct ConvertedNode {
  std::string node;     ///< the node's name ("<op_type>_<index>" when it has none)
  std::string op_type;  ///< its operator in the source opset
  std::string adapter;  ///< what was done, e.g. "ReduceMean-18: axes input -> attribute"
};

/// What the conversion did; from == to when the model was already in range.
struct OpsetConversion {
  std::int64_t from_opset = 0, from_ir = 0;
  std::int64_t to_opset = 0, to_ir = 0;
  std::vector<ConvertedNode> nodes;
  bool Converted() const { return from_opset != to_opset || from_ir != to_ir; }
};

/// Smallest and largest default-domain opset (and IR version) a model may have.
constexpr std::int64_t kOldestOpset = 1, kNewestOpset = 23;
constexpr std::int64_t kNewestIrVersion = 10;
/// The opset models above 17 are converted to: the newest libonnx 1.12 knows.
constexpr std::int64_t kWorkingOpset = 17;
constexpr std::int64_t kWorkingIrVersion = 8;

}  // namespace onnxfuse
