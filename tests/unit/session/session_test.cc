// InferenceSession (include/onnxfuse/session.h): metadata, Run in both forms,
// every refusal, the shape cache, and equality with `onnx-fuse run` on
// resnet18 and mobilenet_v2. Concurrent Runs: session_threads_test.cc.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/run_job.h"
#include "backend/lower/core/lowered_ops.h"
#include "onnxfuse/error.h"
#include "load/loader.h"
#include "backend/plan/plan_file.h"
#include "ir/varying_dims.h"
#include "onnxfuse/session.h"
#include "pipeline/prepare_model.h"
#include "session_cases.h"
#include "temp_dir.h"
#include "test_models.h"
#include "plan_check.h"

namespace onnxfuse {
namespace {

using test::BatchInputs;
using test::kBatchModel;
using test::LoadCase;
using test::ModelCase;
using test::ViewsOf;
using test::WriteModel;

void CheckClose(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-5));
}

TEST_CASE("session: inputs and outputs with symbolic dims by name", "[session]") {
  test::TempDir dir("session");
  InferenceSession session(WriteModel(dir, kBatchModel));
  REQUIRE(session.inputs().size() == 2);  // the initializers w and b are not inputs
  const ValueInfo& x = session.inputs()[0];
  CHECK(x.name == "x");
  CHECK(x.type == ElementType::kFloat);
  CHECK(x.dims == std::vector<std::int64_t>{-1, 4});
  CHECK(x.symbols == std::vector<std::string>{"N", ""});
  REQUIRE(session.outputs().size() == 1);
  CHECK(session.outputs()[0].name == "y");
  CHECK(session.outputs()[0].symbols[0] == "N");
  CHECK(session.stats().compiles == 0);  // symbolic: compiled on first Run
}

TEST_CASE("session: Run at batches 1, 3 and 8, the cache hitting and evicting the least recently used", "[session]") {
  test::TempDir dir("session");
  SessionOptions options;
  options.shape_cache_size = 2;
  InferenceSession session(WriteModel(dir, kBatchModel), options);
  auto run = [&](std::int64_t n) {
    BatchInputs in(n, static_cast<int>(n));
    std::vector<Tensor> out = session.Run(in.Views());
    REQUIRE(out.size() == 1);
    CHECK(out[0].name == "y");
    CHECK(out[0].dims == std::vector<std::int64_t>{n, 3});
    CheckClose(out[0].data, in.Reference());
  };
  run(1);
  run(3);
  CHECK(session.stats().compiles == 2);
  run(1);  // cached: [1, 3]
  CHECK(session.stats().compiles == 2);
  CHECK(session.stats().cache_hits == 1);
  run(8);  // evicts 3, the least recently used
  CHECK(session.stats().evictions == 1);
  run(1);
  CHECK(session.stats().compiles == 3);
  run(3);  // compiled again; evicts 8
  SessionStats stats = session.stats();
  CHECK(stats.compiles == 4);
  CHECK(stats.cache_hits == 2);
  CHECK(stats.evictions == 2);
  CHECK(stats.cached_shapes == 2);
}

TEST_CASE("session: a pinned shape gets the kernels of run --input-shape", "[session]") {
  test::TempDir dir("session");
  const std::string path = WriteModel(dir, kBatchModel);
  InferenceSession session(path);
  PlanStats stats = session.PlanStatsFor({{"x", {3, 4}}, {"z", {3, 4}}});
  PrepareOptions run;  // as `run --input-shape x=3x4 --input-shape z=3x4` prepares it
  run.target = Target::kExecutable;
  run.load.input_shapes = {{"x", {3, 4}}, {"z", {3, 4}}};
  run.lowers = backend::LowersOp;
  PreparedModel prepared = PrepareModel(path, run);
  // The session also knows which dims vary between its shapes (N here), and
  // lowers those steps on kernels that take their extents as data.
  PrepareOptions symbolic = run;
  symbolic.load.input_shapes.clear();
  CompileOptions options;
  options.varying_dims = std::make_shared<const VaryingDims>(VaryingDimsOf(*PrepareModel(path, symbolic).graph));
  ExecutablePlan direct = ExecutablePlan::Compile(*prepared.graph, prepared.fusion, options);
  CHECK(stats.kernels == direct.stats().kernels);
  CHECK(stats.arena_bytes == direct.stats().arena_bytes);
}

TEST_CASE("session: a model is fused once, a new shape infers its shapes and compiles", "[session]") {
  test::TempDir dir("session");
  InferenceSession session(WriteModel(dir, kBatchModel));
  CHECK(session.stats().fused_once);
  for (std::int64_t n : {2, 5}) {
    BatchInputs in(n, static_cast<int>(n));
    CheckClose(session.Run(in.Views())[0].data, in.Reference());
  }
  const SessionStats stats = session.stats();
  CHECK(stats.compiles == 2);
  for (const CachedShape& shape : stats.shapes) {
    CHECK(shape.load_ms > 0);
    CHECK(shape.compile_ms > 0);
  }
}

// y = ReduceMax over axis 1 of x [N, 3] when N > 2, else over axis 0: the
// branches' outputs ([N] and [3]) differ in shape, so the If cannot run as
// both branches and a Where on the symbolic graph; once N is pinned, it is
// decided at build time.
const char* const kIfOnADim = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[N,3] x) => (float[K] y) {
    s = Shape (x)
    i = Constant <value = int64 {0}> ()
    n = Gather (s, i)
    two = Constant <value = int64 {2}> ()
    c = Greater (n, two)
    y = If (c) <then_branch = then_g () => (float[N] t) { t = ReduceMax <axes = [1], keepdims = 0> (x) },
                else_branch = else_g () => (float[3] e) { e = ReduceMax <axes = [0], keepdims = 0> (x) }>
  })";

TEST_CASE("session: a model whose If needs its dims pinned is prepared again at each shape", "[session]") {
  test::TempDir dir("session");
  InferenceSession session(WriteModel(dir, kIfOnADim));
  CHECK_FALSE(session.stats().fused_once);
  for (std::int64_t n : {2, 4}) {
    std::vector<float> x(static_cast<std::size_t>(n * 3));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(1.3f * static_cast<float>(i));
    const std::vector<Tensor> out = session.Run({{"x", {ElementType::kFloat, {n, 3}, x.data()}}});
    REQUIRE(out.size() == 1);
    std::vector<float> want;
    if (n > 2) {
      for (std::int64_t r = 0; r < n; ++r)
        want.push_back(*std::max_element(x.begin() + r * 3, x.begin() + r * 3 + 3));
    } else {
      for (std::int64_t c = 0; c < 3; ++c) want.push_back(std::max(x[std::size_t(c)], x[std::size_t(3 + c)]));
    }
    CHECK(out[0].data == want);
  }
}

// The shrunk graph of difftest seed 131292980: a Scan over the batch carrying
// a state from sample to sample, then convolutions with weights. It is
// prepared again at each batch (the Scan unrolls to as many steps as the
// batch has samples), so that the graphs of two batches number their nodes
// differently.
const char* const kScanOverBatch = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[N,1,1] x, int64[1,1,1] in2, int64[1,1,1] k3 = {0}, float c6 = {0.5}, float[1,1] c11 = {0.0},
     float[1,1,1] c14 = {0.5}, float[1] c15 = {-0.112804743}, float c28 = {0.982},
     float[1,1,3] c32 = {0.5, 0.5, 0.5}) => (float[N,1,1] v33) {
    v12, v13 = Scan <body = body10 (float[1,1] sin1, float[1,1] xt2) => (float[1,1] v8, float[1,1] v9) {
      v4 = Min (in2, k3)
      v5 = GatherND <batch_dims = 1> (xt2, v4)
      v7 = Mul (sin1, c6)
      v8 = Add (v7, v5)
      v9 = Identity (v8)
    }, num_scan_inputs = 1, scan_input_axes = [0], scan_output_axes = [0]> (c11, x)
    v16 = Conv <kernel_shape = [1], strides = [1], dilations = [1], pads = [0, 0]> (v13, c14, c15)
    v17 = Relu (v16)
    v18 = Sigmoid (v13)
    v19 = Mul (v13, v18)
    v20 = Relu (v13)
    v21 = Add (v17, v19)
    v22 = Add (v21, v20)
    v23 = Relu (v22)
    v24 = Relu (v23)
    v25 = Relu (v24)
    v26 = Relu (v25)
    v27 = Abs (v26)
    v29 = Add (v27, c28)
    v30 = Sqrt (v29)
    v31 = GlobalAveragePool (v30)
    v33 = Conv <kernel_shape = [3], strides = [1], dilations = [1], pads = [1, 1]> (v31, c32)
  })";

TEST_CASE("session: a model prepared again at each shape keeps each shape's weights its own", "[session]") {
  test::TempDir dir("session");
  const std::string path = WriteModel(dir, kScanOverBatch);
  SessionOptions options;
  options.threads = 2;
  options.max_samples_per_pass = 1;
  const std::vector<std::int64_t> index = {1};
  const auto run = [&](InferenceSession& s, const std::vector<float>& x) {
    return s.Run({{"x", {ElementType::kFloat, {static_cast<std::int64_t>(x.size()), 1, 1}, x.data()}},
                  {"in2", {ElementType::kInt64, {1, 1, 1}, index.data()}}})[0].data;
  };
  const std::vector<float> one = {-0.71765006f}, three = {0.41993535f, 0.16661714f, -0.90869915f};
  // By hand: states s = 0.5 s + x; y = 0.5 sqrt(|Relu(0.5 s + c15) + s sigmoid(s) + Relu(s)| + 0.982).
  std::vector<double> want;
  double state = 0;
  for (float x : three) {
    state = 0.5 * state + x;
    const double sum = std::max(0.0, 0.5 * state - 0.112804743) + state / (1 + std::exp(-state)) + std::max(0.0, state);
    want.push_back(0.5 * std::sqrt(std::fabs(std::max(0.0, sum)) + 0.982));
  }
  InferenceSession session(path, options);
  CHECK_FALSE(session.stats().fused_once);
  run(session, one);  // the graph of one sample first: its constants must not serve three
  const std::vector<float> got = run(session, three);
  REQUIRE(got.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("session: fixed input shapes compile at construction", "[session]") {
  test::TempDir dir("session");
  SessionOptions options;
  options.input_shapes = {{"x", {2, 4}}, {"z", {2, 4}}};
  InferenceSession session(WriteModel(dir, kBatchModel), options);
  CHECK(session.stats().compiles == 1);
  CHECK(session.inputs()[0].dims == std::vector<std::int64_t>{2, 4});
  BatchInputs two(2, 5);
  CheckClose(session.Run(two.Views())[0].data, two.Reference());
  CHECK(session.stats().cache_hits == 1);
  BatchInputs three(3, 5);
  auto e = test::ErrorOf([&] { session.Run(three.Views()); });
  CHECK(e.kind == ErrorKind::kUsage);
  CHECK_THAT(e.message, Catch::Contains("'x' dim 0 must be 2"));
}

TEST_CASE("session: outputs into caller buffers", "[session]") {
  test::TempDir dir("session");
  InferenceSession session(WriteModel(dir, kBatchModel));
  BatchInputs in(3, 7);
  std::vector<float> y(9, -100.0f);
  session.Run(in.Views(), {{"y", {ElementType::kFloat, {3, 3}, y.data()}}});
  CheckClose(y, in.Reference());

  std::vector<float> small(3, -100.0f);
  auto shape = test::ErrorOf([&] { session.Run(in.Views(), {{"y", {ElementType::kFloat, {1, 3}, small.data()}}}); });
  CHECK(shape.kind == ErrorKind::kUsage);
  CHECK_THAT(shape.message, Catch::Contains("output 'y' has shape [3,3]"));
  CHECK(small == std::vector<float>(3, -100.0f));  // nothing written
  std::vector<double> wide(9);
  auto dtype = test::ErrorOf([&] { session.Run(in.Views(), {{"y", {ElementType::kDouble, {3, 3}, wide.data()}}}); });
  CHECK(dtype.kind == ErrorKind::kUsage);
  CHECK_THAT(dtype.message, Catch::Contains("output 'y' is float32"));
  auto name = test::ErrorOf([&] { session.Run(in.Views(), {{"q", {ElementType::kFloat, {3, 3}, y.data()}}}); });
  CHECK_THAT(name.message, Catch::Contains("unknown output 'q'"));
  auto listed = test::ErrorOf([&] { session.Run(in.Views(), std::vector<std::string>{"y", "q"}); });
  CHECK(listed.kind == ErrorKind::kUsage);
  CHECK_THAT(listed.message, Catch::Contains("unknown output 'q'; the model's outputs are: y"));
}

TEST_CASE("session: a wrong input name, dtype, rank, dim or symbol is an error naming the input", "[session]") {
  test::TempDir dir("session");
  InferenceSession session(WriteModel(dir, kBatchModel));
  BatchInputs in(2, 1);
  auto expect = [&](NamedInputs views, const std::string& text) {
    auto e = test::ErrorOf([&] { session.Run(views); });
    CHECK(e.kind == ErrorKind::kUsage);
    CHECK_THAT(e.message, Catch::Contains(text));
  };
  NamedInputs views = in.Views();
  views["q"] = views["x"];
  expect(views, "unknown input 'q'; the model's inputs are: x, z");
  views = in.Views();
  views.erase("z");
  expect(views, "input 'z' is missing");
  views = in.Views();
  std::vector<std::int64_t> ints(8, 1);
  views["x"] = {ElementType::kInt64, {2, 4}, ints.data()};
  expect(views, "input 'x' must be float32, got int64");
  views = in.Views();
  views["x"].shape = {8};
  expect(views, "input 'x' must have rank 2, got shape [8] (the model declares [N,4])");
  views = in.Views();
  views["z"].shape = {2, 8};
  expect(views, "input 'z' dim 1 must be 4");
  views = in.Views();
  views["z"].shape = {1, 4};
  expect(views, "input 'z' gives dim 'N' the value 1, input 'x' gave it 2");
  views = in.Views();
  views["x"].data = nullptr;
  expect(views, "input 'x' has no data");
  CHECK(session.stats().compiles == 0);  // refused before anything compiled
}

TEST_CASE("session: bad options and files", "[session]") {
  test::TempDir dir("session");
  const std::string path = WriteModel(dir, kBatchModel);
  SessionOptions options;
  options.shape_cache_size = 0;
  CHECK(test::ErrorOf([&] { InferenceSession s(path, options); }).kind == ErrorKind::kUsage);
  options = {};
  options.threads = -1;
  CHECK(test::ErrorOf([&] { InferenceSession s(path, options); }).kind == ErrorKind::kUsage);
  options = {};
  options.max_samples_per_pass = -2;
  auto passes = test::ErrorOf([&] { InferenceSession s(path, options); });
  CHECK(passes.kind == ErrorKind::kUsage);
  CHECK_THAT(passes.message, Catch::Contains("max_samples_per_pass"));
  CHECK(test::ErrorOf([&] { InferenceSession s((dir.path / "none.onnx").string()); }).kind == ErrorKind::kIo);
  const std::string junk = dir.Write("junk.onnx", "not a model");
  CHECK(test::ErrorOf([&] { InferenceSession s(junk); }).kind == ErrorKind::kInvalidModel);
}

// ---- Real models: the same outputs as `onnx-fuse run --outputs` ----

std::vector<Tensor> RunCli(const std::string& model, const std::string& inputs_dir, const test::TempDir& out) {
  RunOptions options;
  options.model_path = model;
  options.inputs_dir = inputs_dir;
  options.outputs_dir = (out.path / "outputs").string();
  options.iterations = 1;
  options.warmup = 0;
  std::ostringstream ignored;
  REQUIRE(RunJob(options, ignored) == 0);
  return ReadTensorDir(options.outputs_dir, "output");
}

// Kernels of `onnx-fuse run --json MODEL`.
int RunKernels(const std::string& model) {
  RunOptions options;
  options.model_path = model;
  options.iterations = 1;
  options.warmup = 0;
  options.json = true;
  std::ostringstream out;
  REQUIRE(RunJob(options, out) == 0);
  return nlohmann::json::parse(out.str())["kernels"].get<int>();
}

TEST_CASE("session: resnet18 and mobilenet_v2 give run's outputs, from the model and from a plan", "[session][models]") {
  for (const std::string name : {"resnet18", "mobilenet_v2"}) {
    INFO(name);
    ModelCase c = LoadCase(name);
    test::TempDir dir("session_models");
    const std::vector<Tensor> cli = RunCli(c.dir + "/model.onnx", c.dir + "/test_data_set_0", dir);
    InferenceSession session(c.dir + "/model.onnx");
    const std::vector<Tensor> out = session.Run(ViewsOf(c.inputs, session));
    REQUIRE(out.size() == cli.size());
    CHECK(out[0].dims == cli[0].dims);
    // The same schedule as run's, the same kernels (impl_choice.cc times
    // nothing): the same bits.
    CHECK(CompareTensors(cli[0], out[0]).max_rel == 0);
    CHECK(session.PlanStatsFor({{session.inputs()[0].name, c.inputs[0].dims}}).kernels == RunKernels(c.dir + "/model.onnx"));

    const Tensor expected = ReadTensorFile(c.dir + "/test_data_set_0/output_0.pb");
    CHECK(CompareTensors(expected, out[0]).max_rel < 1e-4);

    // A plan file replays: same metadata, outputs within the reference tolerance.
    const std::string plan = (dir.path / "model.plan").string();
    {
      Graph graph = LoadModel(c.dir + "/model.onnx");
      WritePlanFile(plan, graph, test::FusePostdom(graph), CompileOptions{}, c.dir + "/model.onnx", false);
    }
    InferenceSession replay(plan);
    CHECK(replay.inputs()[0].dims == session.inputs()[0].dims);
    CHECK(replay.stats().compiles == 1);
    const std::vector<Tensor> planned = replay.Run(ViewsOf(c.inputs, replay));
    CHECK(CompareTensors(expected, planned[0]).max_rel < 1e-4);
    // The model fixes its batch: pinning the plan's own shape is allowed, another batch is refused.
    SessionOptions pinned;
    pinned.input_shapes = {{session.inputs()[0].name, c.inputs[0].dims}};
    CHECK(InferenceSession(plan, pinned).stats().compiles == 1);
    pinned.input_shapes.begin()->second[0] = 2;
    const test::ThrownError refused = test::ErrorOf([&] { InferenceSession s(plan, pinned); });
    CHECK(refused.kind == ErrorKind::kUsage);
    CHECK_THAT(refused.message, Catch::Contains("dim 0 is 2 but the model fixes it to 1"));
  }
}

}  // namespace
}  // namespace onnxfuse

namespace onnxfuse {
namespace {

// resnet18 with its batch made symbolic ("N" on the input and the output): the
// export torch gives with dynamic_axes={"input": {0: "N"}, ...}.
std::string SymbolicBatchResnet18(const test::TempDir& dir) {
  onnx::ModelProto model;
  std::ifstream in(std::string(ONNXFUSE_MODELS_DIR) + "/resnet18/model.onnx", std::ios::binary);
  REQUIRE(model.ParseFromIstream(&in));
  for (onnx::ValueInfoProto* v : {model.mutable_graph()->mutable_input(0), model.mutable_graph()->mutable_output(0)})
    v->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  return dir.Write("resnet18_batch.onnx", model.SerializeAsString());
}

TEST_CASE("session: resnet18 with a symbolic batch, at batches 1 and 3", "[session][models]") {
  ModelCase c = LoadCase("resnet18");
  test::TempDir dir("session_models");
  InferenceSession session(SymbolicBatchResnet18(dir));
  CHECK(session.inputs()[0].symbols[0] == "N");
  // Batch 1 pinned gets the fixed export's schedule (the same kernels as run on it).
  InferenceSession fixed(c.dir + "/model.onnx");
  CHECK(session.PlanStatsFor({{"input", {1, 3, 224, 224}}}).kernels ==
        fixed.PlanStatsFor({{"input", {1, 3, 224, 224}}}).kernels);

  // Three different images in one batch: each row equals its image run alone.
  const Tensor& image = c.inputs[0];
  const std::size_t n = image.data.size();
  std::vector<float> batch(3 * n);
  for (std::size_t k = 0; k < 3; ++k)
    for (std::size_t i = 0; i < n; ++i) batch[k * n + i] = image.data[i] * (1.0f - 0.4f * float(k));
  const std::vector<Tensor> out = session.Run({{"input", {ElementType::kFloat, {3, 3, 224, 224}, batch.data()}}});
  REQUIRE(out[0].dims == std::vector<std::int64_t>{3, 1000});
  for (std::size_t k = 0; k < 3; ++k) {
    Tensor row = out[0], alone;
    row.dims = {1, 1000};
    row.data.assign(out[0].data.begin() + long(k * 1000), out[0].data.begin() + long((k + 1) * 1000));
    alone = session.Run({{"input", {ElementType::kFloat, {1, 3, 224, 224}, batch.data() + k * n}}})[0];
    INFO("image " << k);
    CHECK(CompareTensors(alone, row).max_rel < 1e-4);
  }
  const Tensor expected = ReadTensorFile(c.dir + "/test_data_set_0/output_0.pb");
  Tensor first = out[0];
  first.dims = {1, 1000};
  first.data.resize(1000);
  CHECK(CompareTensors(expected, first).max_rel < 1e-4);
  CHECK(session.stats().compiles == 2);  // batch 1 (PlanStatsFor) and batch 3; the other Runs hit
  CHECK(session.stats().cache_hits == 3);
}

}  // namespace
}  // namespace onnxfuse
