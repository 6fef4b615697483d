// Gelu-20 (ONNX Operators.md, Gelu): y = 0.5 x (1 + erf(x / sqrt 2)), or with
// approximate = "tanh": y = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
// Written in opset-17 ops the way torch exports nn.GELU up to opset 17, so the
// erf form matches the Gelu pattern (patterns/gelu.onnxtxt) and the backend's
// gelu_erf lowering as torch's own spelling does.
#include "load/down_adapters.h"

namespace onnxfuse::load {

Rewrite AdaptGelu(const onnx::NodeProto& node, DownContext& ctx) {
  const std::string approximate = AttrString(node, "approximate", "none");
  const std::string& x = node.input(0);
  const std::string base = node.name();
  auto v = [&](const std::string& what) { return ctx.fresh(base + "/" + what); };
  std::vector<onnx::NodeProto> nodes;
  if (approximate == "none") {
    const std::string sqrt2 = v("sqrt2"), d = v("div"), e = v("erf"), one = v("one"), a = v("add"), m = v("mul"),
                      half = v("half");
    nodes = {ConstantNode(sqrt2, 1.41421353816986083984375f), MakeNode("Div", {x, sqrt2}, {d}, d),
             MakeNode("Erf", {d}, {e}, e), ConstantNode(one, 1.f), MakeNode("Add", {e, one}, {a}, a),
             MakeNode("Mul", {x, a}, {m}, m), ConstantNode(half, 0.5f),
             MakeNode("Mul", {m, half}, {node.output(0)}, base)};
    return {nodes, "Gelu-20: erf form in Div, Erf, Add, Mul"};
  }
  if (approximate != "tanh") ctx.Refuse(node, "approximate '" + approximate + "' is neither 'none' nor 'tanh'");
  const std::string three = v("three"), p = v("cube"), k = v("k"), pk = v("cube_k"), s = v("sum"), c = v("c"),
                    sc = v("scaled"), t = v("tanh"), one = v("one"), a = v("add"), m = v("mul"), half = v("half");
  nodes = {ConstantNode(three, 3.f),           MakeNode("Pow", {x, three}, {p}, p),
           ConstantNode(k, 0.044715f),         MakeNode("Mul", {p, k}, {pk}, pk),
           MakeNode("Add", {x, pk}, {s}, s),   ConstantNode(c, 0.7978845608028654f),
           MakeNode("Mul", {s, c}, {sc}, sc),  MakeNode("Tanh", {sc}, {t}, t),
           ConstantNode(one, 1.f),             MakeNode("Add", {t, one}, {a}, a),
           MakeNode("Mul", {x, a}, {m}, m),    ConstantNode(half, 0.5f),
           MakeNode("Mul", {m, half}, {node.output(0)}, base)};
  return {nodes, "Gelu-20: tanh form in Pow, Mul, Add, Tanh"};
}

}  // namespace onnxfuse::load
