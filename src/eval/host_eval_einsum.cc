// Einsum-12 on host tensors (host_eval.h; ONNX Operators.md, Einsum): the
// general form, by one loop over every label's range. Subscripts are letters
// (a-z, A-Z) and at most one "..." per term; a label repeated within an input
// term takes the diagonal; "..." dims broadcast across inputs (right-aligned,
// 1 stretches); without "->" the output is "..." then the letters used exactly
// once, in alphabetical order. A malformed equation or inputs that disagree
// with it are Error(kInvalidModel); a label repeated in the output is refused
// (Error(kUnsupported)), as the spec gives it no meaning.
#include <algorithm>
#include <cctype>
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

// Labels are ints: letters are their char, ellipsis dim j (of the widest
// "...", counted from the left) is kEllipsis + j.
constexpr int kEllipsis = 256;

// One term's labels, one per dim: letters, and "..." expanded to the last
// `ellipsis_rank` of the `widest` ellipsis labels (right-aligned).
std::vector<int> ExpandTerm(const Node& node, const std::string& term, std::size_t ellipsis_rank, std::size_t widest) {
  std::vector<int> labels;
  bool seen = false;
  for (std::size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c == '.') {
      if (seen || term.compare(i, 3, "...") != 0)
        throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": malformed '...' in '" + term + "'");
      seen = true, i += 2;
      for (std::size_t j = widest - ellipsis_rank; j < widest; ++j) labels.push_back(kEllipsis + static_cast<int>(j));
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      labels.push_back(c);
    } else {
      throw Error(ErrorKind::kInvalidModel,
                  NodeLabel(node) + ": subscript '" + std::string(1, c) + "' is not a letter");
    }
  }
  return labels;
}

std::size_t LetterCount(const std::string& term) {
  return static_cast<std::size_t>(std::count_if(term.begin(), term.end(),
                                                [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }));
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep) parts.emplace_back();
    else parts.back().push_back(c);
  }
  return parts;
}

Tensor Einsum(const Node& node, const HostInputs& in) {
  std::string equation;
  for (char c : AttrString(node, "equation", ""))
    if (c != ' ') equation.push_back(c);
  const auto arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  const auto terms = Split(lhs, ',');
  if (terms.size() != in.size())
    throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": equation '" + equation + "' has " +
                                              std::to_string(terms.size()) + " terms for " + std::to_string(in.size()) +
                                              " inputs");
  // The "..." width of each input, and the widest.
  std::vector<std::size_t> ellipsis(in.size(), 0);
  std::size_t widest = 0;
  for (std::size_t t = 0; t < terms.size(); ++t) {
    const std::size_t rank = NeedInput(node, in, t).dims.size(), letters = LetterCount(terms[t]);
    const bool has = terms[t].find("...") != std::string::npos;
    if (rank < letters || (!has && rank != letters))
      throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": term '" + terms[t] + "' does not fit input " +
                                                std::to_string(t) + " of rank " + std::to_string(rank));
    ellipsis[t] = rank - letters, widest = std::max(widest, ellipsis[t]);
  }
  // Label sizes: letters must agree; ellipsis dims broadcast.
  std::vector<std::vector<int>> labels;
  std::map<int, std::int64_t> size;
  std::map<int, int> uses;
  for (std::size_t t = 0; t < terms.size(); ++t) {
    labels.push_back(ExpandTerm(node, terms[t], ellipsis[t], widest));
    const Dims& dims = in[t]->dims;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      const int l = labels[t][d];
      ++uses[l];
      auto [it, fresh] = size.emplace(l, dims[d]);
      if (fresh || it->second == dims[d]) continue;
      if (l >= kEllipsis && (it->second == 1 || dims[d] == 1)) it->second = std::max(it->second, dims[d]);
      else throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": subscript of size " + std::to_string(it->second) +
                                                     " and " + std::to_string(dims[d]));
    }
  }
  std::vector<int> out;
  if (arrow != std::string::npos) {
    const std::string rhs = equation.substr(arrow + 2);
    out = ExpandTerm(node, rhs, widest, widest);
    if (rhs.find("...") == std::string::npos && widest > 0)  // numpy's rule: "..." dims must be kept
      for (int j = 0; j < static_cast<int>(widest); ++j)
        if (size[kEllipsis + j] != 1)
          throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": the output drops the '...' dims");
    for (int l : out)
      if (!size.count(l))
        throw Error(ErrorKind::kInvalidModel, NodeLabel(node) + ": output subscript not among the inputs'");
    auto sorted = out;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      throw Error(ErrorKind::kUnsupported, NodeLabel(node) + ": a subscript repeated in the output");
  } else {
    for (int j = 0; j < static_cast<int>(widest); ++j) out.push_back(kEllipsis + j);
    for (const auto& [l, n] : uses)
      if (l < kEllipsis && n == 1) out.push_back(l);  // std::map: ascending, so 'A'-'Z' before 'a'-'z' as numpy does
  }
  // Every label: the output's first, then the summed ones.
  std::vector<int> all = out;
  for (const auto& [l, n] : size)
    if (std::find(out.begin(), out.end(), l) == out.end()) all.push_back(l);
  std::map<int, std::size_t> slot;
  for (std::size_t i = 0; i < all.size(); ++i) slot[all[i]] = i;
  Dims out_dims, all_dims;
  for (int l : out) out_dims.push_back(size[l]);
  for (int l : all) all_dims.push_back(size[l]);
  // Per input, the stride of each label slot (0 where a dim is absent or broadcast; summed for a diagonal).
  std::vector<std::vector<std::int64_t>> strides(in.size(), std::vector<std::int64_t>(all.size(), 0));
  bool is_int = true;
  for (std::size_t t = 0; t < in.size(); ++t) {
    const Dims s = DenseStrides(in[t]->dims);
    for (std::size_t d = 0; d < labels[t].size(); ++d)
      if (in[t]->dims[d] != 1 || size[labels[t][d]] == 1) strides[t][slot[labels[t][d]]] += s[d];
    is_int &= IsInt64(*in[t]);
  }
  const std::int64_t out_count = Product(out_dims), total = Product(all_dims);
  const std::int64_t summed = out_count > 0 ? total / out_count : 0;
  std::vector<double> y(static_cast<std::size_t>(out_count), 0.0);
  const Dims all_strides = DenseStrides(all_dims);
  for (std::int64_t e = 0; e < total; ++e) {
    double product = 1;
    for (std::size_t t = 0; t < in.size(); ++t) {
      std::int64_t at = 0;
      for (std::size_t k = 0; k < all.size(); ++k) at += (e / all_strides[k] % all_dims[k]) * strides[t][k];
      product *= ElementAt(*in[t], at);
    }
    y[static_cast<std::size_t>(e / std::max<std::int64_t>(summed, 1))] += product;  // output slots lead `all`
  }
  return MakeHostTensor(is_int, out_dims, y);
}

}  // namespace

HostOutputs EvalEinsum(const Node& node, const HostInputs& in, std::int64_t) {
  if (node.op_type != "Einsum") return std::nullopt;
  return One(Einsum(node, in));
}

}  // namespace onnxfuse::eval
