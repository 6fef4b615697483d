// Elementwise math ops that oneDNN 2.6 lacks or computes too loosely, as one
// parallel loop over a plain buffer: y[i] = f(x[i]) with f from the C++
// standard library, written as ONNX Operators.md defines each op (attributes
// and defaults from there); Pow with a constant exponent tensor likewise,
// y[i] = pow(x[i], e[i]). oneDNN has no erf, trigonometric, rounding or sign
// functions, and its eltwise_log gives log(1) = -1.4e-6 where ONNX's node test
// test_log_example wants 0 within 1e-7.
#include "backend/lower/std_math.h"

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "backend/lower/host_eval.h"
#include "backend/lower/host_tensor.h"
#include "backend/lower/unsupported.h"

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
  // Round: halves to even (ONNX Round-11), the default rounding mode's nearbyint.
  if (op == "Round") return EmitLoop(b, node, "round", [](float x) { return std::nearbyint(x); });
  if (op == "Sign") return EmitLoop(b, node, "sign", [](float x) { return static_cast<float>((x > 0) - (x < 0)); });
  if (op == "Softsign") return EmitLoop(b, node, "softsign", [](float x) { return x / (1 + std::fabs(x)); });
  if (op == "ThresholdedRelu") {
    const float alpha = AttrFloat(node, "alpha", 1.f);
    return EmitLoop(b, node, "thresholded_relu", [alpha](float x) { return x > alpha ? x : 0.f; });
  }
  if (op == "Selu") {  // gamma * (x > 0 ? x : alpha * (exp(x) - 1))
    const float alpha = AttrFloat(node, "alpha", 1.67326319217681884765625f);
    const float gamma = AttrFloat(node, "gamma", 1.05070102214813232421875f);
    return EmitLoop(b, node, "selu",
                    [alpha, gamma](float x) { return gamma * (x > 0 ? x : alpha * (std::exp(x) - 1)); });
  }
  if (op == "Shrink") {  // x < -lambd: x + bias; x > lambd: x - bias; else 0
    const float bias = AttrFloat(node, "bias", 0.f), lambd = AttrFloat(node, "lambd", 0.5f);
    return EmitLoop(b, node, "shrink",
                    [bias, lambd](float x) { return x < -lambd ? x + bias : x > lambd ? x - bias : 0.f; });
  }
  if (op == "Celu") {  // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    const float alpha = AttrFloat(node, "alpha", 1.f);
    return EmitLoop(b, node, "celu", [alpha](float x) {
      return std::max(0.f, x) + std::min(0.f, alpha * (std::exp(x / alpha) - 1));
    });
  }
  Unsupported(b, node, "not an elementwise function of the standard library");
}

void EmitPow(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  if (!b.IsAct(node.inputs.at(0))) Unsupported(b, node, "X must be computed at run time");
  const Tensor& y = b.Const(node.inputs.at(1), node);
  const Dims dims = b.ActOf(node.inputs[0], node).dims;
  Dims out;
  try {
    out = BroadcastDims(dims, y.dims);
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::kInvalidModel, b.graph.source_path() + ": " + NodeLabel(node) + ": " + e.what());
  }
  if (out != dims) Unsupported(b, node, "an exponent that broadcasts X to a larger shape is not supported");
  // Y broadcast to X's shape now (ONNX multidirectional broadcasting): one exponent per element.
  std::vector<float> exponent(static_cast<std::size_t>(Product(dims)));
  for (std::size_t i = 0; i < exponent.size(); ++i)
    exponent[i] = static_cast<float>(ElementAt(y, BroadcastIndex(static_cast<std::int64_t>(i), dims, y.dims)));
  EmitLoop(b, node, "pow", [exponent = std::move(exponent)](float x, std::int64_t i) {
    return std::pow(x, exponent[static_cast<std::size_t>(i)]);
  });
}

}  // namespace onnxfuse::backend
