// The pass runner (src/session/pass_runner.h): pass slices of the inputs,
// the batch outputs passes fill, feeding an instance, and RunPasses over a
// schedule in passes run one after another and at once, with a failing pass.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "onnxfuse/error.h"
#include "session/pass_runner.h"
#include "session/shape_schedule.h"
#include "session_cases.h"
#include "test_models.h"
#include "plan_check.h"

namespace onnxfuse {
namespace {

using test::BatchInputs;

// kBatchModel's schedule compiled at `samples` samples (its inputs pinned to [samples, 4]).
std::unique_ptr<session::ShapeSchedule> BatchSchedule(std::int64_t samples, session::SharedPackedConstants& packed) {
  LoadOptions load;
  load.input_shapes = {{"x", {samples, 4}}, {"z", {samples, 4}}};
  auto graph = std::make_unique<Graph>(test::GraphFromText(test::kBatchModel, load));
  FusionPlan fusion = test::FusePostdom(*graph);
  return std::make_unique<session::ShapeSchedule>(std::move(graph), std::move(fusion), true, &packed);
}

TEST_CASE("pass runner: a pass's inputs are views of its samples, without a copy", "[session][pass_runner]") {
  const BatchInputs batch(6, 1);
  const NamedInputs all = batch.Views();
  for (std::int64_t pass = 0; pass < 3; ++pass) {
    const NamedInputs slice = session::PassInputs(all, 2, pass);
    REQUIRE(slice.size() == 2);
    CHECK(slice.at("x").shape == std::vector<std::int64_t>{2, 4});
    CHECK(slice.at("x").dtype == ElementType::kFloat);
    CHECK(slice.at("x").data == batch.x.data() + pass * 8);  // 2 samples of 4 floats per pass
    CHECK(slice.at("z").data == batch.z.data() + pass * 8);
  }
  // Elements of another size move by their own bytes: int64 ids of [3, 5], passes of one sample.
  const std::vector<std::int64_t> ids(15);
  const NamedInputs id_views = {{"ids", TensorView{ElementType::kInt64, {3, 5}, ids.data()}}};
  CHECK(session::PassInputs(id_views, 1, 2).at("ids").data == ids.data() + 10);
}

TEST_CASE("pass runner: a batch output has the batch's rows, in its storage type", "[session][pass_runner]") {
  ExecutablePlan::Binding out;
  out.name = "y";
  out.dims = {2, 3};
  out.data_type = onnx::TensorProto::FLOAT16;  // held as float
  Tensor y = session::BatchOutput(out, 8);
  CHECK(y.name == "y");
  CHECK(y.dims == std::vector<std::int64_t>{8, 3});
  CHECK(y.data_type == onnx::TensorProto::FLOAT16);
  CHECK(y.elem_type == onnx::TensorProto::FLOAT);
  CHECK(y.data.size() == 24);
  CHECK(y.int_data.empty());

  out.data_type = onnx::TensorProto::INT32;  // held as int64
  Tensor ids = session::BatchOutput(out, 5);
  CHECK(ids.elem_type == onnx::TensorProto::INT64);
  CHECK(ids.int_data.size() == 15);
  CHECK(ids.data.empty());
}

TEST_CASE("pass runner: an instance refuses inputs of another shape than its own", "[session][pass_runner]") {
  session::SharedPackedConstants packed;
  auto schedule = BatchSchedule(2, packed);
  session::ShapeSchedule::Lease lease = schedule->Acquire();
  const BatchInputs three(3, 1);
  try {
    session::FeedInputs(lease.plan(), three.Views());
    FAIL("FeedInputs took [3,4] into an instance compiled at [2,4]");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kUsage);
    CHECK_THAT(e.what(), Catch::Contains("input 'x' of shape [3,4] runs as [2,4]"));
  }
}

// Runs `batch` through `schedule` with RunPasses on a leased instance; checks
// that every pass ran once and that the passes' rows of y, in pass order, are
// the batch's reference. Returns how many threads ran passes.
std::size_t RunAndCheck(session::ShapeSchedule& schedule, const BatchInputs& batch, std::int64_t expect_passes) {
  std::mutex mutex;
  std::map<std::int64_t, std::vector<float>> rows_by_pass;
  std::set<std::thread::id> threads;
  {
    session::ShapeSchedule::Lease lease = schedule.Acquire();
    session::RunPasses(lease.plan(), schedule, batch.Views(), batch.n,
                       [&](const ExecutablePlan& instance, std::int64_t pass, std::int64_t passes) {
                         const Tensor y = instance.OutputTensor(0);
                         std::lock_guard<std::mutex> lock(mutex);
                         CHECK(passes == expect_passes);
                         CHECK(rows_by_pass.count(pass) == 0);
                         rows_by_pass[pass] = y.data;
                         threads.insert(std::this_thread::get_id());
                       });
  }
  REQUIRE(rows_by_pass.size() == static_cast<std::size_t>(expect_passes));
  const std::vector<double> reference = batch.Reference();
  std::vector<float> y;
  for (const auto& [pass, rows] : rows_by_pass) y.insert(y.end(), rows.begin(), rows.end());
  REQUIRE(y.size() == reference.size());
  for (std::size_t i = 0; i < y.size(); ++i)
    CHECK(std::fabs(y[i] - reference[i]) <= 1e-5 * (1 + std::fabs(reference[i])));
  return threads.size();
}

TEST_CASE("pass runner: passes in turn and at once compute the batch's rows", "[session][pass_runner]") {
  session::SharedPackedConstants packed;
  const BatchInputs batch(6, 3);
  SECTION("one pass of the whole batch, on the caller's instance") {
    auto schedule = BatchSchedule(6, packed);
    CHECK(RunAndCheck(*schedule, batch, 1) == 1);
    CHECK(schedule->instances() == 1);
  }
  SECTION("three passes of two in turn, on the caller's thread") {
    auto schedule = BatchSchedule(2, packed);
    schedule->set_samples_per_pass(2);
    CHECK(RunAndCheck(*schedule, batch, 3) == 1);
    CHECK(schedule->instances() == 1);
  }
  SECTION("three passes of two, two at once: a helper thread with an instance of its own") {
    auto schedule = BatchSchedule(2, packed);
    schedule->set_samples_per_pass(2);
    schedule->set_concurrent_passes(2);
    // Which thread takes which pass is a race (the caller may run all three
    // before the helper starts), but the helper always leases an instance.
    const std::size_t threads = RunAndCheck(*schedule, batch, 3);
    CHECK((threads == 1 || threads == 2));
    CHECK(schedule->instances() == 2);
    // Both instances went back to the pool: a second Run compiles no third.
    RunAndCheck(*schedule, batch, 3);
    CHECK(schedule->instances() == 2);
  }
}

TEST_CASE("pass runner: a failing pass's error reaches the caller after every pass has stopped",
          "[session][pass_runner]") {
  session::SharedPackedConstants packed;
  auto schedule = BatchSchedule(1, packed);
  schedule->set_samples_per_pass(1);
  schedule->set_concurrent_passes(GENERATE(1, 2));
  const BatchInputs batch(6, 5);
  std::mutex mutex;
  std::set<std::int64_t> collected;
  {
    session::ShapeSchedule::Lease lease = schedule->Acquire();
    try {
      session::RunPasses(lease.plan(), *schedule, batch.Views(), batch.n,
                         [&](const ExecutablePlan&, std::int64_t pass, std::int64_t) {
                           if (pass == 1) throw Error(ErrorKind::kIo, "pass 1 failed");
                           std::lock_guard<std::mutex> lock(mutex);
                           collected.insert(pass);
                         });
      FAIL("RunPasses returned although pass 1 threw");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kIo);
      CHECK(std::string(e.what()) == "pass 1 failed");
    }
  }
  // Pass 0 was handed out before pass 1 and runs to its end; no pass starts
  // after the error, so in turn nothing follows pass 1. (At once, the other
  // thread may finish a pass it took before the error was seen.)
  CHECK(collected.count(0) == 1);
  CHECK(collected.count(1) == 0);
  if (schedule->concurrent_passes() == 1) CHECK(collected == std::set<std::int64_t>{0});
}

}  // namespace
}  // namespace onnxfuse
