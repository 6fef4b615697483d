// NonMaxSuppression on the host evaluator (src/eval/host_eval_detection.cc)
// against the definition checked pair by pair (every kept box of the class,
// no pruning), on random boxes: small and wide ones, classes offset apart
// as torchvision's batched_nms does, ties, and boxes of no area. ONNX's node
// tests run in conformance.node.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "eval/host_eval.h"
#include "host_node_tests.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

// The selected [batch, class, box] triples by the definition, in float as the
// evaluator computes IoU (corners ordered; no overlap or no area never suppresses).
std::vector<std::int64_t> Naive(const std::vector<float>& boxes, const std::vector<float>& scores, std::int64_t n,
                                std::int64_t classes, std::int64_t max_per_class, float iou, float score_min) {
  auto corner = [&](std::int64_t i, int k) { return boxes[static_cast<std::size_t>(i * 4 + k)]; };
  auto x0 = [&](std::int64_t i) { return std::min(corner(i, 1), corner(i, 3)); };
  auto x1 = [&](std::int64_t i) { return std::max(corner(i, 1), corner(i, 3)); };
  auto y0 = [&](std::int64_t i) { return std::min(corner(i, 0), corner(i, 2)); };
  auto y1 = [&](std::int64_t i) { return std::max(corner(i, 0), corner(i, 2)); };
  auto area = [&](std::int64_t i) { return (x1(i) - x0(i)) * (y1(i) - y0(i)); };
  std::vector<std::int64_t> out;
  for (std::int64_t c = 0; c < classes; ++c) {
    const float* s = scores.data() + c * n;
    std::vector<std::int64_t> order;
    for (std::int64_t i = 0; i < n; ++i)
      if (s[i] > score_min) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return s[a] > s[b]; });
    std::vector<std::int64_t> kept;
    for (std::int64_t i : order) {
      if (static_cast<std::int64_t>(kept.size()) >= max_per_class) break;
      bool suppressed = false;
      for (std::int64_t j : kept) {
        const float w = std::min(x1(j), x1(i)) - std::max(x0(j), x0(i));
        const float h = std::min(y1(j), y1(i)) - std::max(y0(j), y0(i));
        const float inter = w * h, uni = area(j) + area(i) - inter;
        suppressed |= w > 0 && h > 0 && inter > 0 && area(j) > 0 && area(i) > 0 && uni > 0 && inter / uni > iou;
      }
      if (suppressed) continue;
      kept.push_back(i);
      out.insert(out.end(), {0, c, i});
    }
  }
  return out;
}

}  // namespace

TEST_CASE("NonMaxSuppression keeps what the pairwise definition keeps, on random boxes", "[host_eval]") {
  std::mt19937 rng(71291181);
  for (int round = 0; round < 12; ++round) {
    const std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 600), classes = 1 + static_cast<std::int64_t>(rng() % 4);
    const bool offset = round % 2 == 1;  // classes' boxes moved apart, as batched_nms does
    std::uniform_real_distribution<float> pos(0.f, 320.f), size(0.f, round % 3 == 0 ? 300.f : 40.f), u(0.f, 1.f);
    std::vector<float> boxes, scores;
    for (std::int64_t i = 0; i < n; ++i) {
      const float x = pos(rng) + (offset ? 400.f * static_cast<float>(i % 7) : 0.f), y = pos(rng);
      const float w = i % 50 == 0 ? 0.f : size(rng), h = size(rng);
      if (i % 2 == 0) boxes.insert(boxes.end(), {y, x, y + h, x + w});
      else boxes.insert(boxes.end(), {y + h, x + w, y, x});  // the other diagonal
    }
    for (std::int64_t k = 0; k < classes * n; ++k) scores.push_back(std::round(u(rng) * 50.f) / 50.f);  // ties
    const std::int64_t max_per_class = round % 4 == 0 ? 1000 : 25;
    const float iou = round % 3 == 0 ? 0.3f : 0.6f, score_min = 0.2f;
    const Tensor b = test::TensorOf("", {1, n, 4}, boxes), s = test::TensorOf("", {1, classes, n}, scores);
    const Tensor most = test::IntTensorOf("", {1}, {max_per_class});
    const Tensor thr = test::TensorOf("", {1}, {iou}), min = test::TensorOf("", {1}, {score_min});
    const auto got = eval::EvalOnHost(test::NodeOf("NonMaxSuppression"), {&b, &s, &most, &thr, &min}, 11);
    INFO("round " << round << ": " << n << " boxes, " << classes << " classes");
    CHECK(got.at(0).int_data == Naive(boxes, scores, n, classes, max_per_class, iou, score_min));
  }
}
