#include "ir/shape_inputs.h"

namespace onnxfuse {

bool ReadsAsShape(const std::string& op, std::size_t slot) {
  if (op == "Reshape" || op == "Expand" || op == "Tile" || op == "TopK" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Split" || op == "ReduceSum" || op == "OneHot" || op == "Upsample")
    return slot == 1;
  if (op == "Slice") return slot >= 1 && slot <= 4;
  if (op == "Pad") return slot == 1 || slot == 3;
  if (op == "Resize") return slot >= 1 && slot <= 3;
  if (op == "ConstantOfShape" || op == "If") return slot == 0;
  if (op == "Range") return slot <= 2;
  if (op == "Loop") return slot <= 1;
  return false;
}

}  // namespace onnxfuse
