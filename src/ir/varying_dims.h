// Which dims of a model's values follow its input shapes: those its graph,
// typed with symbolic input dims, leaves symbolic or unknown. A session that
// serves one prepared model at many input shapes compiles each shape's
// schedule knowing them, so that a product whose rows (or columns, or depth)
// change from one call to the next runs on a kernel made once rather than one
// compiled for every shape (backend/lower/ops/matmul.cc).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxfuse {

/// Value name -> one flag per dim, true where the dim follows the input
/// shapes. A value of unknown rank maps to an empty vector: any of its dims
/// may. Values whose shape is fully static are not listed.
using VaryingDims = std::map<std::string, std::vector<bool>>;

/// The dims of `symbolic`'s values that are symbolic (TensorType::dim_params)
/// or unknown (-1), the graph's own inputs included.
VaryingDims VaryingDimsOf(const Graph& symbolic);

/// The flags of `name` in `varying` at rank `rank`: all false when it is not
/// listed, all true when it is listed without a rank or at another rank.
std::vector<bool> VaryingDimsAt(const VaryingDims& varying, const std::string& name, std::size_t rank);

}  // namespace onnxfuse
