// NchwToNhwc3 (src/backend/kernels/layout.h) on raw buffers: planar
// three-channel images interleaved to channels-last, compared element by
// element (a copy: exact), for pixel counts around the 16-pixel vectors and
// the 4096-pixel blocks the threads share.
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
