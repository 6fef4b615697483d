// The LSTM recurrence (src/backend/kernels/lstm.h) on raw buffers against the
// ONNX equations in double (support/recurrent_reference.h): the projection
// X W^T + Wb + Rb computed here in double, R transposed as the lowering packs
// it. Hidden sizes around the gate product's blocks of columns (AVX-512: 128
// gates, then masked vectors of 16; AVX2: 64, then single columns), every
// direction, batch 1 and 3, with and without peepholes and initial states,
// each output wanted or not. ctest runs this file plain and capped at AVX2
// and SSE4.1 (kernels.AVX2, kernels.SSE41): the three gate products.
// Tolerance: 2e-6 of the output's largest magnitude (the gates' 3e-7 through
// a few dozen steps).
#include "backend/kernels/lstm.h"

#include <omp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernel_check.h"
#include "recurrent_reference.h"

using namespace onnxfuse;
using namespace onnxfuse::backend;

namespace {

std::size_t Z(std::int64_t v) { return static_cast<std::size_t>(v); }

class LstmTester {
 public:
  LstmTester& Direction(const std::string& v) {
    direction_ = v;
    return *this;
  }
  LstmTester& Sizes(std::int64_t steps, std::int64_t batch, std::int64_t input, std::int64_t hidden) {
    steps_ = steps, batch_ = batch, input_ = input, hidden_ = hidden;
    return *this;
  }
  LstmTester& Peepholes(bool v) {
    peepholes_ = v;
    return *this;
  }
  /// Inputs of 1e-3 and no bias or initial states: outputs near 1e-4, which
  /// the gates must get right relative to their size (difftest seed 61130523).
  LstmTester& Tiny(bool v) {
    tiny_ = v;
    return *this;
  }
  LstmTester& InitialStates(bool v) {
    initial_ = v;
    return *this;
  }
  LstmTester& Outputs(bool y, bool y_h, bool y_c) {
    want_y_ = y, want_h_ = y_h, want_c_ = y_c;
    return *this;
  }

  void Test() const {
    INFO(direction_ << (tiny_ ? " tiny" : "") << " T " << steps_ << " N " << batch_ << " I " << input_ << " H " << hidden_ << " peepholes "
                    << peepholes_ << " initial states " << initial_ << " outputs " << want_y_ << want_h_ << want_c_);
    test::RecurrentProblem p;
    p.op = "LSTM";
    p.direction = direction_;
    p.seq_length = steps_, p.batch = batch_, p.input = input_, p.hidden = hidden_;
    const std::int64_t d = test::Directions(direction_), g = 4 * hidden_, t = steps_, n = batch_, h = hidden_;
    // Weights scaled by 1 / sqrt(fan-in), as trained ones are: the gates stay off their flat ends.
    p.x = test::RandomFloats(Z(t * n * input_), 71, -1.f, 1.f);
    p.w = Scaled(test::RandomFloats(Z(d * g * input_), 72), input_);
    p.r = Scaled(test::RandomFloats(Z(d * g * h), 73), h);
    p.b = test::RandomFloats(Z(d * 2 * g), 74, -0.5f, 0.5f);
    if (tiny_) {
      for (float& v : p.x) v *= 1e-3f;
      std::fill(p.b.begin(), p.b.end(), 0.f);
    }
    if (initial_ && !tiny_)
      p.initial_h = test::RandomFloats(Z(d * n * h), 75), p.initial_c = test::RandomFloats(Z(d * n * h), 76);
    if (peepholes_) p.p = test::RandomFloats(Z(d * 3 * h), 77, -0.5f, 0.5f);
    const test::RecurrentResult want = test::ReferenceRecurrent(p);

    // The kernel's operands: projection [T, N, D, 4H] and R^T [D, H, 4H].
    std::vector<float> projection(Z(t * n * d * g)), rt(Z(d * h * g));
    for (std::int64_t s = 0; s < t * n; ++s)
      for (std::int64_t j = 0; j < d; ++j)
        for (std::int64_t c = 0; c < g; ++c) {
          double sum = p.b[Z(j * 2 * g + c)] + p.b[Z(j * 2 * g + g + c)];
          for (std::int64_t i = 0; i < input_; ++i)
            sum += double{p.x[Z(s * input_ + i)]} * p.w[Z((j * g + c) * input_ + i)];
          projection[Z((s * d + j) * g + c)] = static_cast<float>(sum);
        }
    for (std::int64_t j = 0; j < d; ++j)
      for (std::int64_t c = 0; c < g; ++c)
        for (std::int64_t k = 0; k < h; ++k) rt[Z((j * h + k) * g + c)] = p.r[Z((j * g + c) * h + k)];
    LstmShape shape;
    shape.steps = t, shape.batch = n, shape.directions = d, shape.hidden = h, shape.reverse = direction_ == "reverse";
    test::Guarded y(Z(t * d * n * h)), y_h(Z(d * n * h)), y_c(Z(d * n * h)), scratch(Z(LstmScratchFloats(shape)));
    LstmRecurrence(shape, projection.data(), rt.data(), peepholes_ ? p.p.data() : nullptr,
                   p.initial_h.empty() ? nullptr : p.initial_h.data(), p.initial_c.empty() ? nullptr : p.initial_c.data(),
                   want_y_ ? y.get() : nullptr, want_h_ ? y_h.get() : nullptr, want_c_ ? y_c.get() : nullptr,
                   scratch.get());
    if (want_y_) Check(y.get(), want.y);
    if (want_h_) Check(y_h.get(), want.y_h);
    if (want_c_) Check(y_c.get(), want.y_c);
    CHECK(y.GuardIntact());
    CHECK(y_h.GuardIntact());
    CHECK(y_c.GuardIntact());
    CHECK(scratch.GuardIntact());
  }

 private:
  static std::vector<float> Scaled(std::vector<float> v, std::int64_t fan_in) {
    const float k = 1.f / std::sqrt(static_cast<float>(fan_in));
    for (float& e : v) e *= k;
    return v;
  }

  // Within 2e-6 of the output's largest magnitude.
  static void Check(const float* got, const std::vector<double>& want) {
    double largest = 0;
    for (double v : want) largest = std::max(largest, std::abs(v));
    std::vector<test::Expected> expected;
    for (double v : want) expected.push_back({v, largest});
    test::CheckAll(got, expected, 2e-6);
  }

  std::string direction_ = "forward";
  std::int64_t steps_ = 7, batch_ = 1, input_ = 5, hidden_ = 32;
  bool peepholes_ = false, tiny_ = false, initial_ = true, want_y_ = true, want_h_ = true, want_c_ = true;
};

}  // namespace

TEST_CASE("LstmRecurrence: hidden sizes around the gate product's column blocks, every direction", "[kernels][lstm]") {
  // 4H = 4, 80 (AVX-512: five masked vectors; AVX2: a block and 16 columns),
  // 128 (one AVX-512 block, two AVX2 blocks), 132, 512 (the zoo's hidden 128).
  for (std::int64_t hidden : {1, 20, 32, 33, 128})
    for (const std::string direction : {"forward", "reverse", "bidirectional"})
      LstmTester().Direction(direction).Sizes(hidden == 128 ? 12 : 7, 1, 5, hidden).Test();
}

TEST_CASE("LstmRecurrence: batches, peepholes, zero initial states and omitted outputs", "[kernels][lstm]") {
  for (const std::string direction : {"forward", "bidirectional"}) {
    LstmTester().Direction(direction).Sizes(6, 3, 4, 20).Test();
    LstmTester().Direction(direction).Sizes(6, 3, 4, 20).Peepholes(true).Test();
    LstmTester().Direction(direction).Sizes(6, 2, 4, 32).InitialStates(false).Test();
    LstmTester().Direction(direction).Sizes(6, 2, 4, 32).Outputs(false, false, true).Test();
    LstmTester().Direction(direction).Sizes(6, 2, 4, 32).Outputs(true, false, false).Test();
  }
  LstmTester().Direction("reverse").Sizes(5, 2, 3, 33).Peepholes(true).InitialStates(false).Test();
  for (std::int64_t hidden : {1, 32}) LstmTester().Direction("bidirectional").Sizes(5, 2, 5, hidden).Tiny(true).Test();
}

TEST_CASE("LstmRecurrence: two directions on one thread and on two give the same bits", "[kernels][lstm]") {
  const std::int64_t t = 9, n = 2, h = 33, g = 4 * h;
  const std::vector<float> projection = test::RandomFloats(Z(t * n * 2 * g), 81),
                           rt = test::RandomFloats(Z(2 * h * g), 82, -0.2f, 0.2f);
  LstmShape shape;
  shape.steps = t, shape.batch = n, shape.directions = 2, shape.hidden = h;
  auto run = [&](int threads) {
    std::vector<float> y(Z(t * 2 * n * h)), scratch(Z(LstmScratchFloats(shape)));
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    LstmRecurrence(shape, projection.data(), rt.data(), nullptr, nullptr, nullptr, y.data(), nullptr, nullptr,
                   scratch.data());
    omp_set_num_threads(before);
    return y;
  };
  CHECK(run(1) == run(2));
}
