#include "backend/lower/ops/broadcast_binary.h"

#include <optional>
#include <stdexcept>
#include <string>

#include "backend/kernels/broadcast_binary.h"
#include "backend/lower/core/dnnl_util.h"
#include "backend/lower/core/kernel_operand.h"
#include "backend/lower/core/unsupported.h"

namespace onnxfuse::backend {

namespace {

bool AlgOf(const std::string& op, BinaryAlg& alg) {
  if (op == "Add") alg = BinaryAlg::kAdd;
  else if (op == "Sub") alg = BinaryAlg::kSub;
  else if (op == "Mul") alg = BinaryAlg::kMul;
  else if (op == "Div") alg = BinaryAlg::kDiv;
  else if (op == "Max") alg = BinaryAlg::kMax;
  else if (op == "Min") alg = BinaryAlg::kMin;
  else return false;
  return true;
}

// A two-input node's float32 operands: their dims, and the broadcast dims
// (`broadcasts` false when they do not broadcast). nullopt when an input is
// not float32.
struct FloatOperands {
  Dims x, y, out;
  bool broadcasts = true;
};
std::optional<FloatOperands> FloatOperandsOf(Builder& b, const Node& node) {
  const ValueId x = node.inputs[0], y = node.inputs[1];
  if (StorageOf(b, x, node) != onnx::TensorProto::FLOAT || StorageOf(b, y, node) != onnx::TensorProto::FLOAT)
    return std::nullopt;
  FloatOperands f{b.DimsOfValue(x, node), b.DimsOfValue(y, node), {}};
  try {
    f.out = BroadcastDims(f.x, f.y);
  } catch (const std::invalid_argument&) {
    f.broadcasts = false;
  }
  return f;
}

}  // namespace

bool BinaryRunsOnOwnKernel(Builder& b, const Node& node) {
  if (!node.domain.empty() || node.num_explicit_inputs != 2 || node.outputs.empty()) return false;
  const std::string& op = node.op_type;
  if (op != "Add" && op != "Sub" && op != "Mul" && op != "Div") return false;
  const std::optional<FloatOperands> f = FloatOperandsOf(b, node);
  if (!f || !f->broadcasts) return false;  // EmitBinary names the node and the shapes
  return b.DimsVary(node.outputs[0]) || OneDnnBinaryIsSlow(b, node);
}

bool LowerBroadcastBinary(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  BinaryAlg alg{};
  if (!node.domain.empty() || node.num_explicit_inputs != 2 || !AlgOf(node.op_type, alg)) return false;
  const ValueId x = node.inputs[0], y = node.inputs[1];
  if (!b.IsAct(x) && !b.IsAct(y)) return false;
  const std::optional<FloatOperands> f = FloatOperandsOf(b, node);
  if (!f) return false;
  const Dims &dx = f->x, &dy = f->y, &out = f->out;
  if (!f->broadcasts) Unsupported(b, node, "the dims " + DimsString(dx) + " and " + DimsString(dy) + " do not broadcast");
  // oneDNN's binary takes the rest of Add, Sub, Mul and Div. Max and Min stay
  // here: oneDNN's binary_max and binary_min return the second operand where
  // the first is NaN, and ONNX Runtime's (and numpy's) give NaN.
  const bool nan_kept = alg == BinaryAlg::kMax || alg == BinaryAlg::kMin;
  if (!nan_kept && ((b.IsAct(x) && dx == out) || (b.IsAct(y) && dy == out)) && !BinaryRunsOnOwnKernel(b, node))
    return false;
  EmitOwnBinary(b, node, alg, "binary", out);
  return true;
}

void EmitOwnBinary(Builder& b, const Node& node, BinaryAlg alg, const std::string& kind, const Dims& out) {
  std::vector<std::pair<int, Arg>> args;
  const std::array<KernelOperand<float>, 2> xy = {FloatKernelOperand(b, node.inputs.at(0), node, args),
                                                  FloatKernelOperand(b, node.inputs.at(1), node, args)};
  const Act dst = b.NewAct(out, PlainDesc(out));
  const int dst_arg = static_cast<int>(args.size());
  args.emplace_back(dst_arg, Arg{dst.slot, dst.md, {}});
  const BroadcastPlan<2> plan = PlanBroadcast<2>(out, {xy[0].dims, xy[1].dims});
  CustomKernel kernel = [alg, xy, plan, dst_arg](const std::vector<void*>& data) {
    BroadcastBinary(alg, xy[0].Data(data), xy[1].Data(data), static_cast<float*>(data[static_cast<std::size_t>(dst_arg)]), plan);
  };
  b.EmitCustom(kind, node.name, std::move(args), std::move(kernel), dst.md, "onnxfuse:broadcast_binary");
  b.SetAct(node.outputs[0], dst);
}

}  // namespace onnxfuse::backend
