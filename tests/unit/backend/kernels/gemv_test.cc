// MatVec (src/backend/kernels/gemv.h) on raw buffers: a MatVecTester fills
// random weights, input, bias and residual, runs y = epilogue(bias + W x) and
// compares every y[o] with the sum computed in double. Tolerance: 1e-5 of
// the sum of the magnitudes of the terms (a missing or doubled product of
// n up to 4096 is some 1e-4 of it).
//
// MatVec takes its AVX2 path when CpuIsa() is AVX2 or AVX-512 and plain C++
// under ONEDNN_MAX_CPU_ISA=SSE41: ctest's kernels.AVX2 and kernels.SSE41 run
// this file on both (cpu_isa_test.cc checks the cap is honoured).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/kernels/gemv.h"
#include "kernel_check.h"

using namespace onnxfuse;
using namespace onnxfuse::backend;

namespace {

class MatVecTester {
 public:
  MatVecTester& Rows(std::int64_t v) { m_ = v; return *this; }  ///< m, outputs
  MatVecTester& Depth(std::int64_t v) { n_ = v; return *this; }  ///< n, inputs
  MatVecTester& Bias(bool v) { bias_ = v; return *this; }
  MatVecTester& Epilogue(std::vector<PointwiseOp> v) { epilogue_ = std::move(v); return *this; }
  MatVecTester& AddendInPlace(bool v) { in_place_ = v; return *this; }  ///< kAdd reads y itself

  void Test() const {
    INFO("m " << m_ << " n " << n_ << " bias " << bias_ << " epilogue " << test::Describe(epilogue_) << " in place "
              << in_place_);
    const auto z = [](std::int64_t v) { return static_cast<std::size_t>(v); };
    const std::vector<float> w = test::RandomFloats(z(m_ * n_), 11), x = test::RandomFloats(z(n_), 12);
    const std::vector<float> bias = test::RandomFloats(z(m_), 13), addend = test::RandomFloats(z(m_), 14);
    std::vector<test::Expected> want(z(m_));
    for (std::int64_t o = 0; o < m_; ++o) {
      test::Expected e{bias_ ? bias[z(o)] : 0.0, bias_ ? std::abs(bias[z(o)]) : 0.0};
      for (std::int64_t i = 0; i < n_; ++i) {
        const double term = double{w[z(o * n_ + i)]} * x[z(i)];
        e.value += term, e.magnitude += std::abs(term);
      }
      want[z(o)] = test::ApplyEpilogue(e, epilogue_, addend[z(o)]);
    }
    test::Guarded y(z(m_));
    if (in_place_) std::copy(addend.begin(), addend.end(), y.get());
    MatVec(w.data(), bias_ ? bias.data() : nullptr, x.data(), y.get(), m_, n_, epilogue_,
           in_place_ ? y.get() : addend.data());
    test::CheckAll(y.get(), want, 1e-5);
    CHECK(y.GuardIntact());
  }

 private:
  std::int64_t m_ = 4, n_ = 16;
  bool bias_ = true, in_place_ = false;
  std::vector<PointwiseOp> epilogue_;
};

}  // namespace

TEST_CASE("MatVec: rows in the four quarters and the m % 4 left over, one row alone", "[kernels][gemv]") {
  for (std::int64_t m : {1, 2, 3, 4, 5, 7, 8, 9, 33, 1000}) MatVecTester().Rows(m).Depth(40).Test();
}

TEST_CASE("MatVec: depths around the 16- and 8-float vector steps, below one vector and large", "[kernels][gemv]") {
  for (std::int64_t n : {1, 5, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 960, 4099})
    MatVecTester().Rows(6).Depth(n).Test();
}

TEST_CASE("MatVec: enough work to split the rows over threads (m n >= 65536)", "[kernels][gemv]") {
  MatVecTester().Rows(1001).Depth(130).Test();
  MatVecTester().Rows(1280).Depth(960).Epilogue({{PointwiseOp::Kind::kAdd}}).AddendInPlace(true).Test();
}

TEST_CASE("MatVec: every epilogue in order, with and without bias, the residual read from y", "[kernels][gemv]") {
  for (const auto& epilogue : test::EpiloguesToTest(/*add_first=*/false))
    for (bool bias : {true, false})
      for (bool in_place : {false, true})
        MatVecTester().Rows(11).Depth(35).Bias(bias).Epilogue(epilogue).AddendInPlace(in_place).Test();
}
