// Einsum as transposes, a reduction and one oneDNN matmul (see einsum.h for
// the forms; the others are the host evaluator's).
// A transpose is a reorder from a strided view of the operand's plain bytes
// (its dims permuted with their strides) into a plain buffer; a group of
// labels (batch, M, N or K) is then one dim of the product, the product of
// its labels' extents, read through a plain reshape of those bytes.
#include "backend/lower/ops/einsum.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "ir/attributes.h"
#include "ir/node_label.h"
#include "backend/lower/core/operands.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

using dnnl::memory;

namespace {

// The labels of `terms` that occur exactly once among them, sorted: an implicit output.
std::string ImplicitOutput(const std::vector<std::string>& terms) {
  std::map<char, int> count;
  for (const std::string& t : terms)
    for (char c : t) ++count[c];
  std::string out;
  for (const auto& [c, n] : count)
    if (n == 1) out += c;
  return out;
}

void CheckTerm(const std::string& term, const std::string& what) {
  for (std::size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
      throw std::invalid_argument(what + " has '" + std::string(1, c) + "', not a letter");
    if (term.find(c, i + 1) != std::string::npos)
      throw std::invalid_argument(what + " repeats label '" + std::string(1, c) + "' (a diagonal)");
  }
}

// A view of the plain bytes of a tensor with labels `from` and `dims`, with
// its dims in the order of `to` (a permutation of `from`'s labels).
memory::desc PermutedView(const std::string& from, const Dims& dims, const std::string& to) {
  if (to.empty()) return PlainDesc({});
  Dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  Dims d, s;
  for (char c : to) {
    const std::size_t i = from.find(c);
    d.push_back(dims[i]), s.push_back(strides[i]);
  }
  return memory::desc(d, DataType::f32, s);
}

// Dims of the labels `labels` of an operand with labels `term` and `dims`.
Dims DimsOfLabels(const std::string& term, const Dims& dims, const std::string& labels) {
  Dims d;
  for (char c : labels) d.push_back(dims[term.find(c)]);
  return d;
}

// One operand: transposed so that the output's labels come first, in its
// order, and the summed ones last (a reorder step unless already so); then,
// when labels are summed, a reduction_sum of [kept, summed] to [kept, 1].
void EmitTransposeSum(Builder& b, const Node& node, const std::string& a, const Dims& dims, const std::string& o) {
  std::string summed;
  for (char c : a)
    if (o.find(c) == std::string::npos) summed += c;
  const Dims moved = DimsOfLabels(a, dims, o + summed), out = DimsOfLabels(a, dims, o);
  const Arg t =
      RuntimeOperand(b, node.inputs[0], node, PermutedView(a, dims, o + summed), PlainDesc(moved), node.name);
  const std::int64_t kept = Product(out), count = Product(DimsOfLabels(a, dims, summed));
  if (count == 1) {  // nothing to add up (oneDNN has no reduction that reduces nothing): a reshape
    b.SetAct(node.outputs[0], Act{t.slot, PlainDesc(out), out});
    return;
  }
  const memory::desc src_md = PlainDesc({kept, count}), dst_md = PlainDesc({kept, 1});
  auto pd = MakePd<dnnl::reduction::primitive_desc>(
      b, node, dnnl::reduction::desc(dnnl::algorithm::reduction_sum, src_md, dst_md, 0.f, 0.f), b.Attr());
  const Act y = b.NewAct(out, PlainDesc(out));
  b.Emit(pd, "reduction", node.name + " (sum)",
         {{DNNL_ARG_SRC, Arg{t.slot, src_md, {}}}, {DNNL_ARG_DST, Arg{y.slot, dst_md, {}}}}, dst_md);
  b.SetAct(node.outputs[0], y);
}

}  // namespace

EinsumEquation ParseEinsum(const std::string& text) {
  std::string eq;
  for (char c : text)
    if (c != ' ') eq += c;
  if (eq.find('.') != std::string::npos) throw std::invalid_argument("an ellipsis ('...') is not supported");
  EinsumEquation e;
  const std::size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  for (std::size_t start = 0;;) {
    const std::size_t comma = lhs.find(',', start);
    e.inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (std::size_t i = 0; i < e.inputs.size(); ++i) CheckTerm(e.inputs[i], "operand " + std::to_string(i));
  e.output = arrow == std::string::npos ? ImplicitOutput(e.inputs) : eq.substr(arrow + 2);
  CheckTerm(e.output, "the output");
  for (char c : e.output)
    if (std::none_of(e.inputs.begin(), e.inputs.end(),
                     [c](const std::string& t) { return t.find(c) != std::string::npos; }))
      throw std::invalid_argument("output label '" + std::string(1, c) + "' is in no operand");
  return e;
}

bool LowerEinsum(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const std::string equation = AttrString(node, "equation", "");
  std::string why;  // set when oneDNN's path does not take the form
  EinsumEquation e;
  try {
    e = ParseEinsum(equation);
  } catch (const std::invalid_argument& error) {
    why = error.what();
  }
  if (why.empty() && e.inputs.size() > 2) why = "more than two operands";
  if (why.empty() && e.inputs.size() != node.num_explicit_inputs)
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": equation '" + equation +
                                              "' has " + std::to_string(e.inputs.size()) + " operands, the node " +
                                              std::to_string(node.num_explicit_inputs) + " inputs");
  std::vector<Dims> dims;
  for (std::size_t i = 0; why.empty() && i < e.inputs.size(); ++i) {
    dims.push_back(b.DimsOfValue(node.inputs[i], node));
    if (dims[i].size() != e.inputs[i].size())
      throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": operand " +
                                                std::to_string(i) + " of shape " + DimsString(dims[i]) +
                                                " does not have the " + std::to_string(e.inputs[i].size()) +
                                                " labels of '" + e.inputs[i] + "'");
  }
  // Two operands: every label batch, M, N or K (einsum.h).
  std::string batch, m, n, k;
  if (why.empty() && e.inputs.size() == 2) {
    const std::string &a = e.inputs[0], &w = e.inputs[1], &o = e.output;
    for (char c : o) {
      const bool in_a = a.find(c) != std::string::npos, in_w = w.find(c) != std::string::npos;
      (in_a && in_w ? batch : in_a ? m : n) += c;
    }
    for (char c : a + w) {
      const bool in_a = a.find(c) != std::string::npos, in_w = w.find(c) != std::string::npos;
      if (o.find(c) != std::string::npos || (in_a && in_w)) continue;
      why = "label '" + std::string(1, c) + "' of one operand only is summed";
    }
    for (char c : a)
      if (o.find(c) == std::string::npos && w.find(c) != std::string::npos) k += c;
    for (char c : batch + k)
      if (why.empty() && dims[0][a.find(c)] != dims[1][w.find(c)])
        why = "label '" + std::string(1, c) + "' has extent " + std::to_string(dims[0][a.find(c)]) +
              " in operand 0 and " + std::to_string(dims[1][w.find(c)]) + " in operand 1 (broadcast)";
  }
  if (!why.empty()) {
    spdlog::debug("{}: equation '{}' is no transpose, sum or batched matmul ({}): left to the host evaluator",
                  NodeLabel(node), equation, why);
    return false;
  }
  const std::string label = node.name;
  if (e.inputs.size() == 1) {
    EmitTransposeSum(b, node, e.inputs[0], dims[0], e.output);
    return true;
  }
  const std::string &a = e.inputs[0], &w = e.inputs[1], &o = e.output;
  const std::int64_t nb = Product(DimsOfLabels(a, dims[0], batch)), nm = Product(DimsOfLabels(a, dims[0], m));
  const std::int64_t nk = Product(DimsOfLabels(a, dims[0], k)), nn = Product(DimsOfLabels(w, dims[1], n));
  // The operands in the product's label order: plain bytes, reshaped to 3-D.
  const std::string a_order = batch + m + k, w_order = batch + k + n;
  Arg src = RuntimeOperand(b, node.inputs[0], node, PermutedView(a, dims[0], a_order),
                           PlainDesc(DimsOfLabels(a, dims[0], a_order)), label + " (operand 0)");
  Arg weights = RuntimeOperand(b, node.inputs[1], node, PermutedView(w, dims[1], w_order),
                               PlainDesc(DimsOfLabels(w, dims[1], w_order)), label + " (operand 1)");
  src.md = PlainDesc({nb, nm, nk}), weights.md = PlainDesc({nb, nk, nn});
  const memory::desc dst_md = PlainDesc({nb, nm, nn});
  auto pd = MakePd<dnnl::matmul::primitive_desc>(b, node, dnnl::matmul::desc(src.md, weights.md, dst_md), b.Attr());
  // The product holds the output's elements in the order batch, M, N.
  const std::string product_order = batch + m + n;
  Dims product_dims = DimsOfLabels(a, dims[0], batch + m);
  for (std::int64_t d : DimsOfLabels(w, dims[1], n)) product_dims.push_back(d);
  const Dims out = DimsOfLabels(product_order, product_dims, o);
  const Act product = b.NewAct(product_dims, PlainDesc(product_dims));
  b.Emit(pd, "matmul", label,
         {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, Arg{product.slot, dst_md, {}}}}, dst_md);
  if (product_order == o) {
    b.SetAct(node.outputs[0], Act{product.slot, PlainDesc(out), out});
    return true;
  }
  const Act y = b.EmitReorder(Arg{product.slot, PermutedView(product_order, product_dims, o), {}}, out, PlainDesc(out),
                              label + " (transpose)");
  b.SetAct(node.outputs[0], y);
  return true;
}

}  // namespace onnxfuse::backend
