// ONNX gate order to oneDNN's (src/backend/lower/recurrent/recurrent_weights.cc), on
// buffers whose every value names its own position.
#include <catch2/catch.hpp>

#include <vector>

#include "backend/lower/recurrent/recurrent_weights.h"

using namespace onnxfuse::backend;

namespace {
std::vector<float> Iota(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}
}  // namespace

TEST_CASE("LSTM weights go from ONNX's i,o,f,c blocks to oneDNN's i,f,c,o", "[recurrent]") {
  const RecurrentSizes s{2, 1, 2};  // D 2, H 1, I 2: one row of 2 per gate
  const std::vector<float> w = Iota(2 * 4 * 2);
  std::vector<float> out(w.size());
  WeightsToLdgoi(CellKind::kLstm, s, 2, w.data(), out.data());
  // Direction 0: rows i=0, o=1, f=2, c=3 -> i, f, c, o = rows 0, 2, 3, 1.
  CHECK(out == std::vector<float>{0, 1, 4, 5, 6, 7, 2, 3, 8, 9, 12, 13, 14, 15, 10, 11});
}

TEST_CASE("recurrent biases sum Wb and Rb, but lbr_gru keeps the candidate's apart", "[recurrent]") {
  const RecurrentSizes s{1, 1, 1};
  const std::vector<float> gru = {1, 2, 3, 10, 20, 30};  // Wb z,r,h then Rb z,r,h
  std::vector<float> out(3), lbr(4);
  BiasToLdgo(CellKind::kGru, s, gru.data(), out.data());
  CHECK(out == std::vector<float>{11, 22, 33});
  BiasToLdgo(CellKind::kLbrGru, s, gru.data(), lbr.data());
  CHECK(lbr == std::vector<float>{11, 22, 3, 30});
  const std::vector<float> lstm = {1, 2, 3, 4, 10, 20, 30, 40};  // i,o,f,c twice
  std::vector<float> four(4);
  BiasToLdgo(CellKind::kLstm, s, lstm.data(), four.data());
  CHECK(four == std::vector<float>{11, 33, 44, 22});
  BiasToLdgo(CellKind::kLstm, s, nullptr, four.data());
  CHECK(four == std::vector<float>{0, 0, 0, 0});
}

TEST_CASE("LSTM peepholes go from ONNX's i,o,f to oneDNN's i,f,o", "[recurrent]") {
  const RecurrentSizes s{2, 2, 1};
  const std::vector<float> p = Iota(2 * 3 * 2);
  std::vector<float> out(p.size());
  PeepholesToLdgo(s, p.data(), out.data());
  CHECK(out == std::vector<float>{0, 1, 4, 5, 2, 3, 6, 7, 10, 11, 8, 9});
}
