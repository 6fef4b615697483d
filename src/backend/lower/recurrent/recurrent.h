// ONNX LSTM, GRU and RNN on oneDNN 2.6's RNN primitives (backend/lower/recurrent/recurrent.cc).
#pragma once

#include "backend/lower/core/builder.h"

namespace onnxfuse::backend {

/// Lowers an LSTM, GRU or RNN node (Operators.md LSTM-7/14, GRU-7/14,
/// RNN-7/14). A fused LSTM with constant weights at layout 0 goes to
/// EmitOwnLstm (lstm.h); everything else to one lstm_forward, gru_forward (linear_before_reset = 0),
/// lbr_gru_forward (linear_before_reset = 1) or vanilla_rnn_forward step,
/// forward_inference, direction forward (left2right), reverse (right2left) or
/// bidirectional (bidirectional_concat).
///
/// Layouts: X [T, N, I] is src_layer tnc (layout = 1: [N, T, I], ntc);
/// initial_h / initial_c [D, N, H] are src_iter / src_iter_c ldnc [1, D, N, H]
/// as they are (layout = 1: [N, D, H], transposed by a reorder); Y [T, D, N, H]
/// is dst_layer [T, N, D*H] itself when D = 1 or layout = 1 ([N, T, D, H] is
/// ntc), otherwise a reorder of it; Y_h / Y_c are dst_iter / dst_iter_c (a
/// reorder for layout = 1). At batch 1 no reorder is needed: [T, D, 1, H] and
/// [1, D, H] are the primitive's own bytes; the step then runs on one OpenMP
/// thread (each time step's product is too small to share). Omitted outputs
/// get scratch slots or no operand.
///
/// W, R, B and P are converted to oneDNN's gate order (recurrent_weights.h):
/// at build time and prepacked (Builder::PackedConstant, stored in plan files)
/// when constants; otherwise at run time by a custom step into a plain ldgoi /
/// ldgo slot, then a reorder into the primitive's layout.
///
/// Errors: those of ReadRecurrent (recurrent_spec.h); Error(kUnsupported)
/// naming the node when oneDNN has no implementation.
void EmitRecurrent(Builder& b, NodeId node);

/// True for the ops EmitRecurrent lowers: LSTM, GRU, RNN of the default domain.
bool IsRecurrent(const Node& node);

}  // namespace onnxfuse::backend
