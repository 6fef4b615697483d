// Plan files at any input shape (format version 3) through `onnx-fuse run
// --input-shape` and InferenceSession: resnet18 with a symbolic batch, written
// as a plan by the fuse job, gives the .onnx path's outputs at batches 1 and 3
// (run) and 1, 3 and 8 (session), with the fixed export's kernels at batch 1
// and a compile time per shape; a version 2 plan runs at its one shape only.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/run_job.h"
#include "backend/lower/core/lowered_ops.h"
#include "onnxfuse/error.h"
#include "pipeline/pipeline.h"
#include "backend/plan/plan_file.h"
#include "onnxfuse/session.h"
#include "onnxfuse_plan.pb.h"
#include "plan_file_bytes.h"
#include "temp_dir.h"
#include "test_models.h"
#include "plan_check.h"

namespace onnxfuse {
namespace {

const std::string kResnet18 = std::string(ONNXFUSE_MODELS_DIR) + "/resnet18";

// resnet18 with its batch made symbolic ("N" on the input and the output).
std::string SymbolicBatchModel(const test::TempDir& dir) {
  onnx::ModelProto model;
  std::ifstream in(kResnet18 + "/model.onnx", std::ios::binary);
  REQUIRE(model.ParseFromIstream(&in));  // scripts/export_models.py; a missing model fails
  for (onnx::ValueInfoProto* v : {model.mutable_graph()->mutable_input(0), model.mutable_graph()->mutable_output(0)})
    v->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  return dir.Write("resnet18_batch.onnx", model.SerializeAsString());
}

// `onnx-fuse MODEL -o DIR/model.plan --strategy postdom`.
std::string WritePlan(const std::string& model, const test::TempDir& dir) {
  FuseJob job;
  job.input_path = model;
  job.output_path = (dir.path / "model.plan").string();
  job.strategy = Strategy::kPostdom;
  const nlohmann::json report = RunFuseJob(job, WritePlanFileForJob, backend::LowersOp);
  CHECK(report["plan_file"]["input_shapes"] == nlohmann::json({{"input", {1, 3, 224, 224}}}));
  CHECK(report["plan_file"]["compile_ms"].get<double>() > 0);
  return job.output_path;
}

// `n` images: the exported test image scaled by 1 - 0.3 k for image k.
Tensor Batch(std::int64_t n) {
  const Tensor image = ReadTensorFile(kResnet18 + "/test_data_set_0/input_0.pb");
  Tensor batch = image;
  batch.dims[0] = n;
  batch.data.clear();
  for (std::int64_t k = 0; k < n; ++k)
    for (float v : image.data) batch.data.push_back(v * (1.0f - 0.3f * static_cast<float>(k)));
  return batch;
}

struct CliRun {
  nlohmann::json json;
  Tensor output;
};

// `onnx-fuse run MODEL --input-shape input=Nx3x224x224 --inputs ... --outputs ... --json`.
CliRun RunCli(const std::string& model, std::int64_t n, const test::TempDir& dir, const std::string& tag) {
  const std::string inputs = (dir.path / ("in-" + std::to_string(n))).string();
  WriteTensorDir(inputs, {Batch(n)}, "input");
  RunOptions options;
  options.model_path = model;
  options.inputs_dir = inputs;
  options.outputs_dir = (dir.path / (tag + std::to_string(n))).string();
  options.input_shapes = {{"input", {n, 3, 224, 224}}};
  options.iterations = 1;
  options.warmup = 0;
  options.json = true;
  std::ostringstream out;
  REQUIRE(RunJob(options, out) == 0);
  return {nlohmann::json::parse(out.str()), ReadTensorDir(options.outputs_dir, "output").at(0)};
}

int FixedExportKernels() {
  InferenceSession fixed(kResnet18 + "/model.onnx");
  return fixed.PlanStatsFor({{"input", {1, 3, 224, 224}}}).kernels;
}

TEST_CASE("plan shapes: run model.plan --input-shape gives the model's outputs at batches 1 and 3",
          "[session][models]") {
  test::TempDir dir("plan_shapes_run");
  const std::string model = SymbolicBatchModel(dir);
  const std::string plan = WritePlan(model, dir);
  for (std::int64_t n : {1, 3}) {
    INFO("batch " << n);
    const CliRun from_plan = RunCli(plan, n, dir, "plan-");
    const CliRun from_model = RunCli(model, n, dir, "onnx-");
    CHECK(from_plan.output.dims == std::vector<std::int64_t>{n, 1000});
    CHECK(CompareTensors(from_model.output, from_plan.output).max_rel < 1e-4);
    CHECK(from_plan.json["input_shapes"] == nlohmann::json({{"input", {n, 3, 224, 224}}}));
    CHECK(from_plan.json["compile_ms"].get<double>() > 0);
    CHECK(from_plan.json["load_ms"].get<double>() > 0);
    CHECK(from_plan.json["kernels"] == from_model.json["kernels"]);
    CHECK(from_plan.json["plan_file_use"]["same_schedule"] == (n == 1));  // replayed at the built batch only
    CHECK(from_plan.json["plan_file_use"]["constants_reused"].get<int>() > 0);
  }
  const Tensor expected = ReadTensorFile(kResnet18 + "/test_data_set_0/output_0.pb");
  CHECK(CompareTensors(expected, RunCli(plan, 1, dir, "again-").output).max_rel < 1e-4);
  CHECK(RunCli(plan, 1, dir, "k-").json["kernels"].get<int>() == FixedExportKernels());

  // The plan's fixed dims stay fixed: named input and dim, exit code 2 (kUsage).
  RunOptions wrong;
  wrong.model_path = plan;
  wrong.input_shapes = {{"input", {2, 3, 200, 224}}};
  std::ostringstream ignored;
  const test::ThrownError e = test::ErrorOf([&] { RunJob(wrong, ignored); });
  CHECK(e.kind == ErrorKind::kUsage);
  CHECK_THAT(e.message, Catch::Contains("--input-shape input dim 2 is 200 but the model fixes it to 224"));
}

TEST_CASE("plan shapes: a session on the plan runs batches 1, 3 and 8 as the session on the model does",
          "[session][models]") {
  test::TempDir dir("plan_shapes_session");
  const std::string model = SymbolicBatchModel(dir);
  const std::string plan_path = WritePlan(model, dir);
  InferenceSession plan(plan_path), onnx(model);
  REQUIRE(plan.inputs().size() == 1);
  CHECK(plan.inputs()[0].dims[0] == -1);
  CHECK(plan.inputs()[0].symbols[0] == "N");
  CHECK(plan.outputs()[0].symbols[0] == "N");
  CHECK(plan.stats().compiles == 1);  // the stored schedule, at the built batch 1
  CHECK(plan.PlanStatsFor({{"input", {1, 3, 224, 224}}}).kernels == FixedExportKernels());
  CHECK(plan.stats().compiles == 1);

  for (std::int64_t n : {1, 3, 8}) {
    INFO("batch " << n);
    const Tensor batch = Batch(n);
    const NamedInputs views = {{"input", {ElementType::kFloat, batch.dims, batch.data.data()}}};
    const std::vector<Tensor> got = plan.Run(views), want = onnx.Run(views);
    REQUIRE(got[0].dims == std::vector<std::int64_t>{n, 1000});
    CHECK(CompareTensors(want[0], got[0]).max_rel < 1e-4);
    CHECK(plan.PlanStatsFor({{"input", batch.dims}}).kernels == onnx.PlanStatsFor({{"input", batch.dims}}).kernels);
  }
  SessionStats stats = plan.stats();
  CHECK(stats.compiles == 3);  // batch 1 from the file, 3 and 8 on first use
  REQUIRE(stats.shapes.size() == 3);
  CHECK(stats.shapes[0].input_shapes.at("input")[0] == 8);  // most recently used first
  for (const CachedShape& shape : stats.shapes) {
    CHECK(shape.compile_ms > 0);
    CHECK(shape.compile_ms == shape.plan.compile_ms);
    CHECK(shape.load_ms > 0);
  }
  const Tensor three = Batch(3);
  plan.Run({{"input", {ElementType::kFloat, three.dims, three.data.data()}}});
  CHECK(plan.stats().compiles == 3);  // cached: no compile
  CHECK(plan.stats().shapes[0].input_shapes.at("input")[0] == 3);

  // LRU of 2: batch 1, then 3, then 8 evicts batch 1.
  SessionOptions small;
  small.shape_cache_size = 2;
  InferenceSession lru(plan_path, small);
  for (std::int64_t n : {3, 8}) lru.PlanStatsFor({{"input", {n, 3, 224, 224}}});
  stats = lru.stats();
  CHECK(stats.evictions == 1);
  REQUIRE(stats.shapes.size() == 2);
  CHECK(stats.shapes[0].input_shapes.at("input")[0] == 8);
  CHECK(stats.shapes[1].input_shapes.at("input")[0] == 3);
}

// `onnx-fuse MODEL -o DIR/NAME` (the default fuser).
std::string WriteDefaultPlan(const std::string& model, const test::TempDir& dir, const std::string& name) {
  FuseJob job;
  job.input_path = model;
  job.output_path = (dir.path / name).string();
  RunFuseJob(job, WritePlanFileForJob, backend::LowersOp);
  return job.output_path;
}

TEST_CASE("plan shapes: a plan's mapped constants outlive its own schedule in the shape cache",
          "[session][models]") {
  // The encoder's projections keep their packed layout at every sequence
  // length, so they are used in place from the mapped file. The file's
  // shape (length 1) and lengths 2 to 4 in a cache of 3 evict the file's
  // schedule; the others still read the mapping.
  test::TempDir dir("plan_shapes_mapped");
  const std::string model = std::string(ONNXFUSE_MODELS_DIR) + "/dynamic/bert_encoder/model.onnx";
  const std::string path = WriteDefaultPlan(model, dir, "encoder.plan");
  SessionOptions small;
  small.shape_cache_size = 3;
  InferenceSession plan(path, small), onnx(model);
  for (std::int64_t length : {2, 3, 4, 4, 3}) {
    INFO("length " << length);
    std::vector<std::int64_t> ids(static_cast<std::size_t>(length)), mask(ids.size(), 1);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>(11 + 37 * i);
    const NamedInputs views = {{"input_ids", {ElementType::kInt64, {1, length}, ids.data()}},
                               {"attention_mask", {ElementType::kInt64, {1, length}, mask.data()}}};
    const std::vector<Tensor> got = plan.Run(views), want = onnx.Run(views);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(CompareTensors(want[i], got[i]).max_rel < 1e-4);
  }
  CHECK(plan.stats().evictions == 1);
  // Still mapped: a read of an unmapped constant may find other memory there rather than fault.
  std::ifstream maps("/proc/self/maps");
  const std::string mapped((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  CHECK(mapped.find(path) != std::string::npos);
}

TEST_CASE("plan shapes: a plan of a decoder step runs a growing cache in stages as the model does",
          "[session][models]") {
  test::TempDir dir("plan_shapes_decoder");
  const std::string model = std::string(ONNXFUSE_MODELS_DIR) + "/dynamic/gpt2_decoder_step/model.onnx";
  InferenceSession plan(WriteDefaultPlan(model, dir, "decoder.plan")), onnx(model);
  const std::vector<std::int64_t> token = {7};
  std::map<std::string, Tensor> cache;  // present_* of the last call, as the next call's past_*
  for (const ValueInfo& in : plan.inputs()) {
    if (in.name == "input_ids") continue;
    Tensor t;
    t.dims = {1, 4, 16, 64};
    for (std::int64_t i = 0; i < 4 * 16 * 64; ++i) t.data.push_back(static_cast<float>(i % 13) / 13.0f - 0.5f);
    cache[in.name] = t;
  }
  for (int call = 0; call < 5; ++call) {
    INFO("call " << call);
    NamedInputs views = {{"input_ids", {ElementType::kInt64, {1, 1}, token.data()}}};
    for (const auto& [name, t] : cache) views[name] = {ElementType::kFloat, t.dims, t.data.data()};
    const std::vector<Tensor> got = plan.Run(views), want = onnx.Run(views);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(CompareTensors(want[i], got[i]).max_rel < 1e-4);
    for (std::size_t i = 0; i < got.size(); ++i)
      if (plan.outputs()[i].name.rfind("present", 0) == 0)
        cache["past" + plan.outputs()[i].name.substr(7)] = got[i];
  }
  const SessionStats stats = plan.stats();
  CHECK(stats.compiles == 1);  // the file's own length (1); the first call's (16) already runs in stages
  CHECK(stats.staged_runs == 5);
}

// y = Relu(x @ w): x float[N,2], y float[N,2].
const char* const kSmall = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[N,2] x, float[2,2] w = {1.0, -2.0, 0.5, 0.25}) => (float[N,2] y) {
    m = MatMul (x, w)
    y = Relu (m)
  })";

TEST_CASE("plan shapes: a session pins a plan's symbolic dims, and runs a version 2 plan at its one shape",
          "[session]") {
  test::TempDir dir("plan_shapes_v2");
  const std::string path = (dir.path / "small.plan").string();
  {
    Graph graph = test::GraphFromText(kSmall);
    WritePlanFile(path, graph, test::FusePostdom(graph), CompileOptions{}, "small.onnx");
  }
  std::vector<float> x = {1, 2, -3, 4, 0.5f, -1};
  auto views = [&](std::int64_t n) {
    return NamedInputs{{"x", {ElementType::kFloat, {n, 2}, x.data()}}};
  };
  SessionOptions pinned;
  pinned.input_shapes = {{"x", {3, 2}}};
  InferenceSession three(path, pinned);
  CHECK(three.inputs()[0].dims == std::vector<std::int64_t>{3, 2});
  CHECK(three.stats().compiles == 1);  // compiled in the constructor at the pinned shape
  const std::vector<Tensor> y = three.Run(views(3));
  // y[r] = Relu(x[r] @ w), w = [[1, -2], [0.5, 0.25]].
  CHECK(y[0].data == std::vector<float>{2, 0, 0, 7, 0, 0});
  CHECK(test::ErrorOf([&] { three.Run(views(1)); }).kind == ErrorKind::kUsage);

  planfile::Plan payload = test::Payload(test::FileContents(path));
  payload.clear_built_shapes();
  const std::string v2 = dir.Write("v2.plan", test::WithHeader(payload.SerializeAsString(), 2));
  InferenceSession old(v2);
  CHECK(old.Run(views(1))[0].data == std::vector<float>{2, 0});
  const test::ThrownError e = test::ErrorOf([&] { old.Run(views(3)); });
  CHECK(e.kind == ErrorKind::kUsage);
  CHECK_THAT(e.message, Catch::Contains("format version 2") && Catch::Contains("v2.plan"));
}

}  // namespace
}  // namespace onnxfuse
