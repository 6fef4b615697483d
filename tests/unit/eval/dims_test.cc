// Dims arithmetic (src/eval/dims.cc): element counts, the printed form,
// ONNX's multidirectional broadcasting (Broadcasting.md) of two shapes, and
// Gather's extents.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "eval/dims.h"

using namespace onnxfuse::eval;

TEST_CASE("Product counts elements: 1 for rank 0, 0 for an empty dim", "[dims]") {
  CHECK(Product({}) == 1);
  CHECK(Product({2, 3, 4}) == 24);
  CHECK(Product({5, 0, 7}) == 0);
  CHECK(DimsString({}) == "[]");
  CHECK(DimsString({2, 3}) == "[2,3]");
}

TEST_CASE("BroadcastDims pads the shorter shape with leading 1s and stretches 1s", "[dims]") {
  CHECK(ExpandRank({3, 4}, 4) == Dims{1, 1, 3, 4});
  CHECK(ExpandRank({2, 3, 4}, 2) == Dims{2, 3, 4});
  CHECK(BroadcastDims({2, 1, 4}, {3, 1}) == Dims{2, 3, 4});
  CHECK(BroadcastDims({}, {5}) == Dims{5});
  CHECK(BroadcastDims({1, 0}, {3, 1}) == Dims{3, 0});
  CHECK_THROWS_AS(BroadcastDims({2, 3}, {4, 3}), std::invalid_argument);
}

TEST_CASE("GatherExtentsOf puts the indices' dims in place of the gathered axis", "[dims]") {
  GatherExtents e = GatherExtentsOf({2, 5, 3, 4}, 1, {6, 7});
  CHECK(e.out == Dims{2, 6, 7, 3, 4});
  CHECK(e.outer == 2);
  CHECK(e.n == 5);
  CHECK(e.inner == 12);
  CHECK(e.count == 42);
  // Scalar indices drop the axis; the last axis has rows of one element.
  GatherExtents last = GatherExtentsOf({3, 8}, 1, {});
  CHECK(last.out == Dims{3});
  CHECK(last.outer == 3);
  CHECK(last.inner == 1);
  CHECK(last.count == 1);
}
