// The activation kernels (src/backend/kernels/activation.h) on raw buffers:
// SwishInPlace and Gelu against x / (1 + exp(-x)) and 0.5 x (1 + erf(x /
// sqrt 2)) in double, Sigmoid and Tanh against 1 / (1 + exp(-x)) and tanh x, SwishInPlaceWithMeans and ChannelMeans against the
// means over rows in double. Tolerances: swish 2e-6 relative (exp's series to
// degree 6 is within 2e-7, the division adds an ulp); Gelu 3e-7 (|x| + |y|)
// absolute (the header's bound, 3e-7 |x|, and the result's rounding); Sigmoid
// 2e-6 and Tanh 5e-7 relative (the header's bounds; plus 2e-38 absolute for
// AVX2's saturated sigmoid); means
// 2e-5 of the mean magnitude (float sums of up to 3136 rows).
//
// Swish and Gelu run AVX-512, AVX2+FMA or plain C++ as CpuIsa() says, which
// ONEDNN_MAX_CPU_ISA caps: ctest runs this file plain (AVX-512 here) and as
// kernels.AVX2 and kernels.SSE41; the last test case checks, by a result
// only that path gives, that the path CpuIsa() names is the one that ran.
// The means' sums (AddRows, AddBlockRows) are target_clones chosen by the
// CPU alone, not capped.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

#include "backend/kernels/activation.h"
#include "backend/kernels/cpu_isa.h"
#include "kernel_check.h"

using namespace onnxfuse;
using namespace onnxfuse::backend;

namespace {

std::size_t Z(std::int64_t v) { return static_cast<std::size_t>(v); }
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

double SwishOf(double x) { return x / (1 + std::exp(-x)); }
double GeluOf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

// Random values in [-lo, hi], then the awkward ones: zeros, tiny, where
// exp(-x) leaves the float range, NaN.
std::vector<float> Inputs(std::int64_t count, float range, std::uint32_t seed) {
  std::vector<float> x = test::RandomFloats(Z(count), seed, -range, range);
  const float special[] = {0.f, -0.f, 1e-30f, -1e-30f, 88.f, -88.f, 100.f, -100.f, 1e4f, -1e4f, kNaN};
  for (std::size_t i = 0; i < x.size() && i < sizeof special / sizeof *special; ++i) x[i * 3 % x.size()] = special[i];
  return x;
}

class ActivationTester {
 public:
  enum class Op { kSwish, kGelu, kSigmoid, kTanh };
  ActivationTester& Operation(Op v) { op_ = v; return *this; }
  ActivationTester& Count(std::int64_t v) { count_ = v; return *this; }
  ActivationTester& InPlace(bool v) { in_place_ = v; return *this; }  ///< Gelu, Sigmoid, Tanh: dst = src

  void Test() const {
    const char* names[] = {"swish", "gelu", "sigmoid", "tanh"};
    INFO(names[static_cast<int>(op_)] << " count " << count_ << " in place " << in_place_);
    if (op_ == Op::kSigmoid || op_ == Op::kTanh) return TestGate();
    const std::vector<float> x = Inputs(count_, op_ == Op::kSwish ? 20.f : 6.f, 61);
    std::vector<test::Expected> want;
    for (float v : x) {
      const double y = op_ == Op::kSwish ? SwishOf(v) : GeluOf(v);
      // Swish: 2e-6 |y| (+1e-30: AVX2 saturates exp(-x) at 2^126, x / 2^126 below -87).
      // Gelu: 3e-7 (|x| + |y|).
      want.push_back(op_ == Op::kSwish ? test::Expected{y, std::abs(y) + 1e-30 / 2e-6}
                                       : test::Expected{y, std::abs(double{v}) + std::abs(y)});
    }
    test::Guarded y(x.size());
    std::copy(x.begin(), x.end(), y.get());
    if (op_ == Op::kSwish) SwishInPlace(y.get(), count_);
    else if (in_place_) Gelu(y.get(), y.get(), count_);
    else Gelu(x.data(), y.get(), count_);
    test::CheckAll(y.get(), want, op_ == Op::kSwish ? 2e-6 : 3e-7);
    CHECK(y.GuardIntact());
  }

 private:
  // Sigmoid 2e-6 and Tanh 5e-7 relative. Half the values in [-0.3, 0.3], around
  // Tanh's switch from its series to exp at 0.25.
  void TestGate() const {
    std::vector<float> x = Inputs(count_, op_ == Op::kSigmoid ? 20.f : 10.f, 64);
    for (std::size_t i = 1; i < x.size(); i += 2) x[i] *= 0.03f;
    std::vector<test::Expected> want;
    for (float v : x) {
      const double y = op_ == Op::kSigmoid ? 1 / (1 + std::exp(-double{v})) : std::tanh(double{v});
      want.push_back({y, std::abs(y)});
    }
    test::Guarded y(x.size());
    std::copy(x.begin(), x.end(), y.get());
    const float* src = in_place_ ? y.get() : x.data();
    if (op_ == Op::kSigmoid) Sigmoid(src, y.get(), count_);
    else Tanh(src, y.get(), count_);
    test::CheckAll(y.get(), want, op_ == Op::kSigmoid ? 2e-6 : 5e-7, 2e-38);
    CHECK(y.GuardIntact());
  }

  Op op_ = Op::kSwish;
  std::int64_t count_ = 16;
  bool in_place_ = true;
};

// [images][blocks][rows][block], the lanes at or past `channels` NaN.
class MeansTester {
 public:
  MeansTester& Images(std::int64_t v) { images_ = v; return *this; }
  MeansTester& Layout(std::int64_t blocks, std::int64_t block) { blocks_ = blocks, block_ = block; return *this; }
  MeansTester& Rows(std::int64_t v) { rows_ = v; return *this; }
  MeansTester& Channels(std::int64_t v) { channels_ = v; return *this; }
  MeansTester& WithSwish(bool v) { swish_ = v; return *this; }  ///< SwishInPlaceWithMeans (one image)

  void Test() const {
    INFO("images " << images_ << " blocks " << blocks_ << " rows " << rows_ << " block " << block_ << " channels "
                   << channels_ << " swish " << swish_);
    const std::int64_t image = blocks_ * rows_ * block_;
    std::vector<float> data = test::RandomFloats(Z(images_ * image), 62, -4.f, 4.f);
    for (std::size_t i = 0; i < data.size(); ++i) {
      const auto at = static_cast<std::int64_t>(i);
      if (at / (rows_ * block_) % blocks_ * block_ + at % block_ >= channels_) data[i] = kNaN;
    }
    std::vector<test::Expected> want_data, want_means(Z(images_ * channels_));
    for (std::int64_t n = 0; n < images_; ++n)
      for (std::int64_t b = 0; b < blocks_; ++b)
        for (std::int64_t r = 0; r < rows_; ++r)
          for (std::int64_t l = 0; l < block_; ++l) {
            const double v = data[Z(n * image + (b * rows_ + r) * block_ + l)], y = swish_ ? SwishOf(v) : v;
            want_data.push_back({y, std::abs(y)});
            if (b * block_ + l >= channels_) continue;
            test::Expected& m = want_means[Z(n * channels_ + b * block_ + l)];
            m.value += y / static_cast<double>(rows_), m.magnitude += std::abs(y) / static_cast<double>(rows_);
          }
    test::Guarded means(want_means.size());
    if (swish_) {
      SwishInPlaceWithMeans(data.data(), blocks_, rows_, block_, channels_, means.get());
      test::CheckAll(data.data(), want_data, 2e-6);
    } else {
      const std::vector<float> before = data;
      ChannelMeans(data.data(), images_, blocks_, rows_, block_, channels_, means.get());
      CHECK(std::memcmp(before.data(), data.data(), data.size() * sizeof(float)) == 0);
    }
    test::CheckAll(means.get(), want_means, 2e-5);
    CHECK(means.GuardIntact());
  }

 private:
  std::int64_t images_ = 1, blocks_ = 1, rows_ = 49, block_ = 16, channels_ = 16;
  bool swish_ = false;
};

}  // namespace

TEST_CASE("SwishInPlace: counts around the 16- and 8-float vectors and the 4096-float chunks, special values",
          "[kernels][activation]") {
  for (std::int64_t count : {1, 7, 8, 9, 15, 16, 17, 33, 4095, 4096, 4097, 3 * 4096 + 5})
    ActivationTester().Operation(ActivationTester::Op::kSwish).Count(count).Test();
}

TEST_CASE("Gelu: counts around the vectors and chunks, in place and into another buffer", "[kernels][activation]") {
  for (std::int64_t count : {1, 7, 8, 9, 15, 16, 17, 33, 4095, 4096, 4097, 3 * 4096 + 5})
    for (bool in_place : {true, false})
      ActivationTester().Operation(ActivationTester::Op::kGelu).Count(count).InPlace(in_place).Test();
}

TEST_CASE("Sigmoid and Tanh: counts around the vectors, in place and into another buffer, special values",
          "[kernels][activation]") {
  for (std::int64_t count : {1, 7, 8, 9, 15, 16, 17, 33, 128, 131})
    for (bool in_place : {true, false}) {
      ActivationTester().Operation(ActivationTester::Op::kSigmoid).Count(count).InPlace(in_place).Test();
      ActivationTester().Operation(ActivationTester::Op::kTanh).Count(count).InPlace(in_place).Test();
    }
  // The ends: 1, -1 and 1 exactly, 0 within the smallest normal float (AVX2's
  // exp saturates at 2^126); NaN stays NaN.
  std::vector<float> x(16, 0.f);
  const float ends[] = {-1e4f, -100.f, 100.f, 1e4f, kNaN};
  std::copy(std::begin(ends), std::end(ends), x.begin());
  std::vector<float> s(16), t(16);
  Sigmoid(x.data(), s.data(), 16);
  Tanh(x.data(), t.data(), 16);
  CHECK(s[0] >= 0.f);
  CHECK(s[0] <= std::numeric_limits<float>::min());
  CHECK(s[3] == 1.f);
  CHECK(t[0] == -1.f);
  CHECK(t[1] == -1.f);
  CHECK(t[2] == 1.f);
  CHECK(t[3] == 1.f);
  CHECK(std::isnan(s[4]));
  CHECK(std::isnan(t[4]));
  CHECK(s[5] == 0.5f);
  CHECK(t[5] == 0.f);
}

TEST_CASE("SwishInPlace: NaN stays NaN, large inputs give x and -0", "[kernels][activation]") {
  std::vector<float> x = {kNaN, 1e4f, -1e4f, 30.f};
  SwishInPlace(x.data(), static_cast<std::int64_t>(x.size()));
  CHECK(std::isnan(x[0]));
  CHECK(x[1] == 1e4f);
  // -0, or on the AVX2 path, whose exp saturates at 2^126, -1e4 / 2^126.
  CHECK(x[2] <= 0.f);
  CHECK(x[2] >= std::ldexp(-1e4f, -126));
  CHECK(x[3] == Approx(30.0).epsilon(1e-6));
}

TEST_CASE("SwishInPlaceWithMeans: swish and the per-channel means of dense and 16-channel-blocked maps",
          "[kernels][activation]") {
  for (std::int64_t rows : {1, 3, 49, 300, 3136}) {
    MeansTester().WithSwish(true).Layout(1, 24).Channels(24).Rows(rows).Test();  // channels-last, 24 channels
    MeansTester().WithSwish(true).Layout(3, 16).Channels(40).Rows(rows).Test();  // nChw16c, 8 lanes of padding
  }
  MeansTester().WithSwish(true).Layout(1, 7).Channels(7).Rows(600).Test();  // fewer lanes than a vector
  MeansTester().WithSwish(true).Layout(60, 16).Channels(960).Rows(49).Test();  // mobilenet_v3's last block
}

TEST_CASE("ChannelMeans: GlobalAveragePool of 8-, 16-channel-blocked and dense maps, several images",
          "[kernels][activation]") {
  for (std::int64_t images : {1, 2}) {
    MeansTester().Images(images).Layout(4, 8).Channels(27).Rows(49).Test();
    MeansTester().Images(images).Layout(2, 16).Channels(32).Rows(5).Test();
    MeansTester().Images(images).Layout(1, 3).Channels(3).Rows(10).Test();
    MeansTester().Images(images).Layout(60, 16).Channels(960).Rows(196).Test();  // split over threads
  }
  MeansTester().Layout(1, 40).Channels(40).Rows(1).Test();
}

TEST_CASE("activations: equal inputs give equal outputs in the vectors and in the tail", "[kernels][activation]") {
  // A later ArgMax or TopK over equal values must see the tie: the tail runs
  // the same formula as the whole vectors (difftest seed 71519509: Min(x,
  // 0.5) then Gelu, whose AVX2 tail rounded gelu(0.5) 1 ulp off the vectors').
  using Fn = void (*)(const float*, float*, std::int64_t);
  auto swish = [](const float* x, float* y, std::int64_t n) {
    std::copy(x, x + n, y);
    SwishInPlace(y, n);
  };
  const Fn ops[] = {swish, Gelu, Sigmoid, Tanh};
  for (float value : {0.5f, -1.25f, 3.0f})
    for (std::int64_t count : {13, 29})
      for (std::size_t op = 0; op < std::size(ops); ++op) {
        INFO("op " << op << ", value " << value << ", count " << count);
        const std::vector<float> x(static_cast<std::size_t>(count), value);
        std::vector<float> y(x.size());
        ops[op](x.data(), y.data(), count);
        for (float v : y) CHECK(v == y[0]);
      }
}

TEST_CASE("the activation path that runs is the one CpuIsa() names", "[kernels][activation]") {
  // Each path has a result the others do not give: AVX2 saturates exp(100)
  // at 2^126 (swish(-100) = -100 / 2^126); AVX-512's vscalefps overflows to
  // infinity (-0); plain C++ is x / (1 + std::exp(-x)) to the bit, which
  // the AVX-512 polynomial is not on all of 4096 random values.
  std::vector<float> probe(16, -100.f);
  SwishInPlace(probe.data(), 16);
  std::vector<float> x = test::RandomFloats(4096, 63, -10.f, 10.f), y = x;
  SwishInPlace(y.data(), 4096);
  std::int64_t same_as_libm = 0;
  for (std::size_t i = 0; i < x.size(); ++i) same_as_libm += y[i] == x[i] / (1.f + std::exp(-x[i]));
  switch (CpuIsa()) {
    case Isa::kAvx2:
      CHECK(probe[0] == std::ldexp(-100.f, -126));
      break;
    case Isa::kAvx512:
      CHECK(probe[0] == 0.f);
      CHECK(same_as_libm < 4096);
      break;
    case Isa::kScalar:
      CHECK(probe[0] == 0.f);
      CHECK(same_as_libm == 4096);
      break;
  }
}
