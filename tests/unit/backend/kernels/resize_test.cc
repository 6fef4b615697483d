// Resize's kernels (src/backend/kernels/resize.h) on raw buffers: the input
// coordinate of each coordinate_transformation_mode against values worked
// out by hand from Operators.md's formulas; SampleAxis's tables on chosen
// points; and a ResizeTester that resizes a random tensor by
// PlanSeparableResize + ResizeSeparable and compares every element with the
// n-D interpolation written out here in double (nearest, linear and Keys'
// cubic weights from their definitions, applied as one sum over the product
// of the axes' taps, not axis by axis). Tolerance: 1e-6 of the sum of the
// magnitudes of the weighted terms (the weights are stored as floats).
//
// ResampleAxis is compiled per ISA (target_clones) and chosen by the CPU
// alone: ONEDNN_MAX_CPU_ISA does not cap it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/kernels/resize.h"
#include "kernel_check.h"

using namespace onnxfuse;
using namespace onnxfuse::backend;

namespace {

std::size_t Z(std::int64_t v) { return static_cast<std::size_t>(v); }

std::string Text(const std::vector<std::int64_t>& dims) {
  std::string s;
  for (std::int64_t d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

ResizeMode Mode(const std::string& mode, const std::string& transform,
                const std::string& nearest = "round_prefer_floor") {
  ResizeMode m;
  m.mode = mode, m.transform = transform, m.nearest_mode = nearest;
  return m;
}

// An axis resized from `in` to `out` by scale out / in (as when sizes are given).
AxisResize Axis(std::int64_t in, std::int64_t out) {
  AxisResize a;
  a.in = in, a.out = out, a.scale = static_cast<double>(out) / static_cast<double>(in);
  a.length_resized = static_cast<double>(out);
  return a;
}

// Keys' cubic convolution kernel W(d) (IEEE TASSP 1981) in its piecewise form.
double Keys(double d, double a) {
  d = std::abs(d);
  if (d <= 1) return (a + 2) * d * d * d - (a + 3) * d * d + 1;
  if (d < 2) return a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a;
  return 0;
}

// The input samples (index, weight) of output index y along one axis, from
// the definitions: indices outside [0, in) clamped (ONNX's edge padding);
// `outside` for tf_crop_and_resize past the input.
struct RefTaps {
  std::vector<std::pair<std::int64_t, double>> taps;
  bool outside = false;
};

RefTaps Reference(const ResizeMode& m, const AxisResize& a, std::int64_t y) {
  const double x = SourceCoordinate(m, a, y);  // checked against hand values below
  RefTaps r;
  if (m.opset >= 11 && m.transform == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(a.in - 1))) {
    r.outside = true;
    return r;
  }
  const double fl = std::floor(x), frac = x - fl;
  const auto base = static_cast<std::int64_t>(fl);
  if (m.mode == "nearest") {
    bool up = false;
    if (m.opset < 11) up = a.scale < 1 && frac > 0;
    else if (m.nearest_mode == "floor") up = false;
    else if (m.nearest_mode == "ceil") up = frac > 0;
    else if (m.nearest_mode == "round_prefer_ceil") up = frac >= 0.5;
    else up = frac > 0.5;
    r.taps = {{base + (up ? 1 : 0), 1.0}};
  } else {
    const int lo = m.mode == "linear" ? 0 : -1, hi = m.mode == "linear" ? 1 : 2;
    double sum = 0;
    for (int t = lo; t <= hi; ++t) {
      const std::int64_t i = base + t;
      const double d = x - static_cast<double>(i);
      double w = m.mode == "linear" ? 1 - std::abs(d) : Keys(d, m.cubic_coeff_a);
      if (m.exclude_outside && (i < 0 || i >= a.in)) w = 0;
      r.taps.push_back({i, w}), sum += w;
    }
    if (m.exclude_outside)
      for (auto& t : r.taps) t.second /= sum;
  }
  for (auto& t : r.taps) t.first = std::min(std::max<std::int64_t>(t.first, 0), a.in - 1);
  return r;
}

class ResizeTester {
 public:
  ResizeTester& In(std::vector<std::int64_t> v) { in_ = std::move(v); return *this; }
  ResizeTester& Out(std::vector<std::int64_t> v) { out_ = std::move(v); return *this; }
  ResizeTester& WithMode(ResizeMode v) { mode_ = std::move(v); return *this; }
  /// tf_crop_and_resize's roi of the last two axes (the others keep 0 to 1: as they are).
  ResizeTester& Roi(double start, double end) { roi_ = {start, end}; return *this; }
  ResizeTester& Passes(std::size_t v) { passes_ = v; return *this; }  ///< expected resampled axes

  void Test() const {
    INFO(mode_.mode << " " << mode_.transform << " " << mode_.nearest_mode << " exclude_outside "
                    << mode_.exclude_outside << " opset " << mode_.opset << " in " << Text(in_) << " out "
                    << Text(out_));
    const std::size_t rank = in_.size();
    std::vector<AxisResize> axes;
    std::vector<AxisSamples> samples;
    for (std::size_t d = 0; d < rank; ++d) {
      AxisResize a = Axis(in_[d], out_[d]);
      if (d + 2 >= rank) a.roi_start = roi_.first, a.roi_end = roi_.second;
      axes.push_back(a), samples.push_back(SampleAxis(mode_, a));
    }
    const float extrapolation = -7.5f;
    const SeparableResize plan = PlanSeparableResize(in_, samples, extrapolation);
    CHECK(plan.passes.size() == passes_);
    std::int64_t in_count = 1, out_count = 1;
    for (std::size_t d = 0; d < rank; ++d) in_count *= in_[d], out_count *= out_[d];
    const std::vector<float> x = test::RandomFloats(Z(in_count), 71);
    test::Guarded y(Z(out_count)), scratch(Z(plan.ScratchElements()));
    ResizeSeparable(plan, x.data(), y.get(), scratch.get());

    std::vector<test::Expected> want;
    std::vector<std::int64_t> index(rank, 0);
    for (std::int64_t o = 0; o < out_count; ++o) {
      for (std::int64_t rest = o, d = static_cast<std::int64_t>(rank) - 1; d >= 0; --d)
        index[Z(d)] = rest % out_[Z(d)], rest /= out_[Z(d)];
      std::vector<RefTaps> taps;
      bool outside = false;
      for (std::size_t d = 0; d < rank; ++d) {
        taps.push_back(Reference(mode_, axes[d], index[d]));
        outside |= taps[d].outside;
      }
      if (outside) {
        want.push_back({extrapolation, 0});
        continue;
      }
      // Sum over every combination of the axes' taps of the product of their weights.
      test::Expected e;
      std::vector<std::size_t> pick(rank, 0);
      for (bool more = true; more;) {
        double w = 1;
        std::int64_t at = 0;
        for (std::size_t d = 0; d < rank; ++d) {
          w *= taps[d].taps[pick[d]].second;
          at = at * in_[d] + taps[d].taps[pick[d]].first;
        }
        e.value += w * x[Z(at)], e.magnitude += std::abs(w * x[Z(at)]);
        more = false;
        for (std::size_t d = rank; d-- > 0;) {
          if (++pick[d] < taps[d].taps.size()) { more = true; break; }
          pick[d] = 0;
        }
      }
      want.push_back(e);
    }
    test::CheckAll(y.get(), want, 1e-6, 1e-7);
    CHECK(y.GuardIntact());
    CHECK(scratch.GuardIntact());
  }

 private:
  std::vector<std::int64_t> in_ = {1, 2, 5, 6}, out_ = {1, 2, 10, 12};
  ResizeMode mode_;
  std::pair<double, double> roi_ = {0, 1};
  std::size_t passes_ = 2;
};

}  // namespace

TEST_CASE("SourceCoordinate: each coordinate_transformation_mode by Operators.md's formula", "[kernels][resize]") {
  const AxisResize up = Axis(4, 8);  // scale 2
  CHECK(SourceCoordinate(Mode("linear", "half_pixel"), up, 0) == -0.25);
  CHECK(SourceCoordinate(Mode("linear", "half_pixel"), up, 3) == 1.25);
  CHECK(SourceCoordinate(Mode("linear", "asymmetric"), up, 3) == 1.5);
  CHECK(SourceCoordinate(Mode("linear", "pytorch_half_pixel"), up, 3) == 1.25);
  CHECK(SourceCoordinate(Mode("linear", "tf_half_pixel_for_nn"), up, 3) == 1.75);
  CHECK(SourceCoordinate(Mode("linear", "align_corners"), up, 7) == Approx(3.0));  // 7 * 3 / 7
  CHECK(SourceCoordinate(Mode("linear", "align_corners"), up, 2) == Approx(6.0 / 7));
  const AxisResize one = Axis(4, 1);  // length_resized 1: pytorch_half_pixel and align_corners read 0
  CHECK(SourceCoordinate(Mode("linear", "pytorch_half_pixel"), one, 0) == 0);
  CHECK(SourceCoordinate(Mode("linear", "align_corners"), one, 0) == 0);
  AxisResize fractional = Axis(4, 2);  // scales 0.6: length_resized 2.4, not the output's 2
  fractional.scale = 0.6, fractional.length_resized = 2.4;
  CHECK(SourceCoordinate(Mode("linear", "align_corners"), fractional, 1) == Approx(3 / 1.4));
  AxisResize crop = Axis(5, 3);
  crop.roi_start = 0.25, crop.roi_end = 0.75;  // start (in - 1) + y (end - start) (in - 1) / (len - 1)
  CHECK(SourceCoordinate(Mode("linear", "tf_crop_and_resize"), crop, 0) == 1.0);
  CHECK(SourceCoordinate(Mode("linear", "tf_crop_and_resize"), crop, 2) == 3.0);
  ResizeMode opset10 = Mode("nearest", "half_pixel");
  opset10.opset = 10;  // no attribute: asymmetric
  CHECK(SourceCoordinate(opset10, up, 3) == 1.5);
}

TEST_CASE("SampleAxis: nearest's rounding modes, linear and cubic weights, exclude_outside, crop outside",
          "[kernels][resize]") {
  const AxisResize down = Axis(8, 4);  // half_pixel, scale 0.5: y = 1 reads x = 2.5
  CHECK(SampleAxis(Mode("nearest", "half_pixel", "round_prefer_floor"), down).index[1] == 2);
  CHECK(SampleAxis(Mode("nearest", "half_pixel", "round_prefer_ceil"), down).index[1] == 3);
  CHECK(SampleAxis(Mode("nearest", "half_pixel", "floor"), down).index[1] == 2);
  CHECK(SampleAxis(Mode("nearest", "half_pixel", "ceil"), down).index[1] == 3);
  ResizeMode opset10 = Mode("nearest", "half_pixel");
  opset10.opset = 10;  // asymmetric x = 2 y * 8 / 3 ...: downsampling 8 -> 3 rounds up
  const AxisSamples s10 = SampleAxis(opset10, Axis(8, 3));
  CHECK(s10.index == std::vector<std::int64_t>{0, 3, 6});  // x = 0, 2.67, 5.33
  const AxisSamples linear = SampleAxis(Mode("linear", "asymmetric"), Axis(2, 8));  // y = 1: x = 0.25
  REQUIRE(linear.taps == 2);
  CHECK(linear.index[2] == 0);
  CHECK(linear.index[3] == 1);
  CHECK(linear.weight[2] == 0.75f);
  CHECK(linear.weight[3] == 0.25f);
  // Cubic at r = 1/2, A = -0.75: W(1.5) = -0.09375, W(0.5) = 0.59375.
  const AxisSamples cubic = SampleAxis(Mode("cubic", "asymmetric"), Axis(4, 8));  // y = 3: x = 1.5
  REQUIRE(cubic.taps == 4);
  CHECK(std::vector<float>(cubic.weight.begin() + 12, cubic.weight.end() - 16) ==
        std::vector<float>{-0.09375f, 0.59375f, 0.59375f, -0.09375f});
  CHECK(std::vector<std::int64_t>(cubic.index.begin() + 12, cubic.index.end() - 16) ==
        std::vector<std::int64_t>{0, 1, 2, 3});
  // At the edge: y = 0 reads x = -0.25 (half_pixel, scale 2), taps -2..1 clamped to 0..1.
  ResizeMode excluded = Mode("cubic", "half_pixel");
  const AxisSamples edge = SampleAxis(excluded, Axis(4, 8));
  CHECK(std::vector<std::int64_t>(edge.index.begin(), edge.index.begin() + 4) == std::vector<std::int64_t>{0, 0, 0, 1});
  excluded.exclude_outside = true;  // the taps at -2 and -1 weigh 0, the rest renormalized to sum 1
  const AxisSamples inside = SampleAxis(excluded, Axis(4, 8));
  CHECK(inside.weight[0] == 0.f);
  CHECK(inside.weight[1] == 0.f);
  CHECK(inside.weight[2] + inside.weight[3] == Approx(1.0));
  AxisResize crop = Axis(5, 4);
  crop.roi_start = -0.5, crop.roi_end = 0.9;  // x = -2 + 5.6 y / 3: -2, -0.13, 1.73, 3.6
  const AxisSamples cropped = SampleAxis(Mode("linear", "tf_crop_and_resize"), crop);
  CHECK(cropped.outside == std::vector<char>{1, 1, 0, 0});
  CHECK(!cropped.Identity());
  CHECK(SampleAxis(Mode("linear", "half_pixel"), Axis(5, 5)).Identity());
  CHECK(!SampleAxis(Mode("linear", "align_corners"), Axis(5, 6)).Identity());
}

TEST_CASE("PlanSeparableResize: one pass per resampled axis, scratch for two passes and for more",
          "[kernels][resize]") {
  const ResizeMode linear = Mode("linear", "half_pixel");
  const auto plan = [&](std::vector<std::int64_t> in, std::vector<std::int64_t> out) {
    std::vector<AxisSamples> axes;
    for (std::size_t d = 0; d < in.size(); ++d) axes.push_back(SampleAxis(linear, Axis(in[d], out[d])));
    return PlanSeparableResize(in, axes, 0.f);
  };
  const SeparableResize none = plan({1, 3, 4}, {1, 3, 4});
  CHECK(none.passes.empty());
  CHECK(none.ScratchElements() == 0);
  CHECK(none.elements == 12);
  const SeparableResize one = plan({1, 3, 4}, {1, 3, 8});
  REQUIRE(one.passes.size() == 1);
  CHECK(one.passes[0].outer == 3);
  CHECK(one.passes[0].inner == 1);
  CHECK(one.ScratchElements() == 0);
  const SeparableResize two = plan({2, 3, 4}, {2, 6, 8});  // [2,3,4] -> [2,6,4] -> [2,6,8]
  REQUIRE(two.passes.size() == 2);
  CHECK(two.passes[0].outer == 2);
  CHECK(two.passes[0].inner == 4);
  CHECK(two.passes[1].outer == 12);
  CHECK(two.ScratchElements() == 48);
  const SeparableResize three = plan({2, 3, 4}, {4, 6, 2});  // -> [4,3,4] -> [4,6,4] -> [4,6,2]
  REQUIRE(three.passes.size() == 3);
  CHECK(three.scratch_half == 96);
  CHECK(three.ScratchElements() == 192);
}

TEST_CASE("ResizeSeparable: nearest in each rounding mode, linear and cubic, up and down", "[kernels][resize]") {
  for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
    for (const char* transform : {"half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners"}) {
      // tf_half_pixel_for_nn reads y + 0.5 on an axis kept at its size: rounded up, that axis shifts by one.
      const std::string up = nearest;
      const bool shifts = std::string(transform) == "tf_half_pixel_for_nn" && up.find("ceil") != std::string::npos;
      const std::size_t passes = shifts ? 3 : 2;
      ResizeTester().WithMode(Mode("nearest", transform, nearest)).Passes(passes).Test();
      ResizeTester().WithMode(Mode("nearest", transform, nearest)).In({1, 2, 9, 7}).Out({1, 2, 4, 3}).Passes(passes)
          .Test();
    }
  for (const char* mode : {"linear", "cubic"})
    for (const char* transform : {"half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"}) {
      ResizeTester().WithMode(Mode(mode, transform)).Test();
      ResizeTester().WithMode(Mode(mode, transform)).In({1, 3, 9, 7}).Out({1, 3, 4, 5}).Test();
      ResizeTester().WithMode(Mode(mode, transform)).In({1, 1, 1, 5}).Out({1, 1, 1, 1}).Passes(1).Test();
    }
}

TEST_CASE("ResizeSeparable: cubic with exclude_outside and another A, crop and resize with extrapolation",
          "[kernels][resize]") {
  ResizeMode cubic = Mode("cubic", "half_pixel");
  cubic.exclude_outside = true, cubic.cubic_coeff_a = -0.5;
  ResizeTester().WithMode(cubic).Test();
  ResizeTester().WithMode(cubic).In({1, 1, 8, 8}).Out({1, 1, 3, 5}).Test();
  ResizeTester().WithMode(Mode("linear", "tf_crop_and_resize")).Roi(-0.4, 1.2).Test();
  ResizeTester().WithMode(Mode("nearest", "tf_crop_and_resize")).Roi(0.2, 0.6).In({1, 2, 10, 10}).Out({1, 2, 4, 4})
      .Test();
  ResizeMode opset10 = Mode("nearest", "half_pixel");
  opset10.opset = 10;
  ResizeTester().WithMode(opset10).In({1, 2, 8, 6}).Out({1, 2, 3, 13}).Test();
}

TEST_CASE("ResizeSeparable: the batch and channel axes, three passes through two scratch buffers, threads",
          "[kernels][resize]") {
  const ResizeMode linear = Mode("linear", "half_pixel");
  ResizeTester().WithMode(linear).In({2, 3, 4, 5}).Out({3, 3, 4, 5}).Passes(1).Test();
  ResizeTester().WithMode(linear).In({2, 3, 4, 5}).Out({3, 6, 4, 5}).Passes(2).Test();
  ResizeTester().WithMode(linear).In({2, 3, 4, 5}).Out({3, 6, 7, 5}).Passes(3).Test();
  ResizeTester().WithMode(Mode("cubic", "align_corners")).In({2, 3, 4, 5}).Out({1, 5, 7, 9}).Passes(4).Test();
  ResizeTester().WithMode(linear).In({1, 3, 4, 5}).Out({1, 3, 4, 5}).Passes(0).Test();  // a copy
  ResizeTester().WithMode(linear).In({1, 16, 56, 56}).Out({1, 16, 112, 112}).Test();  // rows over threads
}
