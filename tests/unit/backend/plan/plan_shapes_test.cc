// Plan files at any input shape (src/backend/plan/plan_shapes.cc, format
// version 3): a model with a symbolic batch keeps it in the file, is compiled
// at its built shapes (batch 1) and again at others with the same groups;
// requested shapes that change a fixed dim are refused naming the input and
// dim; version 2 files still read at their one shape; malformed built shapes
// are refused as damage.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "backend/plan/plan_shapes.h"
#include "onnxfuse/error.h"
#include "backend/plan/plan_file.h"
#include "onnxfuse_plan.pb.h"
#include "plan_file_bytes.h"
#include "session_cases.h"
#include "temp_dir.h"
#include "test_models.h"
#include "plan_check.h"

using namespace onnxfuse;
namespace fs = std::filesystem;

namespace {

// The plan of test::kBatchModel (session_cases.h: y = Relu((x + z) @ w + b), a symbolic batch N), as written.
std::string BatchPlan(const test::TempDir& dir) {
  Graph graph = test::GraphFromText(test::kBatchModel);
  const fs::path path = dir.path / "batch.plan";
  WritePlanFile(path.string(), graph, test::FusePostdom(graph), CompileOptions{}, "batch.onnx");
  return test::FileContents(path);
}

// Runs the loaded plan on x[i] = Wave(i), z[i] = Wave(3 i) / 2 and checks y against a double loop.
void CheckBatch(LoadedPlan& plan, std::int64_t n) {
  std::vector<Tensor> inputs = {test::TensorOf("x", {n, 4}, {}), test::TensorOf("z", {n, 4}, {})};
  for (std::int64_t i = 0; i < 4 * n; ++i) {
    inputs[0].data.push_back(test::Wave(i));
    inputs[1].data.push_back(test::Wave(3 * i) / 2);
  }
  const std::vector<Tensor> out = plan.executable->Run(inputs);
  REQUIRE(out[0].dims == std::vector<std::int64_t>{n, 3});
  for (std::int64_t r = 0; r < n; ++r)
    for (int c = 0; c < 3; ++c) {
      double acc = test::kBatchB[c];
      for (int k = 0; k < 4; ++k) {
        const auto i = static_cast<std::size_t>(r * 4 + k);
        acc += (double(inputs[0].data[i]) + double(inputs[1].data[i])) * test::kBatchW[k][c];
      }
      CHECK(out[0].data[static_cast<std::size_t>(r * 3 + c)] == Approx(std::max(acc, 0.0)).margin(1e-5));
    }
}

PlanReadOptions AtShapes(std::map<std::string, std::vector<std::int64_t>> shapes, bool keep_model = false) {
  PlanReadOptions read;
  read.input_shapes = std::move(shapes);
  read.keep_model = keep_model;
  return read;
}

}  // namespace

TEST_CASE("plan shapes: built shapes pin open dims to 1, requested symbols reach the other inputs", "[plan_file]") {
  Graph open = test::GraphFromText(test::kBatchModel);
  CHECK(planshapes::HasOpenDims(open));
  const planshapes::Shapes built = planshapes::BuiltShapes(open);
  CHECK(built == planshapes::Shapes{{"x", {1, 4}}, {"z", {1, 4}}});
  Graph fixed = test::GraphFromText(test::kBatchModel, LoadOptions{{{"x", {2, 4}}}});
  CHECK_FALSE(planshapes::HasOpenDims(fixed));

  const onnx::ModelProto model = test::ParseModel(test::kBatchModel);
  CHECK(planshapes::ShapesToCompile(model.graph(), built, {{"x", {5, 4}}}) ==
        planshapes::Shapes{{"x", {5, 4}}, {"z", {5, 4}}});
  const test::ThrownError clash = test::ErrorOf(
      [&] { planshapes::ShapesToCompile(model.graph(), built, {{"x", {5, 4}}, {"z", {6, 4}}}); });
  CHECK(clash.kind == ErrorKind::kUsage);
  CHECK_THAT(clash.message, Catch::Contains("dim 'N'") && Catch::Contains("--input-shape x"));
}

TEST_CASE("plan shapes: a symbolic batch stays in the file and runs at any batch", "[plan_file]") {
  test::TempDir dir("plan_shapes");
  const std::string bytes = BatchPlan(dir);
  const planfile::Plan stored = test::Payload(bytes);
  REQUIRE(stored.built_shapes_size() == 2);
  CHECK(stored.built_shapes(0).name() == "x");
  CHECK(std::vector<std::int64_t>(stored.built_shapes(0).dims().begin(), stored.built_shapes(0).dims().end()) ==
        std::vector<std::int64_t>{1, 4});
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(stored.model()));
  CHECK(model.graph().input(0).type().tensor_type().shape().dim(0).dim_param() == "N");

  LoadedPlan built = ParsePlanFile(bytes.data(), bytes.size(), "batch.plan");
  CHECK(built.info.format_version == kPlanFormatVersion);
  CHECK(built.info.same_schedule);
  CHECK(built.info.input_shapes == built.info.built_shapes);
  CHECK(built.info.compile_ms > 0);
  CHECK(built.model == nullptr);  // not asked for
  CheckBatch(built, 1);

  // Kept, the model as stored has its symbol; the same groups load at any batch from it.
  LoadedPlan kept = ParsePlanFile(bytes.data(), bytes.size(), "batch.plan", AtShapes({}, true));
  REQUIRE(kept.model != nullptr);
  CHECK(kept.model->value(kept.model->inputs()[0]).type.dim_params[0] == "N");
  for (std::int64_t n : {3, 8}) {
    INFO("batch " << n);
    LoadedPlan at = ParsePlanFile(bytes.data(), bytes.size(), "batch.plan", AtShapes({{"x", {n, 4}}}));
    CHECK(at.info.input_shapes == planshapes::Shapes{{"x", {n, 4}}, {"z", {n, 4}}});  // z follows N
    CHECK(at.info.constants_reused + at.info.constants_relaid > 0);  // the stored weights, not packed again
    CHECK_FALSE(at.info.same_schedule);
    CHECK(at.fusion.groups.size() == built.fusion.groups.size());
    CheckBatch(at, n);

    PlanGraph again = PlanModelAt(ShapeModel(kept.model), kept.fusion, {{"x", {n, 4}}, {"z", {n, 4}}});
    CHECK(again.fusion.groups.size() == kept.fusion.groups.size());
    CHECK(again.graph->value(again.graph->outputs()[0]).type.dims == std::vector<std::int64_t>{n, 3});
  }
  // Kept with a shape requested, the model as stored has that shape pinned.
  LoadedPlan pinned = ParsePlanFile(bytes.data(), bytes.size(), "batch.plan", AtShapes({{"x", {2, 4}}}, true));
  CHECK(pinned.model->value(pinned.model->inputs()[1]).type.dims == std::vector<std::int64_t>{2, 4});
}

TEST_CASE("plan shapes: a shape changing a fixed dim or the rank is refused naming the input and dim",
          "[plan_file]") {
  test::TempDir dir("plan_shapes");
  const std::string bytes = BatchPlan(dir);
  auto refused = [&](const PlanReadOptions& read, const std::string& needle) {
    const test::ThrownError e = test::ErrorOf([&] { ParsePlanFile(bytes.data(), bytes.size(), "b.plan", read); });
    CHECK(e.kind == ErrorKind::kUsage);
    CHECK_THAT(e.message, Catch::Contains(needle) && Catch::Contains("b.plan"));
  };
  refused(AtShapes({{"x", {3, 5}}}), "--input-shape x dim 1 is 5 but the model fixes it to 4");
  refused(AtShapes({{"x", {3, 4, 1}}}), "--input-shape x has rank 3");
  refused(AtShapes({{"q", {3, 4}}}), "'q', which is not a graph input");
}

TEST_CASE("plan shapes: a version 2 plan still reads, at its one shape", "[plan_file]") {
  test::TempDir dir("plan_shapes");
  planfile::Plan payload = test::Payload(BatchPlan(dir));
  {
    // A version 2 writer compiled the open model as it was (dims taken as 1),
    // with no built shapes.
    payload.clear_built_shapes();
    const std::string v2 = test::WithHeader(payload.SerializeAsString(), 2);
    LoadedPlan old = ParsePlanFile(v2.data(), v2.size(), "old.plan", AtShapes({}, true));
    CHECK(old.info.format_version == 2);
    CHECK(old.info.built_shapes.empty());
    CHECK(old.model == nullptr);  // one shape: nothing to compile others from
    CheckBatch(old, 1);
    const test::ThrownError e =
        test::ErrorOf([&] { ParsePlanFile(v2.data(), v2.size(), "old.plan", AtShapes({{"x", {3, 4}}})); });
    CHECK(e.kind == ErrorKind::kUsage);
    CHECK_THAT(e.message, Catch::Contains("input 'x'") && Catch::Contains("format version 2"));
  }
}

TEST_CASE("plan shapes: malformed built shapes are refused as damage", "[plan_file]") {
  test::TempDir dir("plan_shapes");
  const planfile::Plan good = test::Payload(BatchPlan(dir));
  auto refused = [](const planfile::Plan& plan, const std::string& needle) {
    const std::string bytes = test::WithHeader(plan.SerializeAsString());
    const test::ThrownError e = test::ErrorOf([&] { ParsePlanFile(bytes.data(), bytes.size(), "x.plan"); });
    CHECK(e.kind == ErrorKind::kInvalidModel);
    CHECK_THAT(e.message, Catch::Contains(needle) && Catch::Contains("x.plan"));
  };
  planfile::Plan plan = good;
  plan.mutable_built_shapes(0)->set_dims(0, -2);
  refused(plan, "built shape of input 'x' is malformed");
  plan = good;
  *plan.add_built_shapes() = good.built_shapes(0);
  refused(plan, "stored twice");
  plan = good;
  plan.mutable_built_shapes(0)->set_name("nothing");
  refused(plan, "the built shapes do not fit the model");
  plan = good;
  plan.mutable_built_shapes(1)->set_dims(1, 7);  // z's fixed dim 4
  refused(plan, "the built shapes do not fit the model");
}
