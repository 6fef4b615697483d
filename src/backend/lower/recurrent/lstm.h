// An ONNX LSTM on our own recurrence (backend/kernels/lstm.h) instead of
// oneDNN's RNN primitive (backend/lower/recurrent/lstm.cc).
#pragma once

#include "backend/lower/core/builder.h"
#include "backend/lower/recurrent/recurrent_spec.h"

namespace onnxfuse::backend {

/// In fused mode, lowers the LSTM `s` (read from node `id` by ReadRecurrent)
/// as two steps and returns true:
///   - a matmul over every time step and direction at once, X [T*N, I] times
///     the prepacked W^T [I, D*4H], plus Wb + Rb: the input projection
///     [T, N, D, 4H] (ONNX's gate order kept);
///   - LstmRecurrence over it, with R^T [D, H, 4H] and P [D, 3H] prepacked
///     (plain), writing Y [T, D, N, H] and Y_h, Y_c [D, N, H] directly, each
///     only when the graph uses it.
/// Returns false, emitting nothing, for what it leaves to oneDNN's primitive
/// (EmitRecurrent): an unfused build (the baseline the fused plan is checked
/// against), layout = 1, or W, R, B or P known only at run time.
/// The zoo's 2-layer bidirectional LSTM (input 64, hidden 128, 50 steps) at
/// 1 thread: 1.65 ms on oneDNN 2.6's lstm_forward (brgemm), 0.84 this way
/// (`run --profile`), ORT 1.2 (scripts/bench.sh --zoo).
bool EmitOwnLstm(Builder& b, NodeId id, const RecurrentSpec& s);

}  // namespace onnxfuse::backend
