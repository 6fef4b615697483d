// A dim that changes every call while the weights' shapes stay (a decoder
// step's KV cache), through InferenceSession: once two signatures show which
// nodes follow that dim, the session runs those on the host evaluator and the
// rest as stages that keep their shapes (session_schedules.cc,
// NodesFollowingChangedDims), so later lengths compile nothing. A dim that
// reaches the weights' products (a sequence length in an encoder) keeps one
// schedule per shape, and so does an image pooled before the weights (the
// host evaluator is for attention's ops, not spatial ones). Expected values
// in double, from ONNX Operators.md.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "onnxfuse/session.h"
#include "session_cases.h"
#include "temp_dir.h"

namespace onnxfuse {
namespace {

constexpr int kD = 80;  // 80 x 80 weights: more elements than the stages copy (ShapeModel::kCopiedElements)

double Weight(int i, int j, int salt) { return std::sin(0.37 * i + 0.11 * j + salt) / kD; }

std::string Initializer(const std::string& name, int salt) {
  std::string text = "float[" + std::to_string(kD) + "," + std::to_string(kD) + "] " + name + " = {";
  for (int i = 0; i < kD; ++i)
    for (int j = 0; j < kD; ++j) {
      std::ostringstream value;  // every digit of the float, so the model holds what Reference uses
      value << std::setprecision(9) << static_cast<float>(Weight(i, j, salt));
      text += (i + j ? ", " : "") + value.str();
    }
  return text + "}";
}

// One attention step: q = x Wq; present = Concat(past, q) along the
// sequence; y = Softmax(q present^T) present Wo.
std::string DecoderStep() {
  return R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 1, 80] x, float[1, P, 80] past) => (float[1, 1, 80] y, float[1, Q, 80] present) <)" +
         Initializer("wq", 1) + ", " + Initializer("wo", 2) + R"(> {
  q = MatMul(x, wq)
  present = Concat <axis = 1> (past, q)
  keys = Transpose <perm = [0, 2, 1]> (present)
  scores = MatMul(q, keys)
  attention = Softmax <axis = -1> (scores)
  mixed = MatMul(attention, present)
  y = MatMul(mixed, wo)
}
)";
}

std::vector<double> Times(const std::vector<double>& row, int salt) {  // row [kD] x W
  std::vector<double> out(kD, 0.0);
  for (int i = 0; i < kD; ++i)
    for (int j = 0; j < kD; ++j) out[static_cast<std::size_t>(j)] += row[static_cast<std::size_t>(i)] * static_cast<float>(Weight(i, j, salt));
  return out;
}

// DecoderStep's y and present in double.
std::pair<std::vector<double>, std::vector<double>> Reference(const std::vector<float>& x, const std::vector<float>& past) {
  const std::vector<double> q = Times(std::vector<double>(x.begin(), x.end()), 1);
  std::vector<double> present(past.begin(), past.end());
  present.insert(present.end(), q.begin(), q.end());
  const std::size_t rows = present.size() / kD;
  std::vector<double> scores(rows, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (int c = 0; c < kD; ++c) scores[r] += q[static_cast<std::size_t>(c)] * present[r * kD + static_cast<std::size_t>(c)];
  double max = scores[0], sum = 0;
  for (double s : scores) max = std::max(max, s);
  for (double& s : scores) sum += (s = std::exp(s - max));
  std::vector<double> mixed(kD, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (int c = 0; c < kD; ++c) mixed[static_cast<std::size_t>(c)] += scores[r] / sum * present[r * kD + static_cast<std::size_t>(c)];
  return {Times(mixed, 2), present};
}

void CheckClose(const std::vector<float>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) CHECK(actual[i] == Approx(expected[i]).margin(1e-6).epsilon(1e-4));
}

TEST_CASE("kv cache: a growing past runs its attention on the host and its stages from the cache",
          "[session][staged]") {
  test::TempDir dir("kv_cache");
  InferenceSession session(test::WriteModel(dir, DecoderStep()));
  std::vector<float> past(3 * kD);
  for (std::size_t i = 0; i < past.size(); ++i) past[i] = static_cast<float>(std::cos(0.3 * static_cast<double>(i)));
  int stages_after_third = 0;
  for (int call = 0; call < 6; ++call) {
    std::vector<float> x(kD);
    for (int i = 0; i < kD; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(std::sin(0.7 * i + call));
    const auto past_rows = static_cast<std::int64_t>(past.size() / kD);
    INFO("call " << call << ", past " << past_rows);
    const std::vector<Tensor> out = session.Run({{"x", {ElementType::kFloat, {1, 1, kD}, x.data()}},
                                                 {"past", {ElementType::kFloat, {1, past_rows, kD}, past.data()}}});
    const auto [y, present] = Reference(x, past);
    REQUIRE(out.size() == 2);
    CHECK(out[1].dims == std::vector<std::int64_t>{1, past_rows + 1, kD});
    CheckClose(out[0].data, y);
    CheckClose(out[1].data, present);
    past = out[1].data;
    const SessionStats stats = session.stats();
    if (call == 0) CHECK(stats.staged_runs == 0);
    if (call == 1) {
      // The second signature, loaded, shows the dim that changes: it runs in
      // stages without a schedule of its own.
      CHECK(stats.compiles == 1);
      CHECK(stats.staged_runs == 1);
    }
    if (call == 2) stages_after_third = stats.stages_compiled;
    if (call > 2) {
      CHECK(stats.compiles == 1);
      CHECK(stats.staged_runs == call);
      CHECK(stats.stages_compiled == stages_after_third);  // a new length compiles nothing
      CHECK(stats.nodes_evaluated >= 5 * call);      // Concat, Transpose, two MatMuls, Softmax per call
    }
  }
}

TEST_CASE("kv cache: a length that reaches the weights' products keeps a schedule per shape", "[session][staged]") {
  test::TempDir dir("kv_cache");
  const std::string encoder = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1, S, 80] x) => (float[1, S, 80] y) <)" + Initializer("wq", 1) + R"(> {
  q = MatMul(x, wq)
  y = Softmax <axis = -1> (q)
}
)";
  InferenceSession session(test::WriteModel(dir, encoder));
  for (std::int64_t length : {2, 3, 4}) {
    const std::vector<float> x(static_cast<std::size_t>(length * kD), 0.5f);
    session.Run({{"x", {ElementType::kFloat, {1, length, kD}, x.data()}}});
  }
  const SessionStats stats = session.stats();
  CHECK(stats.compiles == 3);
  CHECK(stats.staged_runs == 0);
}

TEST_CASE("kv cache: an image of another size, pooled before the weights, keeps a schedule per shape",
          "[session][staged]") {
  // Only the ReduceMean follows H and W, and it reads no weights; but an
  // image is better compiled once per size than pooled on the host each call.
  test::TempDir dir("kv_cache");
  const std::string pooled = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 80, H, W] x) => (float[1, 80] y) <)" + Initializer("wq", 1) + R"(> {
  mean = ReduceMean <axes = [2, 3], keepdims = 0> (x)
  y = MatMul(mean, wq)
}
)";
  InferenceSession session(test::WriteModel(dir, pooled));
  for (std::int64_t side : {4, 5, 6}) {
    const std::vector<float> x(static_cast<std::size_t>(kD * side * side), 0.25f);
    const std::vector<Tensor> out = session.Run({{"x", {ElementType::kFloat, {1, kD, side, side}, x.data()}}});
    std::vector<double> mean(kD, 0.25);
    CheckClose(out[0].data, Times(mean, 1));
  }
  const SessionStats stats = session.stats();
  CHECK(stats.compiles == 3);
  CHECK(stats.staged_runs == 0);
}

}  // namespace
}  // namespace onnxfuse
