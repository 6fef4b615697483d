// ONNX recurrent equations in double precision (recurrent_reference.h).
#include "recurrent_reference.h"

#include <cmath>

namespace onnxfuse::test {

namespace {

double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

double RnnActivation(const std::string& name, double v) {
  if (name == "relu") return v > 0 ? v : 0;
  if (name == "sigmoid") return Sigmoid(v);
  return std::tanh(v);
}

}  // namespace

std::int64_t OnnxGates(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }
std::int64_t Directions(const std::string& direction) { return direction == "bidirectional" ? 2 : 1; }

RecurrentResult ReferenceRecurrent(const RecurrentProblem& p) {
  const std::int64_t T = p.seq_length, N = p.batch, I = p.input, H = p.hidden, G = OnnxGates(p.op);
  const std::int64_t D = Directions(p.direction);
  RecurrentResult out;
  out.y.assign(static_cast<std::size_t>(T * D * N * H), 0.0);
  out.y_h.assign(static_cast<std::size_t>(D * N * H), 0.0);
  out.y_c.assign(static_cast<std::size_t>(D * N * H), 0.0);
  auto at = [](const std::vector<float>& v, std::int64_t i) { return v.empty() ? 0.0 : static_cast<double>(v[static_cast<std::size_t>(i)]); };
  for (std::int64_t d = 0; d < D; ++d) {
    const bool backward = p.direction == "reverse" || d == 1;
    for (std::int64_t n = 0; n < N; ++n) {
      std::vector<double> h(static_cast<std::size_t>(H)), c(static_cast<std::size_t>(H));
      for (std::int64_t k = 0; k < H; ++k) h[k] = at(p.initial_h, (d * N + n) * H + k), c[k] = at(p.initial_c, (d * N + n) * H + k);
      for (std::int64_t step = 0; step < T; ++step) {
        const std::int64_t t = backward ? T - 1 - step : step;
        // xw[g][k] = W_g x + Wb_g, hr[g][k] = R_g h + Rb_g, for ONNX gate g.
        std::vector<double> xw(static_cast<std::size_t>(G * H)), hr(static_cast<std::size_t>(G * H));
        for (std::int64_t row = 0; row < G * H; ++row) {
          double sx = at(p.b, d * 2 * G * H + row), sh = at(p.b, d * 2 * G * H + G * H + row);
          for (std::int64_t i = 0; i < I; ++i) sx += at(p.w, (d * G * H + row) * I + i) * at(p.x, (t * N + n) * I + i);
          for (std::int64_t j = 0; j < H; ++j) sh += at(p.r, (d * G * H + row) * H + j) * h[j];
          xw[row] = sx, hr[row] = sh;
        }
        std::vector<double> next(static_cast<std::size_t>(H));
        if (p.op == "LSTM") {
          for (std::int64_t k = 0; k < H; ++k) {
            const double pi = at(p.p, d * 3 * H + k), po = at(p.p, d * 3 * H + H + k), pf = at(p.p, d * 3 * H + 2 * H + k);
            const double ig = Sigmoid(xw[k] + hr[k] + pi * c[k]);
            const double fg = Sigmoid(xw[2 * H + k] + hr[2 * H + k] + pf * c[k]);
            const double cg = std::tanh(xw[3 * H + k] + hr[3 * H + k]);
            c[k] = fg * c[k] + ig * cg;
            const double og = Sigmoid(xw[H + k] + hr[H + k] + po * c[k]);
            next[k] = og * std::tanh(c[k]);
          }
        } else if (p.op == "GRU") {
          std::vector<double> reset(static_cast<std::size_t>(H));
          for (std::int64_t k = 0; k < H; ++k) reset[k] = Sigmoid(xw[H + k] + hr[H + k]);
          for (std::int64_t k = 0; k < H; ++k) {
            const double z = Sigmoid(xw[k] + hr[k]);
            double candidate;
            if (p.linear_before_reset) {  // r (.) (R_h h + Rb_h)
              candidate = std::tanh(xw[2 * H + k] + reset[k] * hr[2 * H + k]);
            } else {  // (r (.) h) R_h^T + Rb_h
              double s = xw[2 * H + k] + at(p.b, d * 2 * G * H + G * H + 2 * H + k);
              for (std::int64_t j = 0; j < H; ++j) s += at(p.r, (d * G * H + 2 * H + k) * H + j) * reset[j] * h[j];
              candidate = std::tanh(s);
            }
            next[k] = (1 - z) * candidate + z * h[k];
          }
        } else {
          for (std::int64_t k = 0; k < H; ++k) next[k] = RnnActivation(p.activation, xw[k] + hr[k]);
        }
        h = next;
        for (std::int64_t k = 0; k < H; ++k) out.y[static_cast<std::size_t>(((t * D + d) * N + n) * H + k)] = h[k];
      }
      for (std::int64_t k = 0; k < H; ++k) {
        out.y_h[static_cast<std::size_t>((d * N + n) * H + k)] = h[k];
        out.y_c[static_cast<std::size_t>((d * N + n) * H + k)] = c[k];
      }
    }
  }
  return out;
}

}  // namespace onnxfuse::test
