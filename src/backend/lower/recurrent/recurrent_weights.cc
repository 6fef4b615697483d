// ONNX recurrent weights in oneDNN's gate order (recurrent_weights.h).
#include "backend/lower/recurrent/recurrent_weights.h"

#include <algorithm>
#include <cstring>

namespace onnxfuse::backend {

int GateCount(CellKind cell) {
  switch (cell) {
    case CellKind::kLstm: return 4;
    case CellKind::kGru: case CellKind::kLbrGru: return 3;
    case CellKind::kRnn: return 1;
  }
  return 1;
}

int BiasGateCount(CellKind cell) { return cell == CellKind::kLbrGru ? 4 : GateCount(cell); }

std::vector<int> OnnxGateOf(CellKind cell) {
  switch (cell) {
    case CellKind::kLstm: return {0, 2, 3, 1};  // i,f,c~,o from ONNX's i,o,f,c
    case CellKind::kGru: case CellKind::kLbrGru: return {0, 1, 2};  // u,r,o = ONNX's z,r,h
    case CellKind::kRnn: return {0};
  }
  return {0};
}

CellKind CellOf(const std::string& op_type, std::int64_t linear_before_reset) {
  if (op_type == "LSTM") return CellKind::kLstm;
  if (op_type == "GRU") return linear_before_reset != 0 ? CellKind::kLbrGru : CellKind::kGru;
  return CellKind::kRnn;
}

void WeightsToLdgoi(CellKind cell, const RecurrentSizes& s, std::int64_t cols, const float* onnx, float* out) {
  const std::vector<int> from = OnnxGateOf(cell);
  const auto gates = static_cast<std::int64_t>(from.size());
  const std::int64_t block = s.hidden * cols;  // one gate's rows
  for (std::int64_t d = 0; d < s.directions; ++d)
    for (std::int64_t g = 0; g < gates; ++g)
      std::memcpy(out + (d * gates + g) * block, onnx + (d * gates + from[static_cast<std::size_t>(g)]) * block,
                  static_cast<std::size_t>(block) * sizeof(float));
}

void BiasToLdgo(CellKind cell, const RecurrentSizes& s, const float* onnx, float* out) {
  const std::vector<int> from = OnnxGateOf(cell);
  const auto gates = static_cast<std::int64_t>(from.size());
  const std::int64_t h = s.hidden, bias_gates = BiasGateCount(cell);
  std::fill(out, out + s.directions * bias_gates * h, 0.f);
  if (!onnx) return;
  for (std::int64_t d = 0; d < s.directions; ++d) {
    const float* wb = onnx + d * 2 * gates * h;  // the direction's Wb, then its Rb
    const float* rb = wb + gates * h;
    float* o = out + d * bias_gates * h;
    for (std::int64_t g = 0; g < gates; ++g) {
      const std::int64_t src = from[static_cast<std::size_t>(g)] * h;
      // lbr_gru keeps the candidate's Rbh apart: r_t multiplies (R_h h + Rbh).
      const bool apart = cell == CellKind::kLbrGru && g == 2;
      for (std::int64_t k = 0; k < h; ++k) {
        o[g * h + k] = apart ? wb[src + k] : wb[src + k] + rb[src + k];
        if (apart) o[3 * h + k] = rb[src + k];
      }
    }
  }
}

void PeepholesToLdgo(const RecurrentSizes& s, const float* onnx, float* out) {
  static constexpr int kFrom[3] = {0, 2, 1};  // i,f,o from ONNX's i,o,f
  const std::int64_t h = s.hidden;
  for (std::int64_t d = 0; d < s.directions; ++d)
    for (int g = 0; g < 3; ++g)
      std::memcpy(out + (d * 3 + g) * h, onnx + (d * 3 + kFrom[g]) * h, static_cast<std::size_t>(h) * sizeof(float));
}

}  // namespace onnxfuse::backend
