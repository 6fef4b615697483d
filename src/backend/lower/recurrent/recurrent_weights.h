// ONNX's recurrent weights, biases and peepholes in the order oneDNN 2.6's
// RNN primitives read them (backend/lower/recurrent/recurrent_weights.cc). Plain host
// loops on float buffers: run at build time on constant weights, and at run
// time, inside a custom step, on weights that are graph inputs.
//
// ONNX (Operators.md, LSTM / GRU / RNN): W [D, G*H, I] and R [D, G*H, H], gate
// blocks of H rows in the order LSTM i,o,f,c; GRU z,r,h; RNN one gate.
// B [D, 2*G*H]: the G gate biases of W (Wb), then those of R (Rb). LSTM's
// P [D, 3*H]: peepholes in the order i,o,f.
//
// oneDNN (dev_guide_rnn): weights_layer / weights_iter with logical dims
// [L, D, I, G, H]; we write them in the ldgoi order [L=1][D][G][H][I], which
// is ONNX's own row layout with the gate blocks permuted, and let a reorder
// produce the primitive's layout. Gates: LSTM i,f,c~,o; GRU u,r,o (u is ONNX's
// z, o its h). bias: ldgo [1, D, Gb, H], one bias per gate (Wb + Rb), except
// lbr_gru (linear_before_reset=1) whose Gb = 4: u, r, the candidate's Wbh, then
// its Rbh, which the reset gate multiplies. weights_peephole: ldgo [1, D, 3, H]
// in the order i,f,o.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxfuse::backend {

/// The recurrent cell of an ONNX LSTM, GRU or RNN node as oneDNN computes it.
enum class CellKind { kLstm, kGru, kLbrGru, kRnn };

/// How many gates the cell's weights hold (G): LSTM 4, GRU 3, RNN 1.
int GateCount(CellKind cell);
/// How many gate biases oneDNN's bias holds (Gb): G, or 4 for lbr_gru.
int BiasGateCount(CellKind cell);
/// For each oneDNN gate in order, the ONNX gate block it takes
/// (LSTM {0, 2, 3, 1}: i, f, c from ONNX's i,o,f,c blocks 0, 2, 3, o from 1).
std::vector<int> OnnxGateOf(CellKind cell);

/// Sizes of one recurrent node: D directions, H hidden units, I input width.
struct RecurrentSizes {
  std::int64_t directions = 1, hidden = 0, input = 0;
};

/// ONNX W ([D, G*H, cols], row-major; cols = I for W, H for R) to oneDNN's
/// ldgoi order [D][G][H][cols]: gate blocks permuted by OnnxGateOf. `out`
/// holds D*G*H*cols floats.
void WeightsToLdgoi(CellKind cell, const RecurrentSizes& s, std::int64_t cols, const float* onnx, float* out);

/// ONNX B ([D, 2*G*H]) to oneDNN's ldgo bias [D][Gb][H] (see the file
/// comment); `onnx` == nullptr means B is omitted (zeros). `out` holds
/// D*Gb*H floats.
void BiasToLdgo(CellKind cell, const RecurrentSizes& s, const float* onnx, float* out);

/// ONNX P ([D, 3*H], i,o,f) to oneDNN's weights_peephole [D][3][H] (i,f,o).
void PeepholesToLdgo(const RecurrentSizes& s, const float* onnx, float* out);

/// The cell of `op_type` ("LSTM", "GRU", "RNN"); GRU with
/// `linear_before_reset` != 0 is kLbrGru.
CellKind CellOf(const std::string& op_type, std::int64_t linear_before_reset);

}  // namespace onnxfuse::backend
