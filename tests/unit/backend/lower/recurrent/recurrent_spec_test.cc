// What the recurrent lowering refuses, and the sequence_lens it accepts
// (src/backend/lower/recurrent/recurrent_spec.cc).
#include <catch2/catch.hpp>

#include <string>

#include "onnxfuse/error.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// An RNN-family node over X [2, 1, 2] with hidden_size 2, its W, R and B
// initializers, `attrs` added to its attributes and `extra` inputs after B
// (", seq" for sequence_lens), declared by `extra_decl`.
std::string Model(const std::string& op, const std::string& attrs, const std::string& extra = "",
                  const std::string& extra_decl = "", int directions = 1) {
  const int gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  const std::string d = std::to_string(directions), gh = std::to_string(gates * 2);
  const std::string w = test::FloatList(test::Floats(static_cast<std::size_t>(directions * gates * 2 * 2), 1.f, 1));
  const std::string bias = test::FloatList(test::Floats(static_cast<std::size_t>(directions * gates * 4), 1.f, 2));
  return "<ir_version: 8, opset_import: [\"\" : 14]>\ng (float[2,1,2] x" + extra_decl + ", float[" + d + "," + gh +
         ",2] w = " + w + ", float[" + d + "," + gh + ",2] r = " + w + ", float[" + d + "," +
         std::to_string(gates * 4) + "] b = " + bias + ") => (float[2," + d + ",1,2] y) {\n  y = " + op +
         " <hidden_size = 2" + attrs + "> (x, w, r, b" + extra + ")\n}\n";
}

}  // namespace

TEST_CASE("recurrent nodes oneDNN cannot compute are refused naming the node", "[recurrent]") {
  CHECK_THAT(test::CompileError(Model("LSTM", ", clip = 3.0")), Catch::Contains("LSTM") && Catch::Contains("clip"));
  CHECK_THAT(test::CompileError(Model("LSTM", ", input_forget = 1")), Catch::Contains("input_forget"));
  CHECK_THAT(test::CompileError(Model("LSTM", ", activations = [\"Sigmoid\", \"Relu\", \"Tanh\"]")),
             Catch::Contains("activations sigmoid,relu,tanh"));
  CHECK_THAT(test::CompileError(Model("GRU", ", activations = [\"HardSigmoid\", \"Tanh\"]")),
             Catch::Contains("GRU") && Catch::Contains("activations"));
  CHECK_THAT(test::CompileError(Model("RNN", ", activations = [\"LeakyRelu\"]")), Catch::Contains("activations leakyrelu"));
  CHECK_THAT(test::CompileError(Model("RNN", ", direction = \"bidirectional\", activations = [\"Tanh\", \"Relu\"]", "", "", 2)),
             Catch::Contains("every direction"));
}

TEST_CASE("sequence_lens is taken only when it is seq_length everywhere", "[recurrent]") {
  const Tensor x = test::TensorOf("x", {2, 1, 2}, {0.5f, -1.f, 0.25f, 2.f});
  // Equal to seq_length (2): the node runs as if it were omitted.
  const std::string full = Model("GRU", "", ", seq", ", int32[1] seq = {2}");
  const std::string omitted = Model("GRU", "");
  const test::PlanRun with = test::RunPlan(test::GraphFromText(full), true, {x});
  const test::PlanRun without = test::RunPlan(test::GraphFromText(omitted), true, {x});
  std::vector<double> expected(without.outputs.at(0).data.begin(), without.outputs.at(0).data.end());
  test::CheckClose(with.outputs.at(0), expected, 1e-6);
  CHECK_THAT(test::CompileError(Model("GRU", "", ", seq", ", int32[1] seq = {1}")),
             Catch::Contains("GRU") && Catch::Contains("sequence_lens"));
  // A graph input: its lengths are known only at run time (not a host step's).
  CHECK_THAT(test::CompileError(Model("LSTM", "", ", seq", ", int32[1] seq")),
             Catch::Contains("LSTM") && Catch::Contains("sequence_lens is computed at run time"));
}

TEST_CASE("the omitted hidden_size is read from R", "[recurrent]") {
  std::string text = Model("RNN", "");
  text.replace(text.find("hidden_size = 2"), 15, "direction = \"forward\"");
  const Tensor x = test::TensorOf("x", {2, 1, 2}, {0.5f, -1.f, 0.25f, 2.f});
  const test::PlanRun with = test::RunPlan(test::GraphFromText(text), true, {x});
  const test::PlanRun without = test::RunPlan(test::GraphFromText(Model("RNN", "")), true, {x});
  std::vector<double> expected(without.outputs.at(0).data.begin(), without.outputs.at(0).data.end());
  test::CheckClose(with.outputs.at(0), expected, 1e-6);
}
