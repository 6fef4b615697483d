// InvertedResidual (src/backend/kernels/inverted_residual.h) on raw buffers: an
// InvertedResidualTester fills a random channels-last image and weights, runs
// the block depth-first and compares every output with the three
// convolutions computed one after the other in double. Tolerance: 1e-5 of the
// sum of the magnitudes of the terms, carried through all three (a missing or
// doubled tap or product is far more). Then the same block at other tile
// heights and thread counts must give the same bits: every output is summed in
// one order whatever the tiling. Without the projection (the first phase of
// a block with squeeze-and-excitation), d itself and its channel means are
// checked the same way.
//
// The kernel has an AVX-512, an AVX2 and a baseline build (ForCpuIsa); the
// ctest variants kernels.AVX2 and kernels.SSE41 run this file under the cap.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "backend/kernels/inverted_residual.h"
#include "kernel_check.h"

using namespace onnxfuse;
using namespace onnxfuse::backend;

namespace {

std::size_t Z(std::int64_t v) { return static_cast<std::size_t>(v); }

using K = PointwiseOp::Kind;
const PointwiseOp kRelu6{K::kClamp, 0, 6}, kHardSwish{K::kHardSwish, 1.f / 6, 0.5f},
    kRelu{K::kClamp, 0, std::numeric_limits<float>::infinity()}, kAdd{K::kAdd, 0, 0}, kSwish{K::kSwish, 0, 0};

class InvertedResidualTester {
 public:
  InvertedResidualTester& Input(std::int64_t h, std::int64_t w, std::int64_t c) {
    s_.in_h = h, s_.in_w = w, s_.in_channels = c;
    return *this;
  }
  InvertedResidualTester& Expanded(std::int64_t v) { s_.expanded = v; return *this; }
  InvertedResidualTester& OutChannels(std::int64_t v) { s_.out_channels = v; return *this; }
  /// kernel x kernel, stride, padding (kernel - 1) / 2 on every side, as MobileNets pad.
  InvertedResidualTester& Depthwise(std::int64_t kernel, std::int64_t stride) {
    s_.kernel = kernel, s_.stride = stride, s_.pad_top = s_.pad_left = (kernel - 1) / 2;
    return *this;
  }
  InvertedResidualTester& Residual(bool v) { residual_ = v; return *this; }
  /// No projection: y is d, and the kernel also gives d's channel means.
  InvertedResidualTester& WithoutProjection() { project_ = false; return *this; }
  InvertedResidualTester& Activation(PointwiseOp v) { act_ = v; return *this; }
  /// 0: InvertedResidualTileRows for a 1 MB cache.
  InvertedResidualTester& TileRows(std::int64_t v) { tile_rows_ = v; return *this; }

  void Test() {
    Complete();
    INFO("in " << s_.in_h << "x" << s_.in_w << "x" << s_.in_channels << " expanded " << s_.expanded << " out "
               << s_.out_h << "x" << s_.out_w << "x" << s_.out_channels << " kernel " << s_.kernel << " stride "
               << s_.stride << " residual " << residual_ << " projection " << project_ << " tile rows "
               << tile_rows_);
    const std::vector<float> x = test::RandomFloats(Z(s_.in_h * s_.in_w * s_.in_channels), 41);
    const std::vector<float> we = test::RandomFloats(Z(s_.expanded * s_.in_channels), 42, -0.5f, 0.5f);
    const std::vector<float> be = test::RandomFloats(Z(s_.expanded), 43);
    const std::vector<float> wd = test::RandomFloats(Z(s_.expanded * s_.kernel * s_.kernel), 44, -0.5f, 0.5f);
    const std::vector<float> bd = test::RandomFloats(Z(s_.expanded), 45);
    const std::vector<float> wp = test::RandomFloats(Z(s_.out_channels * s_.expanded), 46, -0.5f, 0.5f);
    const std::vector<float> bp = test::RandomFloats(Z(s_.out_channels), 47);
    std::vector<float> packed(Z(InvertedResidualPackedFloats(s_)));
    PackInvertedResidual(s_, we.data(), be.data(), wd.data(), bd.data(), wp.data(), bp.data(), packed.data());

    const std::vector<test::Expected> want = Reference(x, we, be, wd, bd, wp, bp);
    const std::vector<float> got = Run(x, packed, tile_rows_, 1);
    test::CheckAll(got.data(), want, 1e-5);
    for (std::int64_t rows : {std::int64_t{1}, tile_rows_ + 1, s_.out_h})
      for (int threads : {1, 2}) {
        INFO("again at tile rows " << rows << ", " << threads << " threads: the same bits");
        const std::vector<float> again = Run(x, packed, rows, threads);
        CHECK(std::memcmp(again.data(), got.data(), got.size() * sizeof(float)) == 0);
      }
  }

 private:
  void Complete() {
    s_.out_h = (s_.in_h + 2 * s_.pad_top - s_.kernel) / s_.stride + 1;
    s_.out_w = (s_.in_w + 2 * s_.pad_left - s_.kernel) / s_.stride + 1;
    if (residual_) s_.out_channels = s_.in_channels;
    if (!project_) s_.out_channels = 0;
    ep_.expand = {act_};
    ep_.depthwise = {act_};
    ep_.project = residual_ ? std::vector<PointwiseOp>{kAdd} : std::vector<PointwiseOp>{};
    if (tile_rows_ == 0) tile_rows_ = InvertedResidualTileRows(s_, 1 << 20);
  }

  std::vector<test::Expected> Reference(const std::vector<float>& x, const std::vector<float>& we,
                                        const std::vector<float>& be, const std::vector<float>& wd,
                                        const std::vector<float>& bd, const std::vector<float>& wp,
                                        const std::vector<float>& bp) const {
    const std::int64_t h = s_.in_h, w = s_.in_w, c = s_.in_channels, m = s_.expanded, k = s_.kernel;
    std::vector<test::Expected> e(Z(h * w * m)), d(Z(s_.out_h * s_.out_w * m)),
        y(Z(s_.out_h * s_.out_w * s_.out_channels));
    for (std::int64_t px = 0; px < h * w; ++px)
      for (std::int64_t n = 0; n < m; ++n) {
        test::Expected v{be[Z(n)], std::abs(be[Z(n)])};
        for (std::int64_t i = 0; i < c; ++i) {
          const double t = double{x[Z(px * c + i)]} * we[Z(n * c + i)];
          v.value += t, v.magnitude += std::abs(t);
        }
        e[Z(px * m + n)] = test::ApplyEpilogue(v, ep_.expand, 0);
      }
    for (std::int64_t oh = 0; oh < s_.out_h; ++oh)
      for (std::int64_t ow = 0; ow < s_.out_w; ++ow)
        for (std::int64_t n = 0; n < m; ++n) {
          test::Expected v{bd[Z(n)], std::abs(bd[Z(n)])};
          for (std::int64_t kh = 0; kh < k; ++kh)
            for (std::int64_t kw = 0; kw < k; ++kw) {
              const std::int64_t ih = oh * s_.stride - s_.pad_top + kh, iw = ow * s_.stride - s_.pad_left + kw;
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              const test::Expected& in = e[Z((ih * w + iw) * m + n)];
              const double wt = wd[Z((n * k + kh) * k + kw)];
              v.value += wt * in.value, v.magnitude += std::abs(wt) * in.magnitude;
            }
          d[Z((oh * s_.out_w + ow) * m + n)] = test::ApplyEpilogue(v, ep_.depthwise, 0);
        }
    if (!project_) {  // d, then its channel means
      const std::int64_t pixels = s_.out_h * s_.out_w;
      std::vector<test::Expected> means(Z(m));
      for (std::int64_t px = 0; px < pixels; ++px)
        for (std::int64_t n = 0; n < m; ++n) {
          means[Z(n)].value += d[Z(px * m + n)].value / static_cast<double>(pixels);
          means[Z(n)].magnitude += d[Z(px * m + n)].magnitude / static_cast<double>(pixels);
        }
      d.insert(d.end(), means.begin(), means.end());
      return d;
    }
    for (std::int64_t px = 0; px < s_.out_h * s_.out_w; ++px)
      for (std::int64_t o = 0; o < s_.out_channels; ++o) {
        test::Expected v{bp[Z(o)], std::abs(bp[Z(o)])};
        for (std::int64_t n = 0; n < m; ++n) {
          const test::Expected& in = d[Z(px * m + n)];
          const double wt = wp[Z(o * m + n)];
          v.value += wt * in.value, v.magnitude += std::abs(wt) * in.magnitude;
        }
        const double addend = residual_ ? x[Z(px * c + o)] : 0.0;
        y[Z(px * s_.out_channels + o)] = test::ApplyEpilogue(v, ep_.project, addend);
      }
    return y;
  }

  std::vector<float> Run(const std::vector<float>& x, const std::vector<float>& packed, std::int64_t tile_rows,
                         int threads) const {
    const std::int64_t per_thread = InvertedResidualScratchBytes(s_, tile_rows);
    std::vector<float> scratch(Z(per_thread * threads / 4 + 16));
    auto* aligned = reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(scratch.data()) + 63) / 64 * 64);
    const std::int64_t count = s_.out_h * s_.out_w * (project_ ? s_.out_channels : s_.expanded);
    test::Guarded y(Z(count)), means(Z(project_ ? 0 : s_.expanded));
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    InvertedResidual(x.data(), packed.data(), y.get(), s_, ep_, tile_rows, aligned, per_thread * threads,
                     project_ ? nullptr : means.get());
    omp_set_num_threads(before);
    CHECK(y.GuardIntact());
    CHECK(means.GuardIntact());
    std::vector<float> got(y.data.begin(), y.data.begin() + static_cast<std::ptrdiff_t>(count));
    got.insert(got.end(), means.get(), means.get() + (project_ ? 0 : s_.expanded));
    return got;
  }

  InvertedResidualShape s_;
  InvertedResidualEpilogues ep_;
  PointwiseOp act_ = kRelu6;
  bool residual_ = false, project_ = true;
  std::int64_t tile_rows_ = 0;
};

}  // namespace

TEST_CASE("InvertedResidual: MobileNetV2's blocks, with and without the residual", "[kernels][inverted_residual]") {
  // features.2 (stride 2, 16 -> 96 -> 24), features.3 (stride 1, residual), a late one (160 -> 960 -> 160).
  InvertedResidualTester().Input(28, 28, 16).Expanded(96).OutChannels(24).Depthwise(3, 2).Test();
  InvertedResidualTester().Input(14, 14, 24).Expanded(144).Depthwise(3, 1).Residual(true).Test();
  InvertedResidualTester().Input(7, 7, 160).Expanded(960).Depthwise(3, 1).Residual(true).Test();
}

TEST_CASE("InvertedResidual: every stride, kernels 3 and 5, each activation", "[kernels][inverted_residual]") {
  for (std::int64_t kernel : {3, 5})
    for (std::int64_t stride : {1, 2})
      for (const PointwiseOp& act : {kRelu6, kRelu, kHardSwish, kSwish})
        InvertedResidualTester()
            .Input(13, 11, 24)
            .Expanded(72)
            .OutChannels(40)
            .Depthwise(kernel, stride)
            .Activation(act)
            .Test();
}

TEST_CASE("InvertedResidual: channel counts around the register blocks and odd sizes", "[kernels][inverted_residual]") {
  // Expanded channels 1, 15, 16, 17, 33 (panels and the depthwise's 4-vector
  // blocks, partly filled); out channels 1, 17, 31, 33 (a partial last panel);
  // maps of one row or column.
  for (std::int64_t expanded : {1, 15, 16, 17, 33, 80})
    for (std::int64_t out : {1, 17, 33})
      InvertedResidualTester().Input(5, 7, 3).Expanded(expanded).OutChannels(out).Depthwise(3, 1).Test();
  InvertedResidualTester().Input(1, 9, 8).Expanded(24).OutChannels(8).Depthwise(3, 1).Residual(true).Test();
  InvertedResidualTester().Input(9, 1, 8).Expanded(24).OutChannels(8).Depthwise(3, 2).Test();
  InvertedResidualTester().Input(2, 2, 5).Expanded(30).OutChannels(7).Depthwise(5, 2).Test();
  // Rows of 25 pixels: row blocks of 12 and 6 split inside a row.
  InvertedResidualTester().Input(6, 25, 17).Expanded(48).Depthwise(3, 1).Residual(true).Test();
}

TEST_CASE("InvertedResidual: tile heights around the halo", "[kernels][inverted_residual]") {
  // One output row per tile (a ring of exactly `kernel` rows), two, three,
  // and heights that leave a short last tile, at both strides.
  for (std::int64_t stride : {1, 2})
    for (std::int64_t rows : {1, 2, 3, 4, 7})
      InvertedResidualTester().Input(17, 9, 8).Expanded(32).OutChannels(16).Depthwise(3, stride).TileRows(rows).Test();
  InvertedResidualTester().Input(17, 9, 8).Expanded(32).OutChannels(16).Depthwise(5, 1).TileRows(2).Test();
}

TEST_CASE("InvertedResidual without the projection: d and its channel means (squeeze-and-excitation's first phase)",
          "[kernels][inverted_residual]") {
  // EfficientNet-B0's features.2.0 and features.3.0 (swish, strides 2, kernels 3 and 5), smaller.
  InvertedResidualTester().Input(20, 18, 16).Expanded(96).Depthwise(3, 2).Activation(kSwish).WithoutProjection().Test();
  InvertedResidualTester().Input(12, 12, 24).Expanded(144).Depthwise(5, 2).Activation(kSwish).WithoutProjection().Test();
  // Expanded channels not a multiple of 16 (d through the tile), stride 1, one row per tile.
  for (std::int64_t expanded : {8, 17, 72})
    InvertedResidualTester().Input(9, 7, 5).Expanded(expanded).Depthwise(3, 1).WithoutProjection().Test();
  InvertedResidualTester().Input(9, 7, 5).Expanded(40).Depthwise(3, 1).TileRows(1).WithoutProjection().Test();
}

TEST_CASE("InvertedResidual: channel means with a projection, or a residual without one, are logic_errors",
          "[kernels][inverted_residual]") {
  InvertedResidualShape s;
  s.in_h = s.in_w = 4, s.in_channels = 8, s.expanded = 16, s.out_h = s.out_w = 4, s.out_channels = 8;
  std::vector<float> packed(Z(InvertedResidualPackedFloats(s))), x(128), y(128), means(16);
  std::vector<float> scratch(Z(InvertedResidualScratchBytes(s, 1) / 4 + 16));
  auto* aligned = reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(scratch.data()) + 63) / 64 * 64);
  const std::int64_t bytes = InvertedResidualScratchBytes(s, 1);
  CHECK_THROWS_AS(InvertedResidual(x.data(), packed.data(), y.data(), s, {}, 1, aligned, bytes, means.data()),
                  std::logic_error);
  s.out_channels = 0;
  InvertedResidualEpilogues with_add;
  with_add.project = {kAdd};
  CHECK_THROWS_AS(InvertedResidual(x.data(), packed.data(), y.data(), s, with_add, 1, aligned, bytes), std::logic_error);
}

TEST_CASE("InvertedResidual: the tile height fits half the cache", "[kernels][inverted_residual]") {
  InvertedResidualShape s;
  s.in_h = s.in_w = 112, s.in_channels = 16, s.expanded = 96, s.stride = 2;
  s.out_h = s.out_w = 56, s.out_channels = 24;
  const std::int64_t rows = InvertedResidualTileRows(s, 1 << 20);
  CHECK(rows >= 1);
  CHECK(InvertedResidualScratchBytes(s, rows) <= (1 << 19));
  CHECK(InvertedResidualScratchBytes(s, rows + 1) > (1 << 19));
  CHECK(InvertedResidualTileRows(s, 1) == 1);  // no cache to speak of: still one row
  CHECK(InvertedResidualTileRows(s, std::int64_t{1} << 40) == s.out_h);
}
