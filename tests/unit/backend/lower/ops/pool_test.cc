// Pooling on our own kernels (src/backend/lower/ops/pool.cc): GlobalAveragePool
// and MaxPool in a convolution's layout, with several images, pads, strides,
// ceil_mode and padded channels. Numbers are checked against naive loops in
// double. MaxPool with its Indices read, or on integers, is a host step.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::Floats;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

TEST_CASE("GlobalAveragePool after a Conv runs our own kernel in the Conv's layout: two images, padded channels",
          "[backend_ops]") {
  // A 1x1 Conv of x [2,4,side,side], then GlobalAveragePool, against a double
  // loop. 20 channels at 9x9: blocked, padded to the block (or, reading a
  // channels-last input, channels-last: 20 lanes, not a vector multiple); 81
  // pixels, not a multiple of the four rows summed at once. 64 channels at
  // 32x32: 8 blocks of 1024 pixels, enough for the sums to be split over the
  // OpenMP threads.
  struct Case {
    std::int64_t c, side;
  };
  for (const Case& k : {Case{20, 9}, Case{64, 32}}) {
    const std::int64_t images = 2, cin = 4, c = k.c, side = k.side, pixels = side * side;
    const std::vector<float> w = Floats(static_cast<std::size_t>(c * cin), 0.5f, 11);
    Tensor x = TensorFrom({images, cin, side, side}, Wave);
    const std::vector<double> conv = test::NaivePointwise(x, w, c);
    std::vector<double> y;
    for (std::int64_t plane = 0; plane < images * c; ++plane) {
      double sum = 0;
      for (std::int64_t p = 0; p < pixels; ++p) sum += conv[static_cast<std::size_t>(plane * pixels + p)];
      y.push_back(sum / static_cast<double>(pixels));
    }
    const std::string hw = std::to_string(side) + "," + std::to_string(side), ch = std::to_string(c);
    for (bool channels_last_input : {false, true}) {
      INFO(ch << " channels at " << hw << (channels_last_input ? ", channels-last input" : ", planar input"));
      const Tensor input = channels_last_input ? test::ChannelsLast(x, "xt") : x;
      // Channels-last: x given as [2, side, side, 4], read through a Transpose.
      const std::string read = channels_last_input ? "t = Transpose <perm = [0, 3, 1, 2]> (xt)\n          c = Conv (t, w)"
                                                   : "c = Conv (x, w)";
      const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
        g (float[)" + (channels_last_input ? "2," + hw + ",4] xt" : "2,4," + hw + "] x") + ", float[" + ch +
                               ",4,1,1] w = " + test::FloatList(w) + ") => (float[2," + ch + R"(,1,1] y) {
          )" + read + R"(
          y = GlobalAveragePool (c)
        })";
      PlanRun fused = CheckBoth(text, {input}, y, 1e-5);
      INFO(test::StepList(fused));
      CHECK(test::StepsContaining(fused, "onnxfuse:global_average_pool") == 1);
    }
  }
}

TEST_CASE("MaxPool after a Conv runs our own kernel in the Conv's layout: pads, strides, ceil_mode, padded channels",
          "[backend_ops]") {
  // A 1x1 Conv of x [1,4,9,9] to 20 channels (blocked: padded to the block;
  // or, reading a channels-last input, channels-last: 20 lanes, not a vector
  // multiple), then MaxPool 3x3, strides 2, pads 1, ceil_mode: a 5x5 output
  // whose edge windows are cut by the image. Against a double loop.
  const std::int64_t cin = 4, c = 20, side = 9, out_side = 5;
  const std::vector<float> w = Floats(static_cast<std::size_t>(c * cin), 0.5f, 11);
  Tensor x = TensorFrom({1, cin, side, side}, Wave);
  const std::vector<double> conv = test::NaivePointwise(x, w, c);
  std::vector<double> y;
  for (std::int64_t o = 0; o < c; ++o)
    for (std::int64_t oh = 0; oh < out_side; ++oh)
      for (std::int64_t ow = 0; ow < out_side; ++ow) {
        double m = -INFINITY;
        for (std::int64_t ih = std::max<std::int64_t>(oh * 2 - 1, 0); ih < std::min<std::int64_t>(oh * 2 + 2, side); ++ih)
          for (std::int64_t iw = std::max<std::int64_t>(ow * 2 - 1, 0); iw < std::min<std::int64_t>(ow * 2 + 2, side); ++iw)
            m = std::max(m, conv[static_cast<std::size_t>((o * side + ih) * side + iw)]);
        y.push_back(m);
      }
  for (bool channels_last_input : {false, true}) {
    INFO((channels_last_input ? "channels-last input" : "planar input"));
    const Tensor input = channels_last_input ? test::ChannelsLast(x, "xt") : x;
    // Channels-last: x given as [1, 9, 9, 4], read through a Transpose.
    const std::string read = channels_last_input ? "t = Transpose <perm = [0, 3, 1, 2]> (xt)\n        c = Conv (t, w)"
                                                 : "c = Conv (x, w)";
    const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[)" + std::string(channels_last_input ? "1,9,9,4] xt" : "1,4,9,9] x") + R"(, float[20,4,1,1] w = )" + test::FloatList(w) +
                             R"() => (float[1,20,5,5] y) {
        )" + read + R"(
        y = MaxPool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], ceil_mode = 1> (c)
      })";
    PlanRun fused = CheckBoth(text, {input}, y, 1e-5);
    INFO(test::StepList(fused));
    CHECK(test::StepsContaining(fused, "onnxfuse:max_pool") == 1);
  }
}

TEST_CASE("MaxPool with a used Indices output, or on uint8 data, runs as a host step, unused Indices keep the kernel",
          "[backend_ops]") {
  // 1 9 2 / 3 4 9, a 2 x 2 window, stride 1: maxima 9 and 9, both first found at flat index 1.
  Tensor x = test::TensorOf("x", {1, 1, 2, 3}, {1, 9, 2, 3, 4, 9});
  for (bool fuse : {true, false}) {
    INFO((fuse ? "fused" : "unfused"));
    Graph g = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,1,2,3] x) => (float[1,1,1,2] y, int64[1,1,1,2] i) {
        y, i = MaxPool <kernel_shape = [2, 2]> (x)
      })");
    PlanRun run = test::RunPlan(g, fuse, {x});
    INFO(test::StepList(run));
    CHECK(test::StepsStartingWith(run, "host ") == 1);
    test::CheckClose(run.outputs[0], {9, 9});
    CHECK(run.outputs[1].int_data == std::vector<std::int64_t>{1, 1});

    Tensor u = test::IntTensorOf("u", {1, 1, 1, 3}, {200, 7, 255});
    u.data_type = onnx::TensorProto::UINT8;
    Graph q = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (uint8[1,1,1,3] u) => (uint8[1,1,1,2] y) {
        y = MaxPool <kernel_shape = [1, 2]> (u)
      })");
    run = test::RunPlan(q, fuse, {u});
    CHECK(test::StepsStartingWith(run, "host ") == 1);
    CHECK(run.outputs[0].int_data == std::vector<std::int64_t>{200, 255});
  }
  // Indices produced but read by nobody: the pooling kernel as before.
  PlanRun run = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,2,3] x) => (float[1,1,1,2] z) {
      y, i = MaxPool <kernel_shape = [2, 2]> (x)
      z = Relu (y)
    })",
                          {x}, {9, 9});
  CHECK(test::StepsStartingWith(run, "host ") == 0);
  CHECK(test::StepsStartingWith(run, "pooling ") == 1);
}

TEST_CASE("an AveragePool oneDNN would run on its reference kernel in the layout it chose runs on a jit one",
          "[backend_ops]") {
  // A [1,1,1,9] source, kernel 2x2, pads 1 (found by the differential
  // tester): oneDNN 2.6 chose a destination layout only its reference kernel
  // writes; plain in and out, a jit kernel takes it.
  const Tensor x = TensorFrom({1, 1, 1, 9}, [](std::int64_t i) { return Wave(7 * i); });
  // Windows over rows -1..0 and 0..1 (only row 0 exists) and columns j-1..j:
  // the mean of the columns inside, padding excluded.
  std::vector<double> y;
  for (int row = 0; row < 2; ++row)
    for (int j = 0; j < 10; ++j) {
      double sum = 0;
      int n = 0;
      for (int c = j - 1; c <= j; ++c)
        if (c >= 0 && c < 9) sum += x.data[static_cast<std::size_t>(c)], ++n;
      y.push_back(sum / n);
    }
  const PlanRun fused = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,1,9] x) => (float[1,1,2,10] y) {
      y = AveragePool <kernel_shape = [2, 2], pads = [1, 1, 1, 1]> (x)
    })",
                                  {x}, y, 1e-6);
  INFO(test::StepList(fused));
  CHECK(test::SlowSteps(fused) == 0);
}
