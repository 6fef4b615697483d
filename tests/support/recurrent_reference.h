// The ONNX LSTM, GRU and RNN equations (Operators.md LSTM-14, GRU-14, RNN-14)
// as a double-precision loop: the reference the recurrent lowering's tests
// compare against. Default activations (RNN: tanh, relu or sigmoid), no clip.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxfuse::test {

struct RecurrentProblem {
  std::string op = "LSTM";          ///< "LSTM", "GRU", "RNN"
  std::string direction = "forward"; ///< "forward", "reverse", "bidirectional"
  std::string activation = "tanh";   ///< RNN only: "tanh", "relu", "sigmoid"
  int linear_before_reset = 0;       ///< GRU only
  std::int64_t seq_length = 1, batch = 1, input = 1, hidden = 1;
  /// Layout 0 tensors as ONNX gives them: x [T, N, I], w [D, G*H, I],
  /// r [D, G*H, H], b [D, 2*G*H] (empty: zeros), initial_h / initial_c
  /// [D, N, H] (empty: zeros), p [D, 3*H] (empty: zeros).
  std::vector<float> x, w, r, b, initial_h, initial_c, p;
};

struct RecurrentResult {
  std::vector<double> y;    ///< [T, D, N, H]
  std::vector<double> y_h;  ///< [D, N, H]
  std::vector<double> y_c;  ///< [D, N, H], LSTM only
};

/// Gates per cell: LSTM 4 (i,o,f,c), GRU 3 (z,r,h), RNN 1.
std::int64_t OnnxGates(const std::string& op);
/// Directions: 2 for "bidirectional", else 1.
std::int64_t Directions(const std::string& direction);

/// Runs the problem through the ONNX equations in double precision.
RecurrentResult ReferenceRecurrent(const RecurrentProblem& p);

}  // namespace onnxfuse::test
