// session/primitive_cache.h: a session bounds oneDNN's process-wide primitive
// cache unless the user chose its size. Each case runs in its own process
// (catch_discover_tests), so the process-wide setting starts at oneDNN's default.
#include <catch2/catch.hpp>

#include <cstdlib>

#include <dnnl.hpp>

#include "onnxfuse/session.h"
#include "session/primitive_cache.h"
#include "session_cases.h"
#include "temp_dir.h"
#include "test_models.h"

namespace onnxfuse {
namespace {

TEST_CASE("primitive cache: a session bounds oneDNN's primitive cache", "[session]") {
  unsetenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY");
  dnnl::set_primitive_cache_capacity(1024);
  test::TempDir dir("primitive_cache");
  InferenceSession session(test::WriteModel(dir, test::kBatchModel));
  CHECK(dnnl::get_primitive_cache_capacity() == session::kPrimitiveCacheCapacity);
}

TEST_CASE("primitive cache: ONEDNN_PRIMITIVE_CACHE_CAPACITY and a smaller capacity are kept", "[session]") {
  SECTION("the variable set") {
    setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "1024", 1);
    dnnl::set_primitive_cache_capacity(1024);
    session::BoundPrimitiveCache();
    CHECK(dnnl::get_primitive_cache_capacity() == 1024);
    unsetenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY");
  }
  SECTION("a capacity below the bound") {
    unsetenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY");
    dnnl::set_primitive_cache_capacity(16);
    session::BoundPrimitiveCache();
    CHECK(dnnl::get_primitive_cache_capacity() == 16);
  }
}

}  // namespace
}  // namespace onnxfuse
