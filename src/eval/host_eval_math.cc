// Elementwise math on host tensors (host_eval.h), as ONNX Operators.md
// defines each op: unary functions and activations with their attributes,
// IsNaN and IsInf, the integer-aware binaries Mod, BitShift and Xor, the
// variadic Min, Max, Sum and Mean, and Clip in its attribute (before 11) and
// input (11 and later) forms. Floats in double; integers in int64, exactly.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>

#include "eval/dims.h"
#include "eval/host_eval_ops.h"
#include "eval/host_tensor.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::eval {

namespace {

using UnaryFn = std::function<double(double)>;

double Softplus(double x) { return x > 30 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

// The float function of a unary op, its attributes read once; nullopt when
// the op is not a unary one of this unit.
std::optional<UnaryFn> UnaryFunction(const Node& node) {
  const std::string& op = node.op_type;
  auto attr = [&](const char* name, double fallback) {
    return static_cast<double>(AttrFloat(node, name, static_cast<float>(fallback)));
  };
  static const std::map<std::string, double (*)(double)> kPlain = {
      {"Sqrt", [](double x) { return std::sqrt(x); }},
      {"Neg", [](double x) { return -x; }},
      {"Abs", [](double x) { return std::fabs(x); }},
      {"Ceil", [](double x) { return std::ceil(x); }},
      {"Floor", [](double x) { return std::floor(x); }},
      {"Round", [](double x) { return std::nearbyint(x); }},  // default rounding mode: ties to even (Round-11)
      {"Exp", [](double x) { return std::exp(x); }},
      {"Log", [](double x) { return std::log(x); }},
      {"Reciprocal", [](double x) { return 1.0 / x; }},
      {"Sign", [](double x) { return static_cast<double>((x > 0) - (x < 0)); }},
      {"Erf", [](double x) { return std::erf(x); }},
      {"Sin", [](double x) { return std::sin(x); }},
      {"Cos", [](double x) { return std::cos(x); }},
      {"Tan", [](double x) { return std::tan(x); }},
      {"Asin", [](double x) { return std::asin(x); }},
      {"Acos", [](double x) { return std::acos(x); }},
      {"Atan", [](double x) { return std::atan(x); }},
      {"Sinh", [](double x) { return std::sinh(x); }},
      {"Cosh", [](double x) { return std::cosh(x); }},
      {"Asinh", [](double x) { return std::asinh(x); }},
      {"Acosh", [](double x) { return std::acosh(x); }},
      {"Atanh", [](double x) { return std::atanh(x); }},
      {"Relu", [](double x) { return x > 0 ? x : 0.0; }},
      {"Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"Tanh", [](double x) { return std::tanh(x); }},
      {"Softplus", Softplus},
      {"Softsign", [](double x) { return x / (1.0 + std::fabs(x)); }},
      {"Mish", [](double x) { return x * std::tanh(Softplus(x)); }},                    // Mish-18's formula
      {"HardSwish", [](double x) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); }},  // alpha 1/6, beta 0.5
      {"Not", [](double x) { return x == 0 ? 1.0 : 0.0; }},
      {"IsNaN", [](double x) { return std::isnan(x) ? 1.0 : 0.0; }},
  };
  if (auto it = kPlain.find(op); it != kPlain.end()) return UnaryFn(it->second);
  if (op == "HardSigmoid") {
    const double alpha = attr("alpha", 0.2), beta = attr("beta", 0.5);
    return UnaryFn([=](double x) { return std::clamp(alpha * x + beta, 0.0, 1.0); });
  }
  if (op == "Elu") {
    const double alpha = attr("alpha", 1.0);
    return UnaryFn([=](double x) { return x < 0 ? alpha * (std::exp(x) - 1) : x; });
  }
  if (op == "Selu") {  // the spec's defaults, as float32 literals
    const double alpha = attr("alpha", 1.67326319217681884765625), gamma = attr("gamma", 1.05070102214813232421875);
    return UnaryFn([=](double x) { return x > 0 ? gamma * x : gamma * (alpha * std::exp(x) - alpha); });
  }
  if (op == "LeakyRelu") {
    const double alpha = attr("alpha", 0.01);
    return UnaryFn([=](double x) { return x < 0 ? alpha * x : x; });
  }
  if (op == "ThresholdedRelu") {
    const double alpha = attr("alpha", 1.0);
    return UnaryFn([=](double x) { return x > alpha ? x : 0.0; });
  }
  if (op == "Celu") {
    const double alpha = attr("alpha", 1.0);
    return UnaryFn([=](double x) { return std::max(0.0, x) + std::min(0.0, alpha * (std::exp(x / alpha) - 1)); });
  }
  if (op == "IsInf") {
    const bool negative = AttrInt(node, "detect_negative", 1) != 0, positive = AttrInt(node, "detect_positive", 1) != 0;
    return UnaryFn([=](double x) { return std::isinf(x) && (x > 0 ? positive : negative) ? 1.0 : 0.0; });
  }
  return std::nullopt;
}

// Unary ops whose integer inputs keep an integer result, computed in int64.
bool IntUnary(const std::string& op, std::int64_t x, std::int64_t& y) {
  if (op == "Neg") y = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(x));  // wraps like the hardware
  else if (op == "Abs") y = x < 0 ? static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(x)) : x;
  else if (op == "Sign") y = (x > 0) - (x < 0);
  else if (op == "Relu") y = std::max<std::int64_t>(x, 0);
  else if (op == "Not") y = x == 0;
  else if (op == "Ceil" || op == "Floor" || op == "Round") y = x;
  else if (op == "IsNaN" || op == "IsInf") y = 0;
  else return false;
  return true;
}

Tensor Unary(const Node& node, const UnaryFn& fn, const Tensor& x) {
  const std::string& op = node.op_type;
  const bool bool_out = op == "Not" || op == "IsNaN" || op == "IsInf";
  std::int64_t probe = 0;
  if (IsInt64(x) && IntUnary(op, 0, probe)) {
    Tensor y = x;
    for (auto& v : y.int_data) IntUnary(op, v, v);
    return y;
  }
  auto values = HostValues(x);
  for (auto& v : values) v = fn(v);
  return MakeHostTensor(bool_out, x.dims, values);
}

// Elementwise f(i, j) over the broadcast of a and b, i and j being flat indices.
template <typename F>
Tensor BroadcastPair(const Tensor& a, const Tensor& b, bool int_out, F f) {
  Tensor r;
  r.dims = BroadcastDims(a.dims, b.dims);
  r.elem_type = int_out ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT;
  const std::int64_t n = Product(r.dims);
  for (std::int64_t k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(BroadcastIndex(k, r.dims, a.dims));
    const auto j = static_cast<std::size_t>(BroadcastIndex(k, r.dims, b.dims));
    if (int_out) r.int_data.push_back(static_cast<std::int64_t>(f(i, j)));
    else r.data.push_back(static_cast<float>(f(i, j)));
  }
  return r;
}

// Mod-13: fmod 1 is C's fmod / remainder (sign of the dividend); fmod 0, for
// integers only, takes the sign of the divisor (Python's %).
Tensor Mod(const Node& node, const Tensor& a, const Tensor& b) {
  const bool fmod = AttrInt(node, "fmod", 0) != 0;
  if (IsInt64(a) != IsInt64(b))
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": A and B have different element types");
  if (!IsInt64(a)) {
    if (!fmod) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": fmod must be 1 for floating-point inputs");
    return BroadcastPair(a, b, false, [&](std::size_t i, std::size_t j) {
      return std::fmod(static_cast<double>(a.data[i]), static_cast<double>(b.data[j]));
    });
  }
  return BroadcastPair(a, b, true, [&](std::size_t i, std::size_t j) -> std::int64_t {
    const std::int64_t x = a.int_data[i], y = b.int_data[j];
    if (y == 0) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": integer modulo by zero");
    if (y == -1) return 0;  // INT64_MIN % -1 would trap
    std::int64_t r = x % y;
    if (!fmod && r != 0 && (r < 0) != (y < 0)) r += y;
    return r;
  });
}

// BitShift-11: unsigned X shifted by Y bits; shifts of 64 or more give 0.
// The result is in uint64 arithmetic; narrowing it to the output type
// (NarrowTo, by the caller) cuts a left shift of a narrower type.
Tensor BitShift(const Node& node, const Tensor& a, const Tensor& b) {
  const std::string direction = AttrString(node, "direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": direction must be LEFT or RIGHT");
  if (!IsInt64(a) || !IsInt64(b))
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": X and Y must be unsigned integers");
  return BroadcastPair(a, b, true, [&](std::size_t i, std::size_t j) {
    const auto x = static_cast<std::uint64_t>(a.int_data[i]), s = static_cast<std::uint64_t>(b.int_data[j]);
    const std::uint64_t r = s >= 64 ? 0 : direction == "LEFT" ? x << s : x >> s;
    return static_cast<std::int64_t>(r);
  });
}

// Min, Max (NaN propagates), Sum, Mean: variadic, broadcast together.
Tensor Variadic(const Node& node, const HostInputs& in) {
  const std::string& op = node.op_type;
  if (in.empty()) throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": no inputs");
  Tensor acc = NeedInput(node, in, 0);
  for (std::size_t k = 1; k < in.size(); ++k) {
    const Tensor& b = NeedInput(node, in, k);
    if (IsInt64(acc) && IsInt64(b)) {
      acc = BroadcastPair(acc, b, true, [&](std::size_t i, std::size_t j) {
        const std::int64_t x = acc.int_data[i], y = b.int_data[j];
        return op == "Min" ? std::min(x, y) : op == "Max" ? std::max(x, y) : x + y;
      });
      continue;
    }
    acc = BroadcastPair(acc, b, false, [&](std::size_t i, std::size_t j) {
      const double x = ElementAt(acc, static_cast<std::int64_t>(i)), y = ElementAt(b, static_cast<std::int64_t>(j));
      if ((op == "Min" || op == "Max") && (std::isnan(x) || std::isnan(y))) return static_cast<double>(NAN);
      return op == "Min" ? std::min(x, y) : op == "Max" ? std::max(x, y) : x + y;  // Sum, Mean: x + y
    });
  }
  if (op == "Mean")
    for (auto& v : acc.data) v = static_cast<float>(static_cast<double>(v) / static_cast<double>(in.size()));
  return acc;
}

// Clip: min(max(x, min), max); min and max are attributes before opset 11
// (defaults the float range), optional scalar inputs from 11 (absent: no bound).
Tensor Clip(const Node& node, const HostInputs& in, std::int64_t opset) {
  const Tensor& x = NeedInput(node, in, 0);
  if (opset < 11) {
    const double lo = AttrFloat(node, "min", std::numeric_limits<float>::lowest());
    const double hi = AttrFloat(node, "max", std::numeric_limits<float>::max());
    auto v = HostValues(x);
    for (auto& e : v) e = std::min(std::max(e, lo), hi);
    return MakeHostTensor(IsInt64(x), x.dims, v);
  }
  const Tensor* lo = in.size() > 1 ? in[1] : nullptr;
  const Tensor* hi = in.size() > 2 ? in[2] : nullptr;
  for (const Tensor* bound : {lo, hi})
    if (bound && bound->NumElements() != 1)
      throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": min and max must be scalars");
  Tensor y = x;
  for (std::size_t i = 0; i < static_cast<std::size_t>(x.NumElements()); ++i) {
    if (IsInt64(x)) {
      if (lo) y.int_data[i] = std::max(y.int_data[i], AsInts(*lo)[0]);
      if (hi) y.int_data[i] = std::min(y.int_data[i], AsInts(*hi)[0]);
    } else {
      if (lo) y.data[i] = std::max(y.data[i], static_cast<float>(ElementAt(*lo, 0)));
      if (hi) y.data[i] = std::min(y.data[i], static_cast<float>(ElementAt(*hi, 0)));
    }
  }
  return y;
}

}  // namespace

HostOutputs EvalMathOp(const Node& node, const HostInputs& in, std::int64_t opset) {
  const std::string& op = node.op_type;
  if (auto fn = UnaryFunction(node)) return One(Unary(node, *fn, NeedInput(node, in, 0)));
  if (op == "Mod") return One(Mod(node, NeedInput(node, in, 0), NeedInput(node, in, 1)));
  if (op == "BitShift") return One(BitShift(node, NeedInput(node, in, 0), NeedInput(node, in, 1)));
  if (op == "Xor") {
    const Tensor &a = NeedInput(node, in, 0), &b = NeedInput(node, in, 1);
    return std::vector<Tensor>{BroadcastPair(a, b, true, [&](std::size_t i, std::size_t j) {
      return (ElementAt(a, static_cast<std::int64_t>(i)) != 0) != (ElementAt(b, static_cast<std::int64_t>(j)) != 0);
    })};
  }
  if (op == "Min" || op == "Max" || op == "Sum" || op == "Mean") return One(Variadic(node, in));
  if (op == "Clip") return One(Clip(node, in, opset));
  return std::nullopt;
}

}  // namespace onnxfuse::eval
