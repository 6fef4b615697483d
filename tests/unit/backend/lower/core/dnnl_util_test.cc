// oneDNN helpers (src/backend/lower/core/dnnl_util.h) checked against oneDNN itself.
#include <catch2/catch.hpp>

#include <random>

#include "backend/lower/core/dnnl_util.h"

using namespace onnxfuse::backend;

TEST_CASE("StridesDescribable agrees with oneDNN's memory descriptors", "[dnnl_util]") {
  CHECK_FALSE(StridesDescribable({3, 2}, {3, 2}));  // x[3,3][:, ::2]
  CHECK(StridesDescribable({3, 2}, {4, 2}));
  CHECK(StridesDescribable({3, 1}, {1, 7}));  // a dim of one element never overlaps
  std::mt19937 random(7);
  int describable = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    const std::size_t rank = 1 + random() % 4;
    Dims dims(rank), strides(rank);
    for (std::size_t d = 0; d < rank; ++d) dims[d] = 1 + random() % 4, strides[d] = 1 + random() % 12;
    bool made = true;
    try {
      dnnl::memory::desc md(dims, dnnl::memory::data_type::f32, strides);
    } catch (const dnnl::error&) {
      made = false;
    }
    INFO("dims " << dims.size() << ": " << dims[0] << " stride " << strides[0]);
    CHECK(StridesDescribable(dims, strides) == made);
    describable += made;
  }
  CHECK(describable > 500);  // both answers are exercised
  CHECK(describable < 4500);
}
