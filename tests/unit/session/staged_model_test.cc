// Shapes that follow values (src/session/staged_model.h), through
// InferenceSession: each op whose output shape depends on tensor elements
// given at run time, a compiled stage after it, an If whose branches give
// different shapes, a Loop with a run-time trip count, a Scan of a run-time
// length, the stage cache,
// and both forms of Run. Expected values are worked out by hand from ONNX
// Operators.md.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "onnxfuse/error.h"
#include "onnxfuse/fuse.h"
#include "onnxfuse/session.h"
#include "session_cases.h"
#include "temp_dir.h"

namespace onnxfuse {
namespace {

using test::WriteModel;

TensorView Floats(const std::vector<float>& v, std::vector<std::int64_t> dims) {
  return {ElementType::kFloat, std::move(dims), v.data()};
}
TensorView Ints(const std::vector<std::int64_t>& v, std::vector<std::int64_t> dims) {
  return {ElementType::kInt64, std::move(dims), v.data()};
}

using test::kNonZeroModel;

TEST_CASE("staged: NonZero of an input, then a compiled stage at the count it found", "[session][staged]") {
  test::TempDir dir("staged");
  InferenceSession session(WriteModel(dir, kNonZeroModel));
  const std::vector<float> x = {1.5f, -1, 0, 3, -2, 0.25f};
  std::vector<Tensor> out = session.Run({{"x", Floats(x, {6})}});
  REQUIRE(out.size() == 2);
  CHECK(out[0].dims == std::vector<std::int64_t>{3});
  CHECK(out[0].data == std::vector<float>{3, 6, 0.5f});
  CHECK(out[1].dims == std::vector<std::int64_t>{1, 3});
  CHECK(out[1].int_data == std::vector<std::int64_t>{0, 3, 5});
  // Another count at the same input shape; then none at all: empty outputs of the right rank.
  const std::vector<float> x2 = {1, 1, 1, 1, 1, -1};
  CHECK(session.Run({{"x", Floats(x2, {6})}})[0].dims == std::vector<std::int64_t>{5});
  const std::vector<float> none = {-1, -2, 0};
  out = session.Run({{"x", Floats(none, {3})}});
  CHECK(out[0].dims == std::vector<std::int64_t>{0});
  CHECK(out[1].dims == std::vector<std::int64_t>{1, 0});
  const SessionStats stats = session.stats();
  CHECK(stats.staged_runs == 3);
  CHECK(stats.compiles == 0);  // no one schedule serves this model
  CHECK(stats.nodes_evaluated >= 3);  // a NonZero per run
}

TEST_CASE("staged: a repeated call finds its stages in the cache", "[session][staged]") {
  test::TempDir dir("staged");
  InferenceSession session(WriteModel(dir, kNonZeroModel));
  const std::vector<float> x = {1, -1, 2, -2};
  session.Run({{"x", Floats(x, {4})}});
  const SessionStats first = session.stats();
  CHECK(first.stages_compiled >= 2);  // before the NonZero, and after it at its count
  session.Run({{"x", Floats(x, {4})}});
  const SessionStats second = session.stats();
  CHECK(second.stages_compiled == first.stages_compiled);
  CHECK(second.stage_hits == first.stage_hits + first.stages_compiled);
}

// TopK whose K is an input; Range whose limit is one; Reshape, Expand, Tile
// and ConstantOfShape to shapes given as inputs.
const char* const kComputedShapes = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N] x, int64[1] k, int64 n, int64[2] shape, int64[2] reps) =>
  (float[K] top, int64[K] where, float[M] ramp, float[A, B] grid, float[C, D] tiled, float[A, B] filled) {
  top, where = TopK <axis = 0, largest = 1, sorted = 1> (x, k)
  zero = Constant <value = int64 {0}> ()
  one = Constant <value = int64 {1}> ()
  r = Range(zero, n, one)
  rf = Cast <to = 1> (r)
  half = Constant <value = float {0.5}> ()
  ramp = Mul(rf, half)
  grid = Reshape(x, shape)
  tiled = Tile(grid, reps)
  filled = ConstantOfShape <value = float[1] {7}> (shape)
}
)";

TEST_CASE("staged: TopK, Range, Reshape, Tile and ConstantOfShape at sizes given as inputs", "[session][staged]") {
  test::TempDir dir("staged");
  InferenceSession session(WriteModel(dir, kComputedShapes));
  const std::vector<float> x = {4, 1, 9, 7, 3, 8};
  for (std::int64_t k : {1, 4}) {
    const std::vector<std::int64_t> kk = {k}, n = {5}, shape = {2, 3}, reps = {2, 1};
    const std::vector<Tensor> out = session.Run({{"x", Floats(x, {6})},
                                                 {"k", Ints(kk, {1})},
                                                 {"n", Ints(n, {})},
                                                 {"shape", Ints(shape, {2})},
                                                 {"reps", Ints(reps, {2})}});
    const std::vector<float> top = {9, 8, 7, 4};
    const std::vector<std::int64_t> where = {2, 5, 3, 0};
    CHECK(out[0].data == std::vector<float>(top.begin(), top.begin() + k));
    CHECK(out[1].int_data == std::vector<std::int64_t>(where.begin(), where.begin() + k));
    CHECK(out[2].data == std::vector<float>{0, 0.5f, 1, 1.5f, 2});
    CHECK(out[3].dims == std::vector<std::int64_t>{2, 3});
    CHECK(out[3].data == x);
    CHECK(out[4].dims == std::vector<std::int64_t>{4, 3});
    CHECK(out[4].data == std::vector<float>{4, 1, 9, 7, 3, 8, 4, 1, 9, 7, 3, 8});
    CHECK(out[5].data == std::vector<float>(6, 7.0f));
  }
  // Another grid shape: [3, 2], tiled [1, 3].
  const std::vector<std::int64_t> kk = {2}, n = {0}, shape = {3, 2}, reps = {1, 3};
  const std::vector<Tensor> out = session.Run({{"x", Floats(x, {6})},
                                               {"k", Ints(kk, {1})},
                                               {"n", Ints(n, {})},
                                               {"shape", Ints(shape, {2})},
                                               {"reps", Ints(reps, {2})}});
  CHECK(out[2].dims == std::vector<std::int64_t>{0});
  CHECK(out[4].dims == std::vector<std::int64_t>{3, 6});
  CHECK(out[4].data == std::vector<float>{4, 1, 4, 1, 4, 1, 9, 7, 9, 7, 9, 7, 3, 8, 3, 8, 3, 8});
}

// An audio front end's switch on its sample rate: at 16 kHz the signal is
// used as it is, otherwise it is doubled in length; the branches read the
// outer x, and give outputs of different shapes.
const char* const kRateSwitch = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, T] x, int64[1] rate) => (float[1, L] y) {
  native = Constant <value = int64[1] {16000}> ()
  same = Equal(rate, native)
  c = Squeeze(same)
  y = If (c) <
    then_branch = then_g () => (float[1, T] t) { t = Relu(x) },
    else_branch = else_g () => (float[1, U] e) { e = Concat <axis = 1> (x, x) }
  >
}
)";

TEST_CASE("staged: an If on an input's value whose branches give different shapes", "[session][staged]") {
  test::TempDir dir("staged");
  InferenceSession session(WriteModel(dir, kRateSwitch));
  const std::vector<float> x = {1, -2, 3};
  const std::vector<std::int64_t> native = {16000}, other = {8000};
  std::vector<Tensor> y = session.Run({{"x", Floats(x, {1, 3})}, {"rate", Ints(native, {1})}});
  CHECK(y[0].dims == std::vector<std::int64_t>{1, 3});
  CHECK(y[0].data == std::vector<float>{1, 0, 3});
  y = session.Run({{"x", Floats(x, {1, 3})}, {"rate", Ints(other, {1})}});
  CHECK(y[0].dims == std::vector<std::int64_t>{1, 6});
  CHECK(y[0].data == std::vector<float>{1, -2, 3, 1, -2, 3});
  CHECK(session.stats().staged_runs == 2);
}

TEST_CASE("staged: a session on the plan file of such a model runs it in stages as on the model",
          "[session][staged][plan_file]") {
  test::TempDir dir("staged");
  FuseOptions fuse;
  fuse.output_path = (dir.path / "nz.plan").string();
  Fuse(WriteModel(dir, kNonZeroModel), fuse);
  InferenceSession session(fuse.output_path);
  REQUIRE(session.inputs().size() == 1);
  CHECK(session.inputs()[0].name == "x");
  const std::vector<float> x = {1.5f, -1, 0, 3, -2, 0.25f};
  std::vector<Tensor> out = session.Run({{"x", Floats(x, {6})}});
  CHECK(out[0].data == std::vector<float>{3, 6, 0.5f});
  CHECK(out[1].int_data == std::vector<std::int64_t>{0, 3, 5});
  const std::vector<float> none = {-1, -2, 0};
  out = session.Run({{"x", Floats(none, {3})}});
  CHECK(out[0].dims == std::vector<std::int64_t>{0});
  CHECK(session.stats().staged_runs == 2);
}

// A Loop of n iterations (an input): acc += x each time, and the running
// sum of each iteration as a scan output.
const char* const kLoop = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (int64 n, float[2] x) => (float[2] total, float[K, 2] sums) {
  keep = Constant <value = bool {1}> ()
  start = Constant <value = float[2] {0, 0}> ()
  total, sums = Loop (n, keep, start) <
    body = body_g (int64 i, bool c, float[2] acc) => (bool c_out, float[2] next, float[2] seen) {
      c_out = Identity(c)
      next = Add(acc, x)
      seen = Identity(next)
    }
  >
}
)";

TEST_CASE("staged: a Loop with a run-time trip count, its scan output stacked", "[session][staged]") {
  test::TempDir dir("staged");
  InferenceSession session(WriteModel(dir, kLoop));
  const std::vector<float> x = {1, 0.5f};
  for (std::int64_t n : {3, 0}) {
    const std::vector<std::int64_t> count = {n};
    const std::vector<Tensor> out = session.Run({{"n", Ints(count, {})}, {"x", Floats(x, {2})}});
    CHECK(out[0].data == std::vector<float>{static_cast<float>(n), 0.5f * static_cast<float>(n)});
    CHECK(out[1].dims == std::vector<std::int64_t>{n, 2});
    if (n == 3) CHECK(out[1].data == std::vector<float>{1, 0.5f, 2, 1, 3, 1.5f});
  }
}

// A Scan over a length that follows values (the first `n` columns of a and
// b): two scan inputs along axis 1, the second read in reverse, and two scan
// outputs, the second stacked along the last axis in reverse (ONNX
// Operators.md, Scan-16).
const char* const kScan = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 4] a4, float[2, 4] b4, int64[1] n) => (float[2] total, float[L, 2] sums, float[2, L] seen) {
  zero = Constant <value = int64[1] {0}> ()
  one = Constant <value = int64[1] {1}> ()
  a = Slice(a4, zero, n, one)
  b = Slice(b4, zero, n, one)
  start = Constant <value = float[2] {0, 0}> ()
  total, sums, seen = Scan (start, a, b) <
    num_scan_inputs = 2, scan_input_axes = [1, -1], scan_input_directions = [0, 1],
    scan_output_axes = [0, -1], scan_output_directions = [0, 1],
    body = body_g (float[2] s, float[2] ai, float[2] bi) => (float[2] next, float[2] sum, float[2] a_out) {
      p = Mul(ai, bi)
      next = Add(s, p)
      sum = Identity(next)
      a_out = Identity(ai)
    }
  >
}
)";

TEST_CASE("staged: a Scan of a run-time length, axes and directions as ONNX defines them", "[session][staged]") {
  test::TempDir dir("staged");
  InferenceSession session(WriteModel(dir, kScan));
  const std::vector<float> a = {1, 2, 3, -1, 4, 5, 6, -1}, b = {1, 10, 100, -1, 0, 1, 0, -1};
  const std::vector<std::int64_t> three = {3}, none = {0};
  std::vector<Tensor> out = session.Run({{"a4", Floats(a, {2, 4})}, {"b4", Floats(b, {2, 4})}, {"n", Ints(three, {1})}});
  REQUIRE(out.size() == 3);
  // b's columns in reverse: [100, 0], [10, 1], [1, 0] against a's [1, 4], [2, 5], [3, 6].
  CHECK(out[0].data == std::vector<float>{123, 5});
  CHECK(out[1].dims == std::vector<std::int64_t>{3, 2});
  CHECK(out[1].data == std::vector<float>{100, 0, 120, 5, 123, 5});
  CHECK(out[2].dims == std::vector<std::int64_t>{2, 3});
  CHECK(out[2].data == std::vector<float>{3, 2, 1, 6, 5, 4});
  // No iteration: the state as it came, empty scan outputs with 0 on their axes.
  out = session.Run({{"a4", Floats(a, {2, 4})}, {"b4", Floats(b, {2, 4})}, {"n", Ints(none, {1})}});
  CHECK(out[0].data == std::vector<float>{0, 0});
  CHECK(out[1].dims == std::vector<std::int64_t>{0, 2});
  CHECK(out[2].dims == std::vector<std::int64_t>{2, 0});
  CHECK(session.stats().staged_runs == 2);
}

// ONNX Operators.md's NonMaxSuppression example "suppress_by_IOU_and_scores"
// with the boxes and scores as inputs, then the selected boxes gathered.
const char* const kNms = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 6, 4] boxes, float[1, 1, 6] scores) => (int64[S, 3] selected, float[S, 4] kept) {
  most = Constant <value = int64[1] {3}> ()
  iou = Constant <value = float[1] {0.5}> ()
  least = Constant <value = float[1] {0.4}> ()
  selected = NonMaxSuppression <center_point_box = 0> (boxes, scores, most, iou, least)
  two = Constant <value = int64[1] {2}> ()
  one = Constant <value = int64[1] {1}> ()
  three = Constant <value = int64[1] {3}> ()
  box_index = Slice(selected, two, three, one)
  zero = Constant <value = int64[1] {0}> ()
  flat = Squeeze(box_index, one)
  boxes2 = Squeeze(boxes, zero)
  kept = Gather <axis = 0> (boxes2, flat)
}
)";

TEST_CASE("staged: NonMaxSuppression at run time, then the kept boxes gathered", "[session][staged]") {
  test::TempDir dir("staged");
  InferenceSession session(WriteModel(dir, kNms));
  const std::vector<float> boxes = {0.0f, 0.0f,  1.0f, 1.0f,  0.0f, 0.1f,   1.0f, 1.1f,   0.0f, -0.1f,  1.0f, 0.9f,
                                    0.0f, 10.0f, 1.0f, 11.0f, 0.0f, 10.1f, 1.0f, 11.1f, 0.0f, 100.0f, 1.0f, 101.0f};
  const std::vector<float> scores = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};
  const std::vector<Tensor> out =
      session.Run({{"boxes", Floats(boxes, {1, 6, 4})}, {"scores", Floats(scores, {1, 1, 6})}});
  CHECK(out[0].dims == std::vector<std::int64_t>{2, 3});
  CHECK(out[0].int_data == std::vector<std::int64_t>{0, 0, 3, 0, 0, 0});
  CHECK(out[1].data == std::vector<float>{0, 10, 1, 11, 0, 0, 1, 1});
}

TEST_CASE("staged: Run into caller buffers checks the shape the run computed", "[session][staged]") {
  test::TempDir dir("staged");
  InferenceSession session(WriteModel(dir, kNonZeroModel));
  const std::vector<float> x = {1, -1, 2};
  std::vector<float> y(2);
  session.Run({{"x", Floats(x, {3})}}, {{"y", MutableTensorView{ElementType::kFloat, {2}, y.data()}}});
  CHECK(y == std::vector<float>{2, 4});
  std::vector<float> wrong(3);
  CHECK_THROWS_AS(
      session.Run({{"x", Floats(x, {3})}}, {{"y", MutableTensorView{ElementType::kFloat, {3}, wrong.data()}}}),
      Error);
  CHECK(wrong == std::vector<float>(3, 0.0f));  // nothing written
  CHECK_THROWS_AS(session.PlanStatsFor({{"x", {3}}}), Error);  // no one schedule
}

}  // namespace
}  // namespace onnxfuse
