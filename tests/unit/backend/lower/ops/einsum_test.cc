// Einsum (src/backend/lower/ops/einsum.cc): the equation parser, and the forms
// lowered to transposes, a sum and one matmul, checked against a reference
// that sums over every assignment of the labels in double (ONNX Operators.md,
// Einsum); other forms (diagonals, three operands, ...) run as one host step.
#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/lower/ops/einsum.h"
#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using backend::ParseEinsum;

namespace {

// out[o] = sum over the labels not in the output of prod_i x_i[...], every
// label's extent taken from the operand that has it; flat, row-major.
std::vector<double> NaiveEinsum(const std::vector<std::string>& terms, const std::string& out,
                                const std::vector<Tensor>& xs) {
  std::map<char, std::int64_t> extent;
  for (std::size_t i = 0; i < terms.size(); ++i)
    for (std::size_t d = 0; d < terms[i].size(); ++d) extent[terms[i][d]] = xs[i].dims[d];
  std::string labels = out;
  for (const auto& [c, n] : extent)
    if (out.find(c) == std::string::npos) labels += c;
  std::int64_t out_size = 1, total = 1;
  for (char c : out) out_size *= extent[c];
  for (char c : labels) total *= extent[c];
  std::vector<double> y(static_cast<std::size_t>(out_size), 0.0);
  std::map<char, std::int64_t> at;
  for (std::int64_t flat = 0; flat < total; ++flat) {
    std::int64_t rest = flat;
    for (std::size_t i = labels.size(); i-- > 0;) at[labels[i]] = rest % extent[labels[i]], rest /= extent[labels[i]];
    double product = 1;
    for (std::size_t i = 0; i < terms.size(); ++i) {
      std::int64_t offset = 0;
      for (char c : terms[i]) offset = offset * extent[c] + at[c];
      product *= xs[i].data[static_cast<std::size_t>(offset)];
    }
    std::int64_t o = 0;
    for (char c : out) o = o * extent[c] + at[c];
    y[static_cast<std::size_t>(o)] += product;
  }
  return y;
}

std::string TypeText(const std::vector<std::int64_t>& dims) {
  return dims.empty() ? "float" : "float[" + test::DimsText(dims) + "]";
}

}  // namespace

TEST_CASE("ParseEinsum: explicit and implicit outputs, and what it refuses", "[einsum]") {
  const backend::EinsumEquation e = ParseEinsum("bij, bjk -> bik");
  CHECK(e.inputs == std::vector<std::string>{"bij", "bjk"});
  CHECK(e.output == "bik");
  CHECK(ParseEinsum("ij,jk").output == "ik");  // labels occurring once, sorted
  CHECK(ParseEinsum("ji,kj").output == "ik");
  CHECK(ParseEinsum("i,i").output.empty());
  CHECK(ParseEinsum("i,i->").output.empty());
  CHECK_THROWS_WITH(ParseEinsum("...ij,...jk"), Catch::Contains("ellipsis"));
  CHECK_THROWS_WITH(ParseEinsum("bii->bi"), Catch::Contains("repeats label 'i'"));
  CHECK_THROWS_WITH(ParseEinsum("ij,jk->iz"), Catch::Contains("output label 'z' is in no operand"));
  CHECK_THROWS_WITH(ParseEinsum("i1,1j"), Catch::Contains("not a letter"));
}

TEST_CASE("Einsum forms that are a batched matmul with transposes, or a transpose and sum, match the summed loops",
          "[einsum]") {
  struct Form {
    std::string equation;
    std::vector<std::vector<std::int64_t>> dims;
  };
  const std::vector<Form> forms = {
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"bhid,bhjd->bhij", {{2, 3, 4, 5}, {2, 3, 6, 5}}},  // attention's Q K^T
      {"bhij,bhjd->bhid", {{2, 3, 4, 6}, {2, 3, 6, 5}}},  // its P V
      {"ij,jk", {{3, 4}, {4, 5}}},
      {"ij,kj->ik", {{3, 4}, {5, 4}}},
      {"ji,jk->ki", {{4, 3}, {4, 5}}},  // both operands and the result transposed
      {"i,i->", {{7}, {7}}},
      {"i,j->ij", {{3}, {4}}},  // outer product: K empty
      {"bik,bjk->bji", {{2, 3, 4}, {2, 5, 4}}},
      {"abc,cd->dba", {{2, 3, 4}, {4, 5}}},  // two M labels
      {"ij->ji", {{3, 4}}},
      {"abc->cab", {{2, 3, 4}}},
      {"ij->i", {{3, 4}}},  // sums: a reduction after the transpose
      {"abc->b", {{2, 3, 4}}},
      {"ij->", {{3, 4}}},
      {"pik->pi", {{1, 1, 1}}},  // summed labels of extent 1: nothing to reduce
  };
  for (const Form& f : forms) {
    INFO(f.equation);
    const backend::EinsumEquation e = ParseEinsum(f.equation);
    std::vector<Tensor> xs;
    std::string inputs, args, out_labels = e.output;
    for (std::size_t i = 0; i < f.dims.size(); ++i) {
      const std::string name = std::string("x") + std::to_string(i);
      const auto salt = 7 * static_cast<std::int64_t>(i);
      xs.push_back(test::TensorFrom(f.dims[i], [salt](std::int64_t k) { return test::Wave(3 * k + salt); }, name));
      inputs += (i ? ", " : "") + TypeText(f.dims[i]) + " " + name;
      args += (i ? ", " : "") + name;
    }
    std::vector<std::int64_t> out;
    for (char c : out_labels)
      for (std::size_t i = 0; i < e.inputs.size(); ++i)
        if (e.inputs[i].find(c) != std::string::npos) {
          out.push_back(f.dims[i][e.inputs[i].find(c)]);
          break;
        }
    const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g ()" + inputs + ") => (" + TypeText(out) + R"( y) {
        y = Einsum <equation = ")" + f.equation + R"("> ()" + args + R"()
      })";
    const test::PlanRun fused = test::CheckBoth(text, xs, NaiveEinsum(e.inputs, e.output, xs), 1e-5);
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "matmul ") == (f.dims.size() == 2 ? 1 : 0));
  }
}

TEST_CASE("Einsum with a constant operand reads it as an activation", "[einsum]") {
  const Tensor x = test::TensorFrom({2, 3}, test::Wave, "x");
  const Tensor w = test::TensorOf("w", {3, 2}, {1, 2, 3, 4, 5, 6});
  test::CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[3,2] w = {1, 2, 3, 4, 5, 6}) => (float[2,2] y) {
      y = Einsum <equation = "ij,jk->ik"> (x, w)
    })",
                  {x}, NaiveEinsum({"ij", "jk"}, "ik", {x, w}), 1e-6);
}

TEST_CASE("Einsum forms other than transposes, sums and batched matmuls are left to a host step", "[einsum]") {
  struct Form {
    std::string equation;
    std::vector<std::vector<std::int64_t>> dims;
    std::vector<std::string> terms;  // the equation's, for the reference
    std::string out;
  };
  const std::vector<Form> forms = {
      {"bii->bi", {{2, 3, 3}}, {"bii"}, "bi"},                                     // a diagonal
      {"ij,jk->k", {{3, 4}, {4, 5}}, {"ij", "jk"}, "k"},                           // i summed in one operand only
      {"i,j,k->ijk", {{2}, {3}, {4}}, {"i", "j", "k"}, "ijk"},                     // three operands
      {"...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}, {"bij", "bjk"}, "bik"},  // an ellipsis
  };
  for (const Form& f : forms) {
    INFO(f.equation);
    std::vector<Tensor> xs;
    std::string inputs, args;
    for (std::size_t i = 0; i < f.dims.size(); ++i) {
      const std::string name = std::string("x") + std::to_string(i);
      const auto salt = 5 * static_cast<std::int64_t>(i);
      xs.push_back(test::TensorFrom(f.dims[i], [salt](std::int64_t k) { return test::Wave(3 * k + salt); }, name));
      inputs += (i ? ", " : "") + TypeText(f.dims[i]) + " " + name;
      args += (i ? ", " : "") + name;
    }
    std::map<char, std::int64_t> extent;
    for (std::size_t i = 0; i < f.terms.size(); ++i)
      for (std::size_t d = 0; d < f.terms[i].size(); ++d) extent[f.terms[i][d]] = f.dims[i][d];
    std::vector<std::int64_t> out;
    for (char c : f.out) out.push_back(extent[c]);
    const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g ()" + inputs + ") => (" + TypeText(out) + R"( y) {
        y = Einsum <equation = ")" + f.equation + R"("> ()" + args + R"()
      })";
    const test::PlanRun fused = test::CheckBoth(text, xs, NaiveEinsum(f.terms, f.out, xs), 1e-5);
    INFO(test::StepList(fused));
    CHECK(test::StepsStartingWith(fused, "host ") == 1);
    CHECK(test::StepsStartingWith(fused, "matmul ") == 0);
  }
}
