// MaxPool2d (src/backend/kernels/max_pool.h) on raw buffers: a MaxPoolTester
// fills random planes [height][width][lanes], pools them, and compares every
// output with the maximum over its window's elements inside the image, taken
// here element by element (-inf for a window with none). A maximum is one of
// its inputs: the comparison is exact.
//
// MaxPool2d is compiled for AVX-512, AVX2 and baseline x86-64
// (target_clones) and the clone is chosen by the CPU alone: ONEDNN_MAX_CPU_ISA
// does not cap it, so kernels.AVX2 and kernels.SSE41 run the same clone as
// the plain run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/kernels/max_pool.h"
#include "kernel_check.h"

using namespace onnxfuse;
using namespace onnxfuse::backend;

namespace {

std::size_t Z(std::int64_t v) { return static_cast<std::size_t>(v); }

class MaxPoolTester {
 public:
  MaxPoolTester& Planes(std::int64_t v) { s_.planes = v; return *this; }
  MaxPoolTester& Lanes(std::int64_t v) { s_.lanes = v; return *this; }  ///< 8, 16 (blocked) or any (nhwc)
  MaxPoolTester& Input(std::int64_t h, std::int64_t w) { s_.in_h = h, s_.in_w = w; return *this; }
  MaxPoolTester& Kernel(std::int64_t h, std::int64_t w) { s_.kernel_h = h, s_.kernel_w = w; return *this; }
  MaxPoolTester& Stride(std::int64_t h, std::int64_t w) { s_.stride_h = h, s_.stride_w = w; return *this; }
  MaxPoolTester& Pads(std::int64_t top, std::int64_t left, std::int64_t bottom, std::int64_t right) {
    s_.pad_top = top, s_.pad_left = left, bottom_ = bottom, right_ = right;
    return *this;
  }
  /// ONNX's ceil_mode: the last window may start inside the padding or past it.
  MaxPoolTester& CeilMode(bool v) { ceil_ = v; return *this; }

  void Test() const {
    MaxPoolShape s = s_;
    const auto out_size = [&](std::int64_t in, std::int64_t pads, std::int64_t k, std::int64_t stride) {
      const std::int64_t span = in + pads - k;
      return (ceil_ ? (span + stride - 1) / stride : span / stride) + 1;
    };
    s.out_h = out_size(s.in_h, s.pad_top + bottom_, s.kernel_h, s.stride_h);
    s.out_w = out_size(s.in_w, s.pad_left + right_, s.kernel_w, s.stride_w);
    INFO("planes " << s.planes << " lanes " << s.lanes << " in " << s.in_h << "x" << s.in_w << " out " << s.out_h << "x"
                   << s.out_w << " kernel " << s.kernel_h << "x" << s.kernel_w << " stride " << s.stride_h << "x"
                   << s.stride_w << " pads " << s.pad_top << "," << s.pad_left);
    const std::vector<float> x = test::RandomFloats(Z(s.planes * s.in_h * s.in_w * s.lanes), 41, -10.f, 10.f);
    std::vector<test::Expected> want;
    for (std::int64_t p = 0; p < s.planes; ++p)
      for (std::int64_t oh = 0; oh < s.out_h; ++oh)
        for (std::int64_t ow = 0; ow < s.out_w; ++ow)
          for (std::int64_t l = 0; l < s.lanes; ++l) {
            double m = -std::numeric_limits<double>::infinity();
            for (std::int64_t kh = 0; kh < s.kernel_h; ++kh)
              for (std::int64_t kw = 0; kw < s.kernel_w; ++kw) {
                const std::int64_t ih = oh * s.stride_h - s.pad_top + kh, iw = ow * s.stride_w - s.pad_left + kw;
                if (ih >= 0 && ih < s.in_h && iw >= 0 && iw < s.in_w)
                  m = std::max(m, double{x[Z(((p * s.in_h + ih) * s.in_w + iw) * s.lanes + l)]});
              }
            want.push_back({m, 0});
          }
    test::Guarded y(want.size());
    MaxPool2d(x.data(), y.get(), s);
    test::CheckAll(y.get(), want, 0);
    CHECK(y.GuardIntact());
  }

 private:
  MaxPoolShape s_{1, 8, 7, 7, 0, 0, 3, 3, 1, 1, 0, 0};
  std::int64_t bottom_ = 0, right_ = 0;
  bool ceil_ = false;
};

}  // namespace

TEST_CASE("MaxPool2d: 8 and 16 lanes (nChw8c, nChw16c) and any count (nhwc), a tail of lanes", "[kernels][max_pool]") {
  for (std::int64_t lanes : {8, 16, 1, 3, 24, 64, 67}) MaxPoolTester().Lanes(lanes).Planes(2).Test();
}

TEST_CASE("MaxPool2d: GoogLeNet's 3x3 windows at strides 1 and 2 with pads, 2x2 stride 2", "[kernels][max_pool]") {
  for (std::int64_t lanes : {8, 16, 3}) {
    MaxPoolTester().Lanes(lanes).Input(28, 28).Kernel(3, 3).Stride(1, 1).Pads(1, 1, 1, 1).Test();
    MaxPoolTester().Lanes(lanes).Input(13, 13).Kernel(3, 3).Stride(2, 2).Pads(0, 0, 0, 0).CeilMode(true).Test();
    MaxPoolTester().Lanes(lanes).Input(8, 9).Kernel(2, 2).Stride(2, 2).Test();
  }
}

TEST_CASE("MaxPool2d: non-square windows and strides, asymmetric pads, a window wider than the image",
          "[kernels][max_pool]") {
  MaxPoolTester().Input(5, 11).Kernel(1, 4).Stride(1, 3).Pads(0, 2, 0, 1).Test();
  MaxPoolTester().Input(11, 5).Kernel(5, 2).Stride(3, 1).Pads(2, 0, 1, 1).Test();
  MaxPoolTester().Lanes(16).Input(3, 2).Kernel(5, 5).Stride(1, 1).Pads(2, 2, 2, 2).Test();
  MaxPoolTester().Lanes(8).Input(1, 1).Kernel(1, 1).Test();
}

TEST_CASE("MaxPool2d: a window holding only padding is -inf", "[kernels][max_pool]") {
  // Pads of 3 before a 2x2 window: the first output row and column read no input.
  MaxPoolTester().Lanes(8).Input(4, 4).Kernel(2, 2).Stride(3, 3).Pads(3, 3, 0, 0).Test();
  MaxPoolShape s{1, 8, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3};
  std::vector<float> x(2 * 2 * 8, 1.f), y(2 * 2 * 8, 0.f);
  MaxPool2d(x.data(), y.data(), s);
  CHECK(y[0] == -std::numeric_limits<float>::infinity());  // window rows -3..-2: none inside
  CHECK(y[3 * 8] == 1.f);  // (1, 1): rows 0..1, columns 0..1
}

TEST_CASE("MaxPool2d: enough rows to split over threads, many planes", "[kernels][max_pool]") {
  MaxPoolTester().Planes(8).Lanes(16).Input(56, 56).Kernel(3, 3).Stride(2, 2).Pads(1, 1, 1, 1).Test();
  MaxPoolTester().Planes(3).Lanes(96).Input(14, 14).Kernel(3, 3).Stride(1, 1).Pads(1, 1, 1, 1).Test();
}
