// What an ONNX LSTM, GRU or RNN node asks for, checked against what oneDNN
// 2.6's RNN primitives compute (backend/lower/recurrent/recurrent_spec.cc).
// Operators.md: LSTM-7/14, GRU-7/14, RNN-7/14.
#pragma once

#include <cstdint>

#include "backend/lower/core/builder.h"
#include "backend/lower/recurrent/recurrent_weights.h"

namespace onnxfuse::backend {

/// One recurrent node, its sizes and operands. Inputs in ONNX order: X, W, R,
/// B, sequence_lens, initial_h, initial_c (LSTM), P (LSTM); outputs Y, Y_h,
/// Y_c (LSTM); kNoValue when omitted.
struct RecurrentSpec {
  CellKind cell = CellKind::kRnn;
  dnnl::rnn_direction direction = dnnl::rnn_direction::unidirectional_left2right;
  /// The RNN cell's activation (eltwise_tanh, eltwise_relu, eltwise_logistic).
  dnnl::algorithm activation = dnnl::algorithm::eltwise_tanh;
  RecurrentSizes sizes;
  std::int64_t seq_length = 0, batch = 0;
  bool batch_first = false;  ///< layout = 1: X [N, T, I], Y [N, T, D, H], states [N, D, H]
  ValueId x = kNoValue, w = kNoValue, r = kNoValue, b = kNoValue, initial_h = kNoValue, initial_c = kNoValue,
          p = kNoValue;
  ValueId y = kNoValue, y_h = kNoValue, y_c = kNoValue;
};

/// Reads and checks `node` (op_type LSTM, GRU or RNN): the dims of every
/// operand against X's and hidden_size (Error(kInvalidModel) naming the node
/// when they disagree, or for an unknown direction or layout), and refuses
/// with Error(kUnsupported) naming the node what oneDNN cannot compute:
/// activations other than the defaults (LSTM Sigmoid,Tanh,Tanh; GRU
/// Sigmoid,Tanh; RNN one of Tanh, Relu, Sigmoid for every direction), clip,
/// input_forget = 1, and sequence_lens unless it is a constant equal to
/// seq_length everywhere. X must be an activation or a constant.
RecurrentSpec ReadRecurrent(Builder& b, const Node& node);

}  // namespace onnxfuse::backend
