// Reading an ONNX LSTM / GRU / RNN node and refusing what oneDNN 2.6 cannot
// compute (recurrent_spec.h).
#include "backend/lower/recurrent/recurrent_spec.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "backend/lower/core/unsupported.h"

namespace onnxfuse::backend {

namespace {

[[noreturn]] void Invalid(const Builder& b, const Node& node, const std::string& why) {
  throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": " + why);
}

ValueId InputAt(const Node& node, std::size_t i) {
  return i < node.num_explicit_inputs ? node.inputs[i] : kNoValue;
}
ValueId OutputAt(const Node& node, std::size_t i) { return i < node.outputs.size() ? node.outputs[i] : kNoValue; }

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Checks the dims of optional input `v` (skipped when omitted).
void CheckDims(Builder& b, const Node& node, ValueId v, const Dims& want, const std::string& what) {
  if (v == kNoValue) return;
  const Dims got = b.DimsOfValue(v, node);
  if (got != want)
    Invalid(b, node, what + " has shape " + DimsString(got) + " where X, W and hidden_size give " + DimsString(want));
}

// The activations attribute against oneDNN's fixed cells: the ONNX defaults
// (LSTM f=Sigmoid, g=h=Tanh; GRU f=Sigmoid, g=Tanh) once per direction; RNN:
// one of Tanh, Relu, Sigmoid, the same for every direction. Names compare as
// ONNX Runtime does, without case. activation_alpha / activation_beta feed
// only activations that take parameters, none of which pass here.
dnnl::algorithm CheckActivations(const Builder& b, const Node& node, CellKind cell, std::int64_t directions) {
  std::vector<std::string> names;
  if (const onnx::AttributeProto* a = FindAttr(node, "activations"))
    for (const std::string& s : a->strings()) names.push_back(Lower(s));
  auto listed = [&] {
    std::string text;
    for (const std::string& s : names) text += (text.empty() ? "" : ",") + s;
    return text;
  };
  if (cell == CellKind::kRnn) {
    const std::string name = names.empty() ? "tanh" : names.front();
    const bool uniform = std::all_of(names.begin(), names.end(), [&](const std::string& s) { return s == name; });
    if (!uniform || names.size() > static_cast<std::size_t>(directions) ||
        (name != "tanh" && name != "relu" && name != "sigmoid"))
      Unsupported(b, node, "activations " + listed() +
                               ": oneDNN's vanilla_rnn_forward applies one of Tanh, Relu or Sigmoid to every direction");
    return name == "tanh" ? dnnl::algorithm::eltwise_tanh
           : name == "relu" ? dnnl::algorithm::eltwise_relu
                            : dnnl::algorithm::eltwise_logistic;
  }
  const std::vector<std::string> cell_default =
      cell == CellKind::kLstm ? std::vector<std::string>{"sigmoid", "tanh", "tanh"}
                              : std::vector<std::string>{"sigmoid", "tanh"};
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names.size() != cell_default.size() * static_cast<std::size_t>(directions) ||
        names[i] != cell_default[i % cell_default.size()])
      Unsupported(b, node, "activations " + listed() + ": oneDNN's " + (cell == CellKind::kLstm ? "LSTM" : "GRU") +
                               " cell computes only the default ones (" +
                               (cell == CellKind::kLstm ? "Sigmoid,Tanh,Tanh" : "Sigmoid,Tanh") + " per direction)");
  return dnnl::algorithm::eltwise_tanh;
}

// sequence_lens: only a constant equal to seq_length for every batch entry
// (oneDNN 2.6's RNN primitives run every sequence over all T steps).
void CheckSequenceLens(Builder& b, const Node& node, ValueId v, std::int64_t seq_length, std::int64_t batch) {
  if (v == kNoValue) return;
  const std::string why = "sequence_lens of other lengths than seq_length (" + std::to_string(seq_length) +
                          ") is not supported: oneDNN 2.6's RNN primitives run every sequence over all steps";
  if (!b.IsConst(v)) Unsupported(b, node, "sequence_lens is computed at run time; " + why);
  const Tensor& t = b.Const(v, node);
  if (t.NumElements() != batch) Invalid(b, node, "sequence_lens has " + std::to_string(t.NumElements()) +
                                                     " entries for a batch of " + std::to_string(batch));
  for (std::int64_t i = 0; i < batch; ++i) {
    const double len = t.elem_type == onnx::TensorProto::FLOAT ? static_cast<double>(t.data[static_cast<std::size_t>(i)])
                                                               : static_cast<double>(t.int_data[static_cast<std::size_t>(i)]);
    if (len != static_cast<double>(seq_length)) Unsupported(b, node, why);
  }
}

}  // namespace

RecurrentSpec ReadRecurrent(Builder& b, const Node& node) {
  RecurrentSpec s;
  const bool lstm = node.op_type == "LSTM";
  s.cell = CellOf(node.op_type, AttrInt(node, "linear_before_reset", 0));
  const std::string direction = AttrString(node, "direction", "forward");
  if (direction == "forward") s.direction = dnnl::rnn_direction::unidirectional_left2right;
  else if (direction == "reverse") s.direction = dnnl::rnn_direction::unidirectional_right2left;
  else if (direction == "bidirectional") s.direction = dnnl::rnn_direction::bidirectional_concat;
  else Invalid(b, node, "direction '" + direction + "' is none of forward, reverse, bidirectional");
  s.sizes.directions = direction == "bidirectional" ? 2 : 1;
  const std::int64_t layout = AttrInt(node, "layout", 0);
  if (layout != 0 && layout != 1) Invalid(b, node, "layout " + std::to_string(layout) + " is neither 0 nor 1");
  s.batch_first = layout == 1;
  if (FindAttr(node, "clip"))
    Unsupported(b, node, "clip is not supported: oneDNN 2.6's RNN primitives do not clip the gate inputs");
  if (lstm && AttrInt(node, "input_forget", 0) != 0)
    Unsupported(b, node, "input_forget = 1 is not supported: oneDNN 2.6's LSTM has no coupled input and forget gates");
  s.activation = CheckActivations(b, node, s.cell, s.sizes.directions);

  s.x = InputAt(node, 0), s.w = InputAt(node, 1), s.r = InputAt(node, 2), s.b = InputAt(node, 3);
  s.initial_h = InputAt(node, 5);
  if (lstm) s.initial_c = InputAt(node, 6), s.p = InputAt(node, 7);
  s.y = OutputAt(node, 0), s.y_h = OutputAt(node, 1);
  if (lstm) s.y_c = OutputAt(node, 2);
  if (s.x == kNoValue || s.w == kNoValue || s.r == kNoValue) Invalid(b, node, "X, W and R are required");

  const Dims x = b.DimsOfValue(s.x, node), r = b.DimsOfValue(s.r, node);
  if (x.size() != 3) Invalid(b, node, "X has shape " + DimsString(x) + ", not 3-D");
  if (r.size() != 3) Invalid(b, node, "R has shape " + DimsString(r) + ", not 3-D");
  s.seq_length = s.batch_first ? x[1] : x[0];
  s.batch = s.batch_first ? x[0] : x[1];
  s.sizes.input = x[2];
  s.sizes.hidden = AttrInt(node, "hidden_size", r[2]);
  const std::int64_t d = s.sizes.directions, h = s.sizes.hidden, gates = GateCount(s.cell);
  if (h <= 0) Invalid(b, node, "hidden_size " + std::to_string(h) + " is not positive");
  CheckDims(b, node, s.w, {d, gates * h, s.sizes.input}, "W");
  CheckDims(b, node, s.r, {d, gates * h, h}, "R");
  CheckDims(b, node, s.b, {d, 2 * gates * h}, "B");
  const Dims state = s.batch_first ? Dims{s.batch, d, h} : Dims{d, s.batch, h};
  CheckDims(b, node, s.initial_h, state, "initial_h");
  CheckDims(b, node, s.initial_c, state, "initial_c");
  CheckDims(b, node, s.p, {d, 3 * h}, "P");
  CheckSequenceLens(b, node, InputAt(node, 4), s.seq_length, s.batch);
  return s;
}

}  // namespace onnxfuse::backend
