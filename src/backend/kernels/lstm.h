// The recurrence of an ONNX LSTM (Operators.md LSTM-7/14) whose input
// projection X W^T + Wb + Rb is already computed for every time step.
//
// oneDNN 2.6's LSTM (its brgemm implementation, the only one it offers for
// LSTM on AVX-512) took 1.08 ms of a 2-layer bidirectional LSTM's 1.65
// (input 64, hidden 128, 50 steps, batch 1) for a second layer whose work is
// one [50, 256] x [256, 1024] product and 100 products of [512, 128] weights
// with a vector. Here the first is one matmul step over all time steps (the
// lowering's), and each time step is a product of R^T [H, 4H], kept in L2,
// with the state h: the sum of its rows scaled by h's elements, 128 (AVX-512)
// or 64 (AVX2) gate sums at a time held in registers over all rows (a row's
// sums would need a horizontal add per gate); then the cell's gates over
// vectors (activation.h). Directions are independent: with two OpenMP threads
// each runs on its own, without a barrier per step.
//
// Per direction and batch row, with ONNX's gate order i, o, f, c and its
// default activations (sigmoid f, tanh g and h):
//   g = P[t] + R h                 (P: the projection, R [4H, H])
//   i = f(g_i + p_i . c)   f = f(g_f + p_f . c)   c~ = g(g_c)
//   c = f . c + i . c~     o = f(g_o + p_o . c)   h = o . h(c)
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

/// The sizes of one LSTM node: T steps of N batch rows, D directions (1 or
/// 2), H hidden units. `reverse`: a single direction that runs from step T-1
/// to 0 (ONNX direction "reverse"); with D = 2 direction 1 always does.
struct LstmShape {
  std::int64_t steps = 0, batch = 0, directions = 1, hidden = 0;
  bool reverse = false;
};

/// The recurrence over all steps. Layouts (row-major, ONNX's layout 0):
///   projection [T, N, D, 4H]: X W^T + Wb + Rb, gates in ONNX order i, o, f, c;
///   rt [D, H, 4H]: ONNX R [D, 4H, H] transposed per direction;
///   peephole [D, 3H] (i, o, f) or nullptr;
///   h0, c0 [D, N, H] or nullptr (zeros);
///   y [T, D, N, H], y_h, y_c [D, N, H]: each may be nullptr (not wanted).
/// `scratch`: LstmScratchFloats(shape) floats. Directions run on the
/// calling thread's OpenMP team (one thread each, at most D threads); the
/// gate product is AVX-512, AVX2+FMA or plain C++ by the CPU (cpu_isa.h).
void LstmRecurrence(const LstmShape& shape, const float* projection, const float* rt, const float* peephole,
                    const float* h0, const float* c0, float* y, float* y_h, float* y_c, float* scratch);

/// Floats of scratch LstmRecurrence needs: per direction the gates of one
/// row and the states h and c of every row.
std::int64_t LstmScratchFloats(const LstmShape& shape);

}  // namespace onnxfuse::backend
