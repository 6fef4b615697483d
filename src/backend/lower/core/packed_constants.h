// Prepacked constant operands of a compiled plan, by key, so that a plan file
// can store them (recording, when a plan is written) and give them back when it
// is loaded (replaying), instead of folding and reordering them again.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "onnxfuse/tensor.h"

namespace onnxfuse::backend {

struct PackedConstants {
  /// false: Builder::PackedConstant records every constant it packs;
  /// true: it takes them from by_key (loaded from a plan file).
  bool replay = false;
  /// "<node index>:<op_type>:<argument>" -> the constant in its primitive's layout.
  /// Replaying also adds the constants it had to pack (recomputed), and every
  /// layout it made, under "<key>@<layout>" too (Builder::PackedConstant).
  std::map<std::string, dnnl::memory> by_key;
  /// replay: "<kind>:<anchor node name>" -> the oneDNN implementation the
  /// plan's schedule ran for it (ChooseImpl keeps it when available here).
  std::map<std::string, std::string> implementations;
  int reused = 0;      ///< replay: used in the stored layout
  int relaid = 0;      ///< replay: reordered from the stored layout to the one chosen on this CPU
  int recomputed = 0;  ///< replay: not in the file (the node was lowered differently), packed from the model
  int mapped = 0;      ///< replay: stored memories whose bytes are the mapped plan file's, not copies
  /// Initializers the steps keep as host tensors (an embedding table a host
  /// Gather reads: Builder::SharedConst), by owner graph and name: the
  /// compiles of one model at other shapes share them instead of decoding
  /// and holding each again.
  std::map<std::string, std::shared_ptr<const Tensor>> decoded;
  /// Facts about such initializers' values that a lowering found by reading
  /// every element (Builder::ConstFact), by the same key and the fact's name:
  /// read once for all those compiles.
  std::map<std::string, bool> facts;
  /// replay: what those memories' bytes lie in (the mapped plan file), or
  /// nullptr; every plan compiled with this map keeps it alive.
  std::shared_ptr<const void> storage;
};

}  // namespace onnxfuse::backend
