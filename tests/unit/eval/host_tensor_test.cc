#include "eval/host_tensor.h"
#include "eval/dims.h"

#include <catch2/catch.hpp>

#include <limits>
#include <vector>

namespace onnxfuse::eval {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

TEST_CASE("int64 values survive the round trip through doubles, saturating at the ends", "[host_tensor]") {
  // torchvision's anchor generator slices with ends INT64_MAX: through a
  // double it is 2^63, which a plain conversion turns into INT64_MIN.
  CHECK(SaturatingInt64(9223372036854775808.0) == kMax);
  CHECK(SaturatingInt64(-9223372036854775808.0) == kMin);
  CHECK(SaturatingInt64(-3.0) == -3);
  const Tensor ends = MakeHostTensor(true, {2}, {9223372036854775807.0, 5.0});
  CHECK(IsInt64(ends));
  CHECK(ends.int_data == std::vector<std::int64_t>{kMax, 5});
  CHECK(AsInts(ends) == std::vector<std::int64_t>{kMax, 5});
  const Tensor floats = MakeHostTensor(false, {3}, {1.5, -2.0, 1e30});
  CHECK_FALSE(IsInt64(floats));
  CHECK(AsInts(floats) == std::vector<std::int64_t>{1, -2, kMax});
}

TEST_CASE("elements read as doubles whatever the type", "[host_tensor]") {
  const Tensor i = MakeHostTensor(true, {2, 2}, {1, 2, 3, 4});
  const Tensor f = MakeHostTensor(false, {2}, {0.25, -8});
  CHECK(ElementAt(i, 3) == 4.0);
  CHECK(ElementAt(f, 1) == -8.0);
  CHECK(HostValues(i) == std::vector<double>{1, 2, 3, 4});
  CHECK(HostValues(f) == std::vector<double>{0.25, -8});
}

TEST_CASE("dense strides and broadcast indices (ONNX Broadcasting.md)", "[host_tensor]") {
  CHECK(DenseStrides({2, 3, 4}) == std::vector<std::int64_t>{12, 4, 1});
  CHECK(DenseStrides({}).empty());
  // [3] broadcast to [2, 3]: element (r, c) reads c.
  for (std::int64_t k = 0; k < 6; ++k) CHECK(BroadcastIndex(k, {2, 3}, {3}) == k % 3);
  // [2, 1] broadcast to [2, 3]: element (r, c) reads r.
  for (std::int64_t k = 0; k < 6; ++k) CHECK(BroadcastIndex(k, {2, 3}, {2, 1}) == k / 3);
  // A scalar reads its one element everywhere.
  CHECK(BroadcastIndex(5, {2, 3}, {}) == 0);
}

TEST_CASE("broadcast offsets counted like an odometer equal BroadcastIndex at every element", "[host_tensor]") {
  const std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> cases = {
      {{2, 3}, {3}}, {{2, 3}, {2, 1}}, {{2, 3}, {}}, {{4, 3, 5}, {3, 1}}, {{2, 3, 4, 5}, {3, 1, 5}},
      {{2, 3, 4}, {2, 3, 4}}, {{1, 7}, {1, 1}}, {{3, 0, 2}, {2}}};
  for (const auto& [out, in] : cases) {
    INFO(DimsString(out) << " from " << DimsString(in));
    const std::vector<std::int64_t> offsets = BroadcastOffsets(out, in);
    REQUIRE(offsets.size() == static_cast<std::size_t>(Product(out)));
    for (std::size_t i = 0; i < offsets.size(); ++i)
      CHECK(offsets[i] == BroadcastIndex(static_cast<std::int64_t>(i), out, in));
  }
}

}  // namespace
}  // namespace onnxfuse::eval
