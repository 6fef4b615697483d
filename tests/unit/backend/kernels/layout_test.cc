// NchwToNhwc3 (src/backend/kernels/layout.h) on raw buffers: planar
// three-channel images interleaved to channels-last, compared element by
// element (a copy: exact), for pixel counts around the 16-pixel vectors and
// the 4096-pixel blocks the threads share; StridedCopy between layouts
// given as strides.
//
// NchwToNhwc3 has one path, AVX-512: HaveNchwToNhwc3() says whether the
// lowering uses it (CpuIsa() AVX-512); the code runs wherever the hardware
// has avx512f, so it is tested there under every ISA cap.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "backend/kernels/cpu_isa.h"
#include "backend/kernels/layout.h"
#include "kernel_check.h"

using namespace onnxfuse;
using namespace onnxfuse::backend;

namespace {

class NchwToNhwc3Tester {
 public:
  NchwToNhwc3Tester& Images(std::int64_t v) { images_ = v; return *this; }
  NchwToNhwc3Tester& Pixels(std::int64_t v) { pixels_ = v; return *this; }

  void Test() const {
    if (test::SkippedWithout(test::CpuRunsAvx512(), "no AVX-512 on this CPU: NchwToNhwc3 not tested")) return;
    INFO("images " << images_ << " pixels " << pixels_);
    const auto z = [](std::int64_t v) { return static_cast<std::size_t>(v); };
    const std::vector<float> src = test::RandomFloats(z(images_ * 3 * pixels_), 51);
    std::vector<test::Expected> want(src.size());
    for (std::int64_t n = 0; n < images_; ++n)
      for (std::int64_t c = 0; c < 3; ++c)
        for (std::int64_t p = 0; p < pixels_; ++p)
          want[z((n * pixels_ + p) * 3 + c)] = {src[z((n * 3 + c) * pixels_ + p)], 0};
    test::Guarded dst(src.size());
    NchwToNhwc3(src.data(), dst.get(), images_, pixels_);
    test::CheckAll(dst.get(), want, 0);
    CHECK(dst.GuardIntact());
  }

 private:
  std::int64_t images_ = 1, pixels_ = 16;
};

}  // namespace

TEST_CASE("NchwToNhwc3: pixel counts around the 16-pixel vectors, one pixel, a scalar tail", "[kernels][layout][needs_avx512]") {
  for (std::int64_t pixels : {1, 2, 15, 16, 17, 31, 32, 33, 49}) NchwToNhwc3Tester().Pixels(pixels).Test();
}

TEST_CASE("NchwToNhwc3: several 4096-pixel blocks and images over threads, a 224x224 image", "[kernels][layout][needs_avx512]") {
  for (std::int64_t pixels : {4095, 4096, 4097, 4900, 8192 + 5})
    for (std::int64_t images : {1, 3}) NchwToNhwc3Tester().Images(images).Pixels(pixels).Test();
  NchwToNhwc3Tester().Pixels(224 * 224).Test();
}

TEST_CASE("HaveNchwToNhwc3: the lowering takes our reorder on AVX-512 only", "[kernels][layout]") {
  CHECK(HaveNchwToNhwc3() == (CpuIsa() == Isa::kAvx512));
}

// StridedCopy: every element of a [2, 3, 4, 5] tensor read through a
// permuted layout lands at its plain position; strides that are not 1 in
// the last dim, rank 1 and an empty tensor too.
TEST_CASE("StridedCopy copies a tensor between layouts given as strides", "[layout]") {
  const std::vector<std::int64_t> dims = {2, 3, 4, 5};
  // src holds the tensor as [2, 4, 3, 5] (a Transpose's view): strides of dims 1 and 2 swapped.
  const std::vector<std::int64_t> src_strides = {60, 5, 15, 1}, plain = {60, 20, 5, 1};
  std::vector<float> src(120), dst(120, -1.f);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
  StridedCopy(src.data(), src_strides, dst.data(), plain, dims);
  for (std::int64_t a = 0; a < 2; ++a)
    for (std::int64_t b = 0; b < 3; ++b)
      for (std::int64_t c = 0; c < 4; ++c)
        for (std::int64_t d = 0; d < 5; ++d)
          REQUIRE(dst[static_cast<std::size_t>(a * 60 + b * 20 + c * 5 + d)] ==
                  src[static_cast<std::size_t>(a * 60 + b * 5 + c * 15 + d)]);
  // The last dim strided on both sides: [3, 4] read column-major, written transposed.
  std::vector<float> t(12, -1.f);
  StridedCopy(src.data(), {1, 3}, t.data(), {1, 3}, {3, 4});
  for (std::size_t i = 0; i < 12; ++i) REQUIRE(t[i] == src[i]);
  StridedCopy(src.data(), {1, 3}, t.data(), {4, 1}, {3, 4});
  for (std::int64_t r = 0; r < 3; ++r)
    for (std::int64_t k = 0; k < 4; ++k)
      REQUIRE(t[static_cast<std::size_t>(r * 4 + k)] == src[static_cast<std::size_t>(r + k * 3)]);
  std::vector<float> one(7, -1.f);
  StridedCopy(src.data(), {2}, one.data(), {1}, {7});
  for (std::size_t i = 0; i < 7; ++i) REQUIRE(one[i] == src[2 * i]);
  StridedCopy(src.data(), {4, 1}, one.data(), {4, 1}, {0, 4});  // no elements: nothing written
  REQUIRE(one[0] == src[0]);
}
