// The CLI's run job (src/app/run_job.cc): a model timed, fused checked
// against unfused, one JSON line, outputs written, a per-step profile; and
// Summarize's order statistics.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/run_job.h"
#include "backend/plan/plan_file.h"
#include "pipeline/pipeline.h"
#include "backend/lower/core/lowered_ops.h"
#include "backend/runtime/executor.h"
#include "ir/tensor_io.h"
#include "session_cases.h"
#include "temp_dir.h"
#include "test_models.h"

using namespace onnxfuse;

TEST_CASE("RunJob times a model, checks fused against unfused and prints one JSON line", "[executor][run_job]") {
  auto dir = std::filesystem::temp_directory_path() / "onnxfuse_run_job_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  onnx::ModelProto model = test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x, float[2,1,2,2] w = {0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0}) => (float[1,2,3,3] y) {
      c = Conv (x, w)
      y = Relu (c)
    })");
  std::string path = (dir / "m.onnx").string();
  {
    std::ofstream out(path, std::ios::binary);
    model.SerializeToOstream(&out);
  }
  RunOptions options;
  options.model_path = path;
  options.iterations = 3, options.warmup = 1, options.threads = 1;
  options.check = options.json = true;
  options.outputs_dir = (dir / "out").string();
  std::ostringstream out;
  CHECK(RunJob(options, out) == 0);
  auto j = nlohmann::json::parse(out.str());
  for (const char* key : {"median_ms", "min_ms", "p90_ms", "max_ms", "iterations", "threads", "fused", "kernels",
                          "reorders", "peak_activation_bytes", "intermediate_bytes_total"})
    CHECK(j.contains(key));
  CHECK(j["iterations"] == 3);
  CHECK(j["threads"] == 1);
  CHECK(j["kernels"].get<int>() - j["reorders"].get<int>() == 1);
  CHECK(j["check"]["ok"] == true);
  auto written = ReadTensorDir(options.outputs_dir, "output");
  REQUIRE(written.size() == 1);
  CHECK(written[0].dims == std::vector<std::int64_t>{1, 2, 3, 3});

  // --profile: each step's mean time, in schedule order, and the time per kind.
  options.check = false, options.profile = true;
  std::ostringstream profiled;
  CHECK(RunJob(options, profiled) == 0);
  auto p = nlohmann::json::parse(profiled.str())["profile"];
  REQUIRE(p["steps"].size() == static_cast<std::size_t>(j["kernels"].get<int>()));
  double steps_ms = 0;
  int convs = 0;
  double flops = 0;
  for (const auto& step : p["steps"]) {
    CHECK(step["ms"].get<double>() > 0);
    steps_ms += step["ms"].get<double>();
    flops += step["flops"].get<double>();
    if (step["kind"] == "conv" && step["label"] == "Conv_0+Relu") {
      ++convs;
      // 18 outputs, each 4 multiply-adds; x, w and y read or written at least once.
      CHECK(step["flops"].get<double>() == 2 * 18 * 4);
      CHECK(step["bytes"].get<double>() >= (16 + 8 + 18) * 4);
      CHECK(step["bound_ms"].get<double>() > 0);
    }
  }
  CHECK(convs == 1);
  // The roofline: the ceilings measured now, and the plan's bound under them.
  const auto& roofline = p["roofline"];
  CHECK(roofline["threads"] == 1);
  CHECK(roofline["peak_gflops"].get<double>() > 1);
  CHECK(roofline["bandwidth_gbps"].get<double>() > 0.1);
  CHECK(roofline["flops"].get<double>() == Approx(flops));
  CHECK(roofline["compute_ms"].get<double>() ==
        Approx(flops / roofline["peak_gflops"].get<double>() / 1e6));
  CHECK(roofline["bound_ms"].get<double>() >=
        std::max(roofline["compute_ms"].get<double>(), roofline["memory_ms"].get<double>()) * 0.999);
  CHECK(nlohmann::json::parse(profiled.str())["flops"].get<double>() == Approx(flops));
  double kinds_ms = 0;
  for (const auto& [kind, ms] : p["kinds"].items()) kinds_ms += ms.get<double>();
  CHECK(kinds_ms == Approx(steps_ms));

  // element_types: how each type of the graph's values is held; the typed
  // outputs written in their own types.
  CHECK(j["element_types"]["FLOAT"]["computed_as"] == "as float32");
  onnx::ModelProto typed = test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x, int32[3] k) => (bool[3] m, int32[3] y) {
      c = Cast <to = 6> (x)
      y = Add (c, k)
      f = Cast <to = 1> (c)
      m = Greater (x, f)
    })");
  {
    std::ofstream typed_out(path, std::ios::binary);
    typed.SerializeToOstream(&typed_out);
  }
  options.check = true, options.profile = false;
  std::ostringstream typed_json;
  CHECK(RunJob(options, typed_json) == 0);
  auto t = nlohmann::json::parse(typed_json.str());
  CHECK(t["element_types"]["INT32"]["values"] == 3);
  CHECK(t["element_types"]["INT32"]["computed_as"] == "as int64, on host steps, wrapped to the type's width");
  CHECK(t["element_types"]["BOOL"]["computed_as"] == "as int64 0/1, on host steps");
  CHECK(t["check"]["ok"] == true);
  onnx::TensorProto mask;
  {
    std::ifstream in((std::filesystem::path(options.outputs_dir) / "output_0.pb").string(), std::ios::binary);
    REQUIRE(mask.ParseFromIstream(&in));
  }
  CHECK(mask.data_type() == onnx::TensorProto::BOOL);
  CHECK(mask.raw_data().size() == 3);  // one byte an element
  CHECK(ReadTensorDir(options.outputs_dir, "output")[1].DataType() == onnx::TensorProto::INT32);

  RunStats s = Summarize({5, 1, 4, 2, 3});
  CHECK(s.min_ms == 1);
  CHECK(s.median_ms == 3);
  CHECK(s.p90_ms == 5);
  CHECK(s.max_ms == 5);
  std::filesystem::remove_all(dir);
}

TEST_CASE("RunJob runs a model with a Scan, a Loop and an If, decided at build time or at run time", "[executor][run_job][control_flow]") {
  // x [2,3]. The Scan sums x's columns from the last one (sums prepends, so
  // its column j is the sum of columns j..2); the Loop takes v_{i+1} = v_i *
  // 0.5 + i from total, stacking v_1..v_4; the If squares y. Reference: the
  // same recurrences in double.
  test::TempDir dir("run_job_control_flow");
  auto file = [&](const std::string& name) { return (dir.path / name).string(); };
  // The If's condition: x.shape[0] > 1 (N pinned: decided at build time), or
  // sum(x) > 100 with x static (decided at run time: both branches and a Where).
  const std::string by_shape = R"(
      shape = Shape (x)
      k = Constant <value = int64 {0}> ()
      n = Gather <axis = 0> (shape, k)
      one = Constant <value = int64 {1}> ()
      c = Greater (n, one))";
  const std::string by_data = R"(
      sum = ReduceSum <keepdims = 0> (x)
      low = Constant <value = float {100.0}> ()
      c = Greater (sum, low))";
  auto model_text = [](const std::string& x_type, const std::string& cond) {
    return R"(<ir_version: 8, opset_import: ["" : 13]>
    g ()" + x_type + R"( x) => (float[2] total, float[2,3] sums, float[4,2] s, float[2] z) {
      zero = Constant <value = float[2] {0.25, -0.5}> ()
      total, sums = Scan (zero, x) <num_scan_inputs = 1, scan_input_axes = [1], scan_input_directions = [1],
                                    scan_output_axes = [-1], scan_output_directions = [1],
                                    body = scan_g (float[2] acc, float[2] col) => (float[2] acc_out, float[2] seen) {
        acc_out = Add (acc, col)
        seen = Identity (acc_out)
      }>
      m = Constant <value = int64 {4}> ()
      half = Constant <value = float {0.5}> ()
      y, s = Loop (m, , total) <body = loop_g (int64 i, bool ci, float[2] v) => (bool co, float[2] vo, float[2] so) {
        co = Identity (ci)
        f = Cast <to = 1> (i)
        h = Mul (v, half)
        vo = Add (h, f)
        so = Identity (vo)
      }>)" + cond + R"(
      z = If (c) <then_branch = then_g () => (float[2] sq) { sq = Mul (y, y) },
                  else_branch = else_g () => (float[2] ng) { ng = Neg (y) }>
    })";
  };
  onnx::ModelProto model = test::ParseModel(model_text("float[N,3]", by_shape));
  const std::string path = file("m.onnx");
  {
    std::ofstream out(path, std::ios::binary);
    model.SerializeToOstream(&out);
  }
  const Tensor x = test::TensorOf("x", {2, 3}, {1.5f, -2.0f, 0.75f, 4.0f, 0.125f, -1.0f});
  WriteTensorDir(file("in"), {x}, "input");
  RunOptions options;
  options.model_path = path;
  options.input_shapes["x"] = {2, 3};
  options.inputs_dir = file("in");
  options.outputs_dir = file("out");
  options.iterations = 1, options.warmup = 0, options.threads = 1;
  options.check = options.json = true;
  std::ostringstream out;
  REQUIRE(RunJob(options, out) == 0);
  CHECK(nlohmann::json::parse(out.str())["check"]["ok"] == true);

  std::vector<double> acc = {0.25, -0.5}, sums(6), stacked;
  for (int t = 0; t < 3; ++t)
    for (int r = 0; r < 2; ++r) {
      const auto at = static_cast<std::size_t>(r * 3 + 2 - t);
      sums[at] = acc[static_cast<std::size_t>(r)] += x.data[at];
    }
  std::vector<double> v = acc;
  for (int i = 0; i < 4; ++i)
    for (double& e : v) stacked.push_back(e = e * 0.5 + i);
  const std::vector<std::vector<double>> expected = {acc, sums, stacked, {v[0] * v[0], v[1] * v[1]}};
  auto written = ReadTensorDir(options.outputs_dir, "output");
  REQUIRE(written.size() == expected.size());
  for (std::size_t o = 0; o < expected.size(); ++o) {
    INFO("output " << o);
    REQUIRE(written[o].data.size() == expected[o].size());
    for (std::size_t i = 0; i < expected[o].size(); ++i) CHECK(written[o].data[i] == Approx(expected[o][i]).epsilon(1e-6));
  }
  CHECK(written[1].dims == std::vector<std::int64_t>{2, 3});
  CHECK(written[2].dims == std::vector<std::int64_t>{4, 2});

  // The If decided at run time: both branches run and a Where selects -y (sum(x) is 3.375).
  {
    std::ofstream model_file(path, std::ios::binary | std::ios::trunc);
    test::ParseModel(model_text("float[2,3]", by_data)).SerializeToOstream(&model_file);
  }
  options.input_shapes.clear();
  options.outputs_dir = file("out_run_time_if");
  std::ostringstream again;
  REQUIRE(RunJob(options, again) == 0);
  CHECK(nlohmann::json::parse(again.str())["check"]["ok"] == true);
  auto selected = ReadTensorDir(options.outputs_dir, "output");
  REQUIRE(selected.size() == expected.size());
  for (std::size_t o = 0; o < 3; ++o)
    for (std::size_t i = 0; i < expected[o].size(); ++i) CHECK(selected[o].data[i] == Approx(expected[o][i]).epsilon(1e-6));
  CHECK(selected[3].data[0] == Approx(-v[0]).epsilon(1e-6));
  CHECK(selected[3].data[1] == Approx(-v[1]).epsilon(1e-6));
}

namespace {

// SoftmaxCrossEntropyLoss with reduction "mean" and ignore_index (ONNX
// Operators.md): the mean over the samples whose label is not ignored of
// -log softmax(scores[n])[label[n]], in double.
double SceMeanReference(const Tensor& scores, const Tensor& labels, std::int64_t ignore_index) {
  const std::int64_t n = scores.dims[0], c = scores.dims[1];
  double sum = 0, count = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t label = labels.int_data[static_cast<std::size_t>(i)];
    if (label == ignore_index) continue;
    double max = -1e300, total = 0;
    for (std::int64_t k = 0; k < c; ++k) max = std::max(max, double(scores.data[static_cast<std::size_t>(i * c + k)]));
    for (std::int64_t k = 0; k < c; ++k) total += std::exp(scores.data[static_cast<std::size_t>(i * c + k)] - max);
    sum -= scores.data[static_cast<std::size_t>(i * c + label)] - max - std::log(total);
    count += 1;
  }
  return sum / count;
}

}  // namespace

TEST_CASE("RunJob and plan files run a function op the backend does not lower as its ONNX body",
          "[executor][run_job]") {
  auto dir = std::filesystem::temp_directory_path() / "onnxfuse_run_job_sce_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // SoftmaxCrossEntropyLoss: its body calls NegativeLogLikelihoodLoss, expanded in turn.
  onnx::ModelProto model = test::ParseModel(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4,5] scores, int64[4] labels) => (float loss) {
      loss = SoftmaxCrossEntropyLoss <reduction = "mean", ignore_index = 3> (scores, labels)
    })");
  const std::string path = (dir / "sce.onnx").string();
  {
    std::ofstream out(path, std::ios::binary);
    model.SerializeToOstream(&out);
  }
  Tensor scores, labels;
  scores.name = "scores", scores.dims = {4, 5};
  for (int k = 0; k < 20; ++k) scores.data.push_back(0.37f * static_cast<float>((k * 7) % 11) - 1.5f);
  labels.name = "labels", labels.dims = {4}, labels.elem_type = onnx::TensorProto::INT64;
  labels.int_data = {1, 3, 4, 0};  // the second is ignored
  const std::string inputs_dir = (dir / "in").string();
  WriteTensorDir(inputs_dir, {scores, labels}, "input");
  const double want = SceMeanReference(scores, labels, 3);

  FuseJob job;
  job.input_path = path;
  job.output_path = (dir / "sce.plan").string();
  const nlohmann::json report = RunFuseJob(job, WritePlanFileForJob, backend::LowersOp);
  REQUIRE(report["expanded_functions"].size() == 2);
  CHECK(report["expanded_functions"][0]["op_type"] == "SoftmaxCrossEntropyLoss");
  CHECK(report["expanded_functions"][1]["op_type"] == "NegativeLogLikelihoodLoss");
  for (const std::string& model_path : {path, job.output_path}) {
    CAPTURE(model_path);
    RunOptions options;
    options.model_path = model_path;
    options.inputs_dir = inputs_dir;
    options.iterations = 1, options.warmup = 0, options.threads = 1;
    options.check = options.json = true;
    options.outputs_dir = (dir / ("out_" + std::filesystem::path(model_path).extension().string().substr(1))).string();
    std::ostringstream out;
    REQUIRE(RunJob(options, out) == 0);
    CHECK(nlohmann::json::parse(out.str())["check"]["ok"] == true);
    auto written = ReadTensorDir(options.outputs_dir, "output");
    REQUIRE(written.size() == 1);
    REQUIRE(written[0].data.size() == 1);
    CHECK(written[0].data[0] == Approx(want).epsilon(1e-5));  // float32 log-softmax and sums
  }
}

TEST_CASE("a plan file of a model whose shapes follow values stores no schedule, and run runs it in stages",
          "[executor][run_job][plan_file]") {
  test::TempDir dir("run_job_staged_plan");
  const std::string path = test::WriteModel(dir, test::kNonZeroModel, "nz.onnx");
  FuseJob job;
  job.input_path = path;
  job.output_path = (dir.path / "nz.plan").string();
  const nlohmann::json report = RunFuseJob(job, WritePlanFileForJob, backend::LowersOp);
  CHECK(report["plan_file"]["staged"] == true);
  CHECK(report["plan_file"]["steps"] == 0);
  const LoadedPlan loaded = ReadPlanFile(job.output_path);
  CHECK(loaded.info.staged);
  CHECK_FALSE(loaded.executable.has_value());
  REQUIRE(loaded.model != nullptr);
  CHECK(loaded.model->num_nodes() > 0);

  WriteTensorDir((dir.path / "in").string(), {test::TensorOf("x", {6}, {1.5f, -1, 0, 3, -2, 0.25f})}, "input");
  RunOptions options;
  options.model_path = job.output_path;
  options.inputs_dir = (dir.path / "in").string();
  options.outputs_dir = (dir.path / "out").string();
  options.iterations = 1, options.warmup = 0, options.threads = 1;
  options.check = options.json = true;
  std::ostringstream out;
  REQUIRE(RunJob(options, out) == 0);
  const nlohmann::json line = nlohmann::json::parse(out.str());
  CHECK(line["check"]["ok"] == true);
  CHECK(line.contains("staged"));
  const auto written = ReadTensorDir(options.outputs_dir, "output");
  REQUIRE(written.size() == 2);
  CHECK(written[0].data == std::vector<float>{3, 6, 0.5f});
  CHECK(written[1].int_data == std::vector<std::int64_t>{0, 3, 5});
}
