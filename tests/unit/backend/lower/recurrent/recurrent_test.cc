// LSTM, GRU and RNN on oneDNN's RNN primitives (src/backend/lower/recurrent/recurrent.cc)
// and a fused LSTM on our own recurrence (src/backend/lower/recurrent/lstm.cc), against
// the ONNX equations in double precision (support/recurrent_reference.h).
// Every case checks the fused plan and the unfused one, which keeps oneDNN's
// primitive for every cell.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "load/loader.h"
#include "plan_check.h"
#include "recurrent_reference.h"
#include "test_models.h"

using namespace onnxfuse;
using test::RecurrentProblem;

namespace {

// How the node gets its operands and which outputs it names.
struct Variant {
  bool bias = true, initial = true, peepholes = false;
  bool weights_as_inputs = false;  ///< W, R, B, P graph inputs (run-time conversion) instead of initializers
  bool states_as_inputs = true;    ///< initial_h / initial_c graph inputs instead of initializers
  bool initial_c = true;           ///< LSTM: initial_c given along with initial_h
  int layout = 0;
  bool y = true, y_h = true, y_c = true;
};

RecurrentProblem Problem(const std::string& op, const std::string& direction, int lbr = 0) {
  RecurrentProblem p;
  p.op = op, p.direction = direction, p.linear_before_reset = lbr;
  p.seq_length = 5, p.batch = 2, p.input = 3, p.hidden = 4;
  return p;
}

// [a, b, c] row-major with its first two dims swapped.
std::vector<float> Swap01(const std::vector<float>& v, std::int64_t a, std::int64_t b, std::int64_t c) {
  std::vector<float> out(v.size());
  for (std::int64_t i = 0; i < a; ++i)
    for (std::int64_t j = 0; j < b; ++j)
      for (std::int64_t k = 0; k < c; ++k) out[(j * a + i) * c + k] = v[(i * b + j) * c + k];
  return out;
}
std::vector<double> Swap01(const std::vector<double>& v, std::int64_t a, std::int64_t b, std::int64_t c) {
  std::vector<double> out(v.size());
  for (std::int64_t i = 0; i < a; ++i)
    for (std::int64_t j = 0; j < b; ++j)
      for (std::int64_t k = 0; k < c; ++k) out[(j * a + i) * c + k] = v[(i * b + j) * c + k];
  return out;
}

struct Outcome {
  test::PlanRun fused, unfused;
  test::RecurrentResult expected;
  std::vector<bool> named;  ///< Y, Y_h, Y_c named as graph outputs, in this order
};

// Fills the problem's tensors, builds the model, runs it fused and unfused.
Outcome Run(RecurrentProblem p, const Variant& v) {
  const bool lstm = p.op == "LSTM";
  const std::int64_t d = test::Directions(p.direction), g = test::OnnxGates(p.op);
  const std::int64_t t = p.seq_length, n = p.batch, h = p.hidden, in = p.input;
  p.x = test::Floats(static_cast<std::size_t>(t * n * in), 2.f, 1);
  p.w = test::Floats(static_cast<std::size_t>(d * g * h * in), 1.f, 2);
  p.r = test::Floats(static_cast<std::size_t>(d * g * h * h), 1.f, 3);
  if (v.bias) p.b = test::Floats(static_cast<std::size_t>(d * 2 * g * h), 0.5f, 4);
  if (v.initial) p.initial_h = test::Floats(static_cast<std::size_t>(d * n * h), 1.f, 5);
  if (v.initial && lstm && v.initial_c) p.initial_c = test::Floats(static_cast<std::size_t>(d * n * h), 1.5f, 6);
  if (v.peepholes) p.p = test::Floats(static_cast<std::size_t>(d * 3 * h), 1.f, 7);
  Outcome out;
  out.expected = test::ReferenceRecurrent(p);

  const bool bf = v.layout == 1;
  std::vector<std::string> inputs, initializers;
  std::vector<Tensor> feeds;
  auto operand = [&](const std::string& name, const std::vector<std::int64_t>& dims, const std::vector<float>& data,
                     bool as_input) {
    if (data.empty()) return std::string("omitted");
    const std::string decl = "float[" + test::DimsText(dims) + "] " + name;
    if (as_input) inputs.push_back(decl), feeds.push_back(test::TensorOf(name, dims, data));
    else inputs.push_back(decl + " = " + test::FloatList(data));
    return name;
  };
  std::vector<std::string> args;
  args.push_back(operand("x", bf ? std::vector<std::int64_t>{n, t, in} : std::vector<std::int64_t>{t, n, in},
                         bf ? Swap01(p.x, t, n, in) : p.x, true));
  args.push_back(operand("w", {d, g * h, in}, p.w, v.weights_as_inputs));
  args.push_back(operand("r", {d, g * h, h}, p.r, v.weights_as_inputs));
  args.push_back(operand("b", {d, 2 * g * h}, p.b, v.weights_as_inputs));
  args.push_back("omitted");  // sequence_lens
  const std::vector<std::int64_t> state = bf ? std::vector<std::int64_t>{n, d, h} : std::vector<std::int64_t>{d, n, h};
  args.push_back(operand("h0", state, bf ? Swap01(p.initial_h, d, n, h) : p.initial_h, v.states_as_inputs));
  if (lstm) {
    args.push_back(operand("c0", state, bf ? Swap01(p.initial_c, d, n, h) : p.initial_c, v.states_as_inputs));
    args.push_back(operand("p", {d, 3 * h}, p.p, v.weights_as_inputs));
  }
  while (args.back() == "omitted") args.pop_back();

  const std::string y_dims = test::DimsText(bf ? std::vector<std::int64_t>{n, t, d, h} : std::vector<std::int64_t>{t, d, n, h});
  const std::string s_dims = test::DimsText(state);
  out.named = {v.y, v.y_h, lstm && v.y_c};
  std::vector<std::string> outputs, results;
  const char* names[] = {"y", "y_h", "y_c"};
  for (int i = 0; i < (lstm ? 3 : 2); ++i) {
    results.push_back(out.named[i] ? names[i] : "omitted");
    if (out.named[i]) outputs.push_back("float[" + (i == 0 ? y_dims : s_dims) + "] " + names[i]);
  }
  while (results.back() == "omitted") results.pop_back();
  auto join = [](const std::vector<std::string>& parts) {
    std::string s;
    for (const auto& part : parts) s += (s.empty() ? "" : ", ") + part;
    return s;
  };
  std::string attrs = "hidden_size = " + std::to_string(h) + ", direction = \"" + p.direction + "\"";
  if (v.layout) attrs += ", layout = 1";
  if (p.op == "GRU") attrs += ", linear_before_reset = " + std::to_string(p.linear_before_reset);
  if (p.op == "RNN" && p.activation != "tanh")
    attrs += std::string(", activations = [\"") + (p.activation == "relu" ? "Relu" : "Sigmoid") + "\"]";
  const std::string text = "<ir_version: 8, opset_import: [\"\" : 14]>\ng (" + join(inputs) + ") => (" + join(outputs) +
                           ") {\n  " + join(results) + " = " + p.op + " <" + attrs + "> (" + join(args) + ")\n}\n";
  INFO(text);
  onnx::ModelProto model = test::ParseModel(text);
  // ONNX text has no spelling for an omitted operand: "omitted" stands for one.
  for (auto& node : *model.mutable_graph()->mutable_node()) {
    for (auto& name : *node.mutable_input()) if (name == "omitted") name.clear();
    for (auto& name : *node.mutable_output()) if (name == "omitted") name.clear();
  }
  const Graph graph = LoadModelProto(model, "recurrent.onnx");
  out.fused = test::RunPlan(graph, true, feeds);
  out.unfused = test::RunPlan(graph, false, feeds);
  return out;
}

// Checks every named output of both plans against the reference.
void Check(const Outcome& o, const RecurrentProblem& p, int layout, double tol = 1e-5) {
  const std::int64_t t = p.seq_length, n = p.batch, h = p.hidden, d = test::Directions(p.direction);
  std::vector<const std::vector<double>*> ref = {&o.expected.y, &o.expected.y_h, &o.expected.y_c};
  for (const test::PlanRun* run : {&o.fused, &o.unfused}) {
    INFO(test::StepList(*run));
    std::size_t k = 0;
    for (std::size_t i = 0; i < o.named.size(); ++i) {
      if (!o.named[i]) continue;
      INFO("output " << i);
      std::vector<double> want = *ref[i];
      if (layout == 1 && i == 0) {  // [T, D, N, H] -> [N, T, D, H]
        std::vector<double> moved(want.size());
        for (std::int64_t a = 0; a < t; ++a)
          for (std::int64_t b = 0; b < d; ++b)
            for (std::int64_t c = 0; c < n; ++c)
              for (std::int64_t e = 0; e < h; ++e)
                moved[((c * t + a) * d + b) * h + e] = want[((a * d + b) * n + c) * h + e];
        want = moved;
      } else if (layout == 1) {
        want = Swap01(want, d, n, h);
      }
      // States and outputs live on the scale of 1 (tanh, sigmoid): the
      // recurrence carries its rounding forward as an absolute error there.
      test::CheckClose(run->outputs.at(k++), want, tol, tol / 10);
    }
  }
}

}  // namespace

TEST_CASE("LSTM, GRU and RNN match the ONNX equations in every direction", "[recurrent]") {
  struct Cell {
    std::string op;
    int lbr;
    const char* step;
  };
  for (const Cell& cell : {Cell{"LSTM", 0, "lstm "}, Cell{"GRU", 0, "gru "}, Cell{"GRU", 1, "lbr_gru "},
                           Cell{"RNN", 0, "rnn "}})
    for (const std::string direction : {"forward", "reverse", "bidirectional"})
      for (const bool with_states : {false, true}) {
        INFO(cell.op << " linear_before_reset " << cell.lbr << " " << direction << (with_states ? " with" : " without")
                     << " bias and initial states");
        Variant v;
        v.bias = v.initial = with_states;
        const RecurrentProblem p = Problem(cell.op, direction, cell.lbr);
        const Outcome o = Run(p, v);
        Check(o, p, 0);
        // Constant weights are converted and prepacked at build time: no run-time conversion.
        CHECK(test::StepsStartingWith(o.fused, cell.step) == 1);
        CHECK(test::StepsStartingWith(o.fused, "rnn_weights") == 0);
        CHECK(test::StepsStartingWith(o.fused, "rnn_bias") == 0);
      }
}

TEST_CASE("recurrent weights that are graph inputs are converted at run time", "[recurrent]") {
  for (const std::string op : {"LSTM", "GRU", "RNN"})
    for (const int lbr : {0, 1}) {
      if (op != "GRU" && lbr) continue;
      INFO(op << " linear_before_reset " << lbr);
      Variant v;
      v.weights_as_inputs = true;
      v.peepholes = op == "LSTM";
      const RecurrentProblem p = Problem(op, "bidirectional", lbr);
      const Outcome o = Run(p, v);
      Check(o, p, 0);
      CHECK(test::StepsStartingWith(o.fused, "rnn_weights_layer ") == 1);
      CHECK(test::StepsStartingWith(o.fused, "rnn_weights_iter ") == 1);
      CHECK(test::StepsStartingWith(o.fused, "rnn_bias ") == 1);
      CHECK(test::StepsStartingWith(o.fused, "rnn_weights_peephole ") == (op == "LSTM" ? 1 : 0));
    }
}

TEST_CASE("LSTM peepholes follow ONNX's i,o,f order", "[recurrent]") {
  for (const std::string direction : {"forward", "bidirectional"}) {
    INFO(direction);
    Variant v;
    v.peepholes = true;
    const RecurrentProblem p = Problem("LSTM", direction);
    Check(Run(p, v), p, 0);
  }
}

TEST_CASE("batch-first recurrent layers (layout 1) are transposed around the primitive", "[recurrent]") {
  for (const std::string op : {"LSTM", "GRU", "RNN"})
    for (const std::string direction : {"forward", "bidirectional"})
      for (const bool states_as_inputs : {false, true}) {
        INFO(op << " " << direction << " initial states " << (states_as_inputs ? "inputs" : "constants"));
        Variant v;
        v.layout = 1;
        v.states_as_inputs = states_as_inputs;
        const RecurrentProblem p = Problem(op, direction);
        Check(Run(p, v), p, 1);
      }
}

TEST_CASE("recurrent layers with constant initial states and omitted outputs", "[recurrent]") {
  Variant v;
  v.states_as_inputs = false;
  for (const std::string op : {"LSTM", "GRU"}) {
    INFO(op << " constant initial states");
    const RecurrentProblem p = Problem(op, "bidirectional");
    Check(Run(p, v), p, 0);
  }
  SECTION("only Y_c") {
    Variant only_c;
    only_c.y = only_c.y_h = false;
    const RecurrentProblem p = Problem("LSTM", "reverse");
    Check(Run(p, only_c), p, 0);
  }
  SECTION("only Y") {
    Variant only_y;
    only_y.y_h = only_y.y_c = false;
    for (const std::string direction : {"forward", "bidirectional"}) {
      const RecurrentProblem p = Problem("GRU", direction, 1);
      Check(Run(p, only_y), p, 0);
    }
  }
  SECTION("LSTM with initial_h and no initial_c") {
    Variant h_only;
    h_only.initial_c = false;
    const RecurrentProblem p = Problem("LSTM", "bidirectional");
    Check(Run(p, h_only), p, 0);
  }
}

TEST_CASE("RNN with Relu and Sigmoid activations", "[recurrent]") {
  for (const std::string activation : {"relu", "sigmoid"})
    for (const std::string direction : {"forward", "bidirectional"}) {
      INFO(activation << " " << direction);
      RecurrentProblem p = Problem("RNN", direction);
      p.activation = activation;
      Check(Run(p, Variant{}), p, 0);
    }
}

TEST_CASE("batch-1 recurrent layers run their primitive on one thread, with the same results", "[recurrent]") {
  // recurrent.cc's EmitOnOneThread: the primitive inside a custom step (a
  // fused LSTM with constant weights at layout 0 runs our recurrence instead).
  // At batch 1, Y's [T, D, 1, H] and the states' [1, D, H] (layout 1) are
  // the primitive's own bytes: no reorder around it.
  for (const std::string op : {"LSTM", "GRU", "RNN"})
    for (const bool weights_as_inputs : {false, true})
      for (const int layout : {0, 1}) {
        INFO(op << (weights_as_inputs ? " weights as inputs" : " constant weights") << " layout " << layout);
        RecurrentProblem p = Problem(op, "bidirectional", op == "GRU");
        p.batch = 1;
        Variant v;
        v.weights_as_inputs = weights_as_inputs;
        v.layout = layout;
        const Outcome o = Run(p, v);
        Check(o, p, layout);
        const std::string kind = op == "LSTM" ? "lstm " : op == "GRU" ? "lbr_gru " : "rnn ";
        CHECK(test::StepsStartingWith(o.fused, kind) == 1);
        CHECK(test::StepsContaining(o.fused, "onnxfuse:custom") == 0);  // named by oneDNN's implementation
        if (!weights_as_inputs) CHECK(test::StepsStartingWith(o.fused, "reorder ") == 0);
      }
}

TEST_CASE("a fused LSTM with constant weights runs one projection matmul and our recurrence", "[recurrent]") {
  // lstm.cc: hidden 32 gives 128 gates, a whole block of the AVX-512 gate
  // product (and two of AVX2's); batch 3 runs the rows one after another.
  for (const std::string direction : {"forward", "reverse", "bidirectional"})
    for (const bool peepholes : {false, true}) {
      INFO(direction << (peepholes ? " with" : " without") << " peepholes");
      RecurrentProblem p = Problem("LSTM", direction);
      p.hidden = 32, p.batch = 3, p.seq_length = 6;
      Variant v;
      v.peepholes = peepholes;
      const Outcome o = Run(p, v);
      // Our recurrence runs our sigmoid and tanh (activation.h: sigmoid's
      // relative error below 2e-6): 2e-6 absolute on the scale of 1, where
      // oneDNN's primitive and the unfused plan keep to 1e-6.
      Check(o, p, 0, 2e-5);
      CHECK(test::StepsContaining(o.fused, "onnxfuse:lstm") == 1);
      CHECK(test::StepsStartingWith(o.fused, "matmul ") == 1);  // the input projection
      CHECK(test::StepsStartingWith(o.fused, "reorder ") == 0);
      CHECK(test::StepsContaining(o.unfused, "onnxfuse:lstm") == 0);
    }
  SECTION("layout 1 and run-time weights keep oneDNN's primitive") {
    RecurrentProblem p = Problem("LSTM", "bidirectional");
    Variant batch_first;
    batch_first.layout = 1;
    const Outcome a = Run(p, batch_first);
    Check(a, p, 1);
    CHECK(test::StepsContaining(a.fused, "onnxfuse:lstm") == 0);
    Variant run_time;
    run_time.weights_as_inputs = true;
    const Outcome b = Run(p, run_time);
    Check(b, p, 0);
    CHECK(test::StepsContaining(b.fused, "onnxfuse:lstm") == 0);
  }
}
