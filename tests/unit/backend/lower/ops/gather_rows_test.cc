// Gather of float32 data at run-time indices (src/backend/lower/ops/gather_rows.cc):
// one "gather" step of our own for an embedding lookup (a constant table) and
// for activation data along any axis, negative indices counted from the end,
// an index out of range refused by name; integer data stays a host step.
// Expected values are worked out by hand.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "onnxfuse/error.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::PlanRun;

namespace {

// A [5, 3] table whose row r is {10r, 10r + 1, 10r + 2}.
const std::string kLookup = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int64[2,2] ids, float[5,3] table = {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42}) => (float[2,2,3] y) {
      y = Gather (table, ids)
    })";

}  // namespace

TEST_CASE("an embedding lookup is one gather step: rows of a constant table at run-time ids, negative ids from the end",
          "[gather_rows]") {
  for (bool fuse : {true, false}) {
    PlanRun run = test::RunPlan(test::GraphFromText(kLookup), fuse, {test::IntTensorOf("ids", {2, 2}, {3, 0, -1, 1})});
    INFO(test::StepList(run));
    test::CheckClose(run.outputs[0], {30, 31, 32, 0, 1, 2, 40, 41, 42, 10, 11, 12});
    CHECK(test::StepsStartingWith(run, "gather ") == 1);
    CHECK(test::StepsStartingWith(run, "host ") == 0);
  }
}

TEST_CASE("a gather of activation data along axis 1 at run-time indices copies whole inner rows", "[gather_rows]") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,2] x, int64[2] i) => (float[2,2,2] y) {
      y = Gather <axis = 1> (x, i)
    })";
  std::vector<float> x(12);
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(k);
  for (bool fuse : {true, false}) {
    PlanRun run = test::RunPlan(test::GraphFromText(text), fuse,
                                {test::TensorOf("x", {2, 3, 2}, x), test::IntTensorOf("i", {2}, {2, -3})});
    INFO(test::StepList(run));
    // Batch 0 rows 2 and 0: {4, 5}, {0, 1}; batch 1: {10, 11}, {6, 7}.
    test::CheckClose(run.outputs[0], {4, 5, 0, 1, 10, 11, 6, 7});
    CHECK(test::StepsStartingWith(run, "gather ") == 1);
    CHECK(test::StepsStartingWith(run, "host ") == 0);
  }
}

TEST_CASE("an id past either end of the axis is kInvalidModel naming the node", "[gather_rows]") {
  for (std::int64_t bad : {5, -6}) {
    try {
      test::RunPlan(test::GraphFromText(kLookup), true, {test::IntTensorOf("ids", {2, 2}, {0, 1, bad, 2})});
      FAIL("index " << bad << " was taken");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kInvalidModel);
      CHECK_THAT(e.what(), Catch::Contains("Gather") && Catch::Contains("index out of range"));
    }
  }
}

TEST_CASE("a gather of integer data stays a host step", "[gather_rows]") {
  PlanRun run = test::RunPlan(test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int64[3] i, int64[4] t = {7, 8, 9, 10}) => (int64[3] y) { y = Gather (t, i) })"),
                              true, {test::IntTensorOf("i", {3}, {3, 0, -2})});
  CHECK(run.outputs[0].int_data == std::vector<std::int64_t>{10, 7, 9});
  CHECK(test::StepsStartingWith(run, "host ") == 1);
  CHECK(test::StepsStartingWith(run, "gather ") == 0);
}
