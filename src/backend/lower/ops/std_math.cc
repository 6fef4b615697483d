// Elementwise math ops that oneDNN 2.6 lacks or computes too loosely, as one
// parallel loop over a plain buffer: y[i] = f(x[i]) with f from the C++
// standard library, written as ONNX Operators.md defines each op (attributes
// and defaults from there); Pow with a constant exponent tensor likewise,
// y[i] = pow(x[i], e[i]), and with an exponent computed at run time, both
// operands broadcast. oneDNN has no erf, trigonometric, rounding or sign
// functions, and its eltwise_log gives log(1) = -1.4e-6 where ONNX's node test
// test_log_example wants 0 within 1e-7.
#include "backend/lower/ops/std_math.h"

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "backend/lower/core/unsupported.h"

namespace onnxfuse::backend {

namespace {

// One step y[i] = f(x[i]), or f(x[i], i) when f takes the index too, over the
// plain buffer of the node's first input; `kind` names it in step lists.
template <typename F>
void EmitLoop(Builder& b, const Node& node, std::string kind, F f) {
  Arg src = b.UsePlain(node.inputs.at(0), node);
  const Dims dims = b.ActOf(node.inputs[0], node).dims;
  Act dst = b.NewAct(dims, PlainDesc(dims));
  const std::int64_t n = Product(dims);
  b.EmitCustom(std::move(kind), node.name, {{0, src}, {1, Arg{dst.slot, dst.md, {}}}},
               [n, f](const std::vector<void*>& data) {
                 const auto* x = static_cast<const float*>(data[0]);
                 auto* y = static_cast<float*>(data[1]);
#pragma omp parallel for schedule(static)
                 for (std::int64_t i = 0; i < n; ++i) {
                   if constexpr (std::is_invocable_v<const F&, float, std::int64_t>) y[i] = f(x[i], i);
                   else y[i] = f(x[i]);
                 }
               },
               dst.md);
  b.SetAct(node.outputs[0], dst);
}

}  // namespace

bool IsStdUnary(const Node& node) {
  static const std::set<std::string> kOps = {"Erf",  "Log",   "Sin",   "Cos",   "Tan",   "Asin",  "Acos",
                                             "Atan", "Sinh",  "Cosh",  "Asinh", "Acosh", "Atanh", "Floor",
                                             "Ceil", "Round", "Sign",  "Softsign", "ThresholdedRelu", "Selu",
                                             "Shrink", "Celu"};
  return node.domain.empty() && node.outputs.size() == 1 && kOps.count(node.op_type) > 0;
}

void EmitStdUnary(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const std::string& op = node.op_type;
  if (op == "Erf") return EmitLoop(b, node, "erf", [](float x) { return std::erf(x); });
  if (op == "Log") return EmitLoop(b, node, "log", [](float x) { return std::log(x); });
  if (op == "Sin") return EmitLoop(b, node, "sin", [](float x) { return std::sin(x); });
  if (op == "Cos") return EmitLoop(b, node, "cos", [](float x) { return std::cos(x); });
  if (op == "Tan") return EmitLoop(b, node, "tan", [](float x) { return std::tan(x); });
  if (op == "Asin") return EmitLoop(b, node, "asin", [](float x) { return std::asin(x); });
  if (op == "Acos") return EmitLoop(b, node, "acos", [](float x) { return std::acos(x); });
  if (op == "Atan") return EmitLoop(b, node, "atan", [](float x) { return std::atan(x); });
  if (op == "Sinh") return EmitLoop(b, node, "sinh", [](float x) { return std::sinh(x); });
  if (op == "Cosh") return EmitLoop(b, node, "cosh", [](float x) { return std::cosh(x); });
  if (op == "Asinh") return EmitLoop(b, node, "asinh", [](float x) { return std::asinh(x); });
  if (op == "Acosh") return EmitLoop(b, node, "acosh", [](float x) { return std::acosh(x); });
  if (op == "Atanh") return EmitLoop(b, node, "atanh", [](float x) { return std::atanh(x); });
  if (op == "Floor") return EmitLoop(b, node, "floor", [](float x) { return std::floor(x); });
  if (op == "Ceil") return EmitLoop(b, node, "ceil", [](float x) { return std::ceil(x); });
  // Round: halves to even (ONNX Round-11). Adding and subtracting 2^23 rounds
  // |x| < 2^23 to an integer in the default rounding mode (to nearest, ties to
  // even), as nearbyint would, but in a loop the compiler vectorizes (nearbyint
  // is a libm call per element); larger magnitudes, inf and NaN are their own
  // rounding; the sign is put back, so -0.3 gives -0 as nearbyint does.
  if (op == "Round")
    return EmitLoop(b, node, "round", [](float x) {
      constexpr float kTwo23 = 8388608.0f;
      const float magnitude = std::fabs(x);
      return magnitude < kTwo23 ? std::copysign((magnitude + kTwo23) - kTwo23, x) : x;
    });
  if (op == "Sign") return EmitLoop(b, node, "sign", [](float x) { return static_cast<float>((x > 0) - (x < 0)); });
  if (op == "Softsign") return EmitLoop(b, node, "softsign", [](float x) { return x / (1 + std::fabs(x)); });
  if (op == "ThresholdedRelu") {
    const float alpha = AttrFloat(node, "alpha", 1.f);
    return EmitLoop(b, node, "thresholded_relu", [alpha](float x) { return x > alpha ? x : 0.f; });
  }
  // Selu and Celu take exp(x) - 1 as expm1: near 0 the subtraction would cancel
  // all but a few bits (x = -1e-4: a relative error of 5e-4).
  if (op == "Selu") {  // gamma * (x > 0 ? x : alpha * (exp(x) - 1))
    const float alpha = AttrFloat(node, "alpha", 1.67326319217681884765625f);
    const float gamma = AttrFloat(node, "gamma", 1.05070102214813232421875f);
    return EmitLoop(b, node, "selu",
                    [alpha, gamma](float x) { return gamma * (x > 0 ? x : alpha * std::expm1(x)); });
  }
  if (op == "Shrink") {  // x < -lambd: x + bias; x > lambd: x - bias; else 0
    const float bias = AttrFloat(node, "bias", 0.f), lambd = AttrFloat(node, "lambd", 0.5f);
    return EmitLoop(b, node, "shrink",
                    [bias, lambd](float x) { return x < -lambd ? x + bias : x > lambd ? x - bias : 0.f; });
  }
  if (op == "Celu") {  // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    const float alpha = AttrFloat(node, "alpha", 1.f);
    return EmitLoop(b, node, "celu", [alpha](float x) {
      return std::max(0.f, x) + std::min(0.f, alpha * std::expm1(x / alpha));
    });
  }
  Unsupported(b, node, "not an elementwise function of the standard library");
}

namespace {

// Pow with an exponent known only at run time (or a constant X and such an
// exponent): Z = X ^ Y elementwise, both broadcast multidirectionally to Z's
// shape (ONNX Operators.md, Pow; Broadcasting.md), as one loop over Z that
// finds each operand's element by its broadcast strides (0 along a dim of 1).
void EmitRuntimePow(Builder& b, const Node& node) {
  for (std::size_t i = 0; i < 2; ++i) {
    const ValueId v = node.inputs.at(i);
    if (b.IsConst(v) && b.Const(v, node).elem_type != onnx::TensorProto::FLOAT)
      Unsupported(b, node, "input '" + b.graph.value(v).name + "' is a non-float32 constant");
    if (!b.IsAct(v)) b.ConstAsAct(v, node);
  }
  const Dims xd = b.ActOf(node.inputs[0], node).dims, yd = b.ActOf(node.inputs[1], node).dims;
  Dims out;
  try {
    out = BroadcastDims(xd, yd);
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": " + e.what());
  }
  // Per dim of Z (outermost first): its extent and each operand's stride.
  const std::size_t rank = out.size();
  auto broadcast_strides = [&](const Dims& d) {
    const Dims e = ExpandRank(d, rank);
    Dims strides(rank, 0);
    std::int64_t stride = 1;
    for (std::size_t i = rank; i-- > 0;) {
      strides[i] = e[i] == 1 ? 0 : stride;
      stride *= e[i];
    }
    return strides;
  };
  const Dims xs = broadcast_strides(xd), ys = broadcast_strides(yd);
  const Arg x = b.UsePlain(node.inputs[0], node), y = b.UsePlain(node.inputs[1], node);
  const Act z = b.NewAct(out, PlainDesc(out));
  const std::int64_t count = Product(out);
  b.EmitCustom("pow", node.name, {{0, x}, {1, y}, {2, Arg{z.slot, z.md, {}}}},
               [out, xs, ys, count](const std::vector<void*>& data) {
                 const auto* xp = static_cast<const float*>(data[0]);
                 const auto* yp = static_cast<const float*>(data[1]);
                 auto* zp = static_cast<float*>(data[2]);
#pragma omp parallel for schedule(static)
                 for (std::int64_t i = 0; i < count; ++i) {
                   std::int64_t rest = i, xi = 0, yi = 0;
                   for (std::size_t d = out.size(); d-- > 0;) {
                     const std::int64_t c = rest % out[d];
                     rest /= out[d];
                     xi += c * xs[d], yi += c * ys[d];
                   }
                   zp[i] = std::pow(xp[xi], yp[yi]);
                 }
               },
               z.md);
  b.SetAct(node.outputs[0], z);
}

}  // namespace

void EmitPow(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (!b.IsAct(node.inputs.at(0)) || !b.IsConst(node.inputs.at(1))) return EmitRuntimePow(b, node);
  const Tensor& y = b.Const(node.inputs.at(1), node);
  const Dims dims = b.ActOf(node.inputs[0], node).dims;
  Dims out;
  try {
    out = BroadcastDims(dims, y.dims);
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": " + e.what());
  }
  if (out != dims) return EmitRuntimePow(b, node);  // Y broadcasts X: the loop over Z's shape
  // Y broadcast to X's shape now (ONNX multidirectional broadcasting): one exponent per element.
  std::vector<float> exponent(static_cast<std::size_t>(Product(dims)));
  for (std::size_t i = 0; i < exponent.size(); ++i)
    exponent[i] = static_cast<float>(eval::ElementAt(y, eval::BroadcastIndex(static_cast<std::int64_t>(i), dims, y.dims)));
  EmitLoop(b, node, "pow", [exponent = std::move(exponent)](float x, std::int64_t i) {
    return std::pow(x, exponent[static_cast<std::size_t>(i)]);
  });
}

}  // namespace onnxfuse::backend
