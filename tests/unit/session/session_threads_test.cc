// Concurrent Runs on one InferenceSession (include/onnxfuse/session.h: Run may
// be called from several threads at once): 4 threads x 50 Runs at mixed batch
// sizes, every output bit-equal to the same inputs run single-threaded; the
// shape cache evicting under concurrent Runs; two threads on resnet18; and
// concurrent Runs that each run an OpenMP team of two. Tagged [threads]: the
// ThreadSanitizer pass (ONNXFUSE_TSAN, tests/CMakeLists.txt) runs these cases.
#include <catch2/catch.hpp>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <functional>
#include <iterator>
#include <limits>
#include <thread>

#include "onnxfuse/session.h"
#include "session_cases.h"
#include "temp_dir.h"

namespace onnxfuse {
namespace {

using test::BatchInputs;
using test::CnnInputs;

constexpr int kThreads = 4, kRuns = 50;

// Run r of thread t is at batch 1, 4 or 7, the threads out of step with each
// other, so that Runs at different shapes (and at the same one) overlap.
std::int64_t BatchOf(int t, int r) { return 1 + (t + r) % 3 * 3; }

// Threads of this process (Linux: /proc/self/task). A thread started and
// joined first: ThreadSanitizer starts a thread of its own with the first
// one. A joined thread stays listed until the kernel reaps it, a moment after
// join returns, so the count is the least of reads over 100 ms: a team's
// workers, docked between its parallel regions, are there for all of them.
long ProcessThreads() {
  std::thread([] {}).join();
  long least = std::numeric_limits<long>::max();
  for (int read = 0; read < 20; ++read) {
    if (read > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    least = std::min(least, static_cast<long>(std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                                                            std::filesystem::directory_iterator{})));
  }
  return least;
}

// Calls body(t) on kThreads threads released together (a spin on a counter,
// so that none is done before the last starts); rethrows a thread's exception.
// Each thread's OpenMP default is 4 threads, wider than the sessions' 1 here,
// as an application's own threads may be: a Run must not run or compile with it.
// Returns the process's threads other than the callers, counted when every
// caller is done with body but none has ended: OpenMP keeps the workers of a
// team a thread formed until that thread ends, so a count above the one
// before means some Run formed a team or left a thread running.
long OnThreads(const std::function<void(int)>& body) {
  std::atomic<int> ready{0}, done{0};
  std::atomic<bool> counted{false};
  long others = 0;
  std::vector<std::exception_ptr> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      omp_set_num_threads(4);
      ++ready;
      while (ready < kThreads) std::this_thread::yield();
      try {
        body(t);
      } catch (...) {
        errors[std::size_t(t)] = std::current_exception();
      }
      ++done;
      if (t == 0) {
        while (done < kThreads) std::this_thread::yield();
        others = ProcessThreads() - kThreads;
        counted = true;
      }
      while (!counted) std::this_thread::yield();
    });
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return others;
}

// Thread t's inputs for its Runs r = 0, 1, ...: Inputs(BatchOf(t, r), t * 100 + r,
// args...), each Run its own data, and the session's views of them. Not
// copyable: the views point into the inputs.
template <typename Inputs>
struct Feeds {
  std::vector<std::vector<Inputs>> inputs;
  std::vector<std::vector<NamedInputs>> views;
  template <typename... Args>
  explicit Feeds(int runs, Args... args) : inputs(kThreads), views(kThreads) {
    for (int t = 0; t < kThreads; ++t)
      for (int r = 0; r < runs; ++r) inputs[std::size_t(t)].emplace_back(BatchOf(t, r), t * 100 + r, args...);
    for (int t = 0; t < kThreads; ++t)
      for (const Inputs& in : inputs[std::size_t(t)]) views[std::size_t(t)].push_back(in.Views());
  }
  Feeds(const Feeds&) = delete;
  Feeds& operator=(const Feeds&) = delete;
};

// feeds[t][r] run from thread t (r in order), all threads at once; then each
// again on this thread alone. Gives how many of the concurrent outputs differ
// from the single-threaded ones in any bit, and OnThreads' count of other
// threads. Both passes use the session's schedules, whose instances all run
// the same kernels (shape_schedule.h) on teams of the same size, so equal
// means bit-equal.
struct Concurrent {
  int mismatches = 0;
  long other_threads = 0;
};
Concurrent RunConcurrently(InferenceSession& session, const std::vector<std::vector<NamedInputs>>& feeds) {
  std::vector<std::vector<std::vector<float>>> concurrent(kThreads);
  Concurrent result;
  result.other_threads = OnThreads([&](int t) {
    for (const NamedInputs& feed : feeds[std::size_t(t)]) concurrent[std::size_t(t)].push_back(session.Run(feed)[0].data);
  });
  for (std::size_t t = 0; t < feeds.size(); ++t)
    for (std::size_t r = 0; r < feeds[t].size(); ++r)
      if (session.Run(feeds[t][r])[0].data != concurrent[t][r]) ++result.mismatches;
  return result;
}

// threads = 1: each Run is one OpenMP thread, so the threads here are the
// callers' only (and, under ThreadSanitizer, no uninstrumented OpenMP team
// runs our code).
SessionOptions OneThreadPerRun() {
  SessionOptions options;
  options.threads = 1;
  return options;
}

TEST_CASE("session: concurrent Runs at mixed batch sizes equal single-threaded ones", "[session][threads]") {
  test::TempDir dir("session_threads");
  const long threads_before = ProcessThreads();
  SECTION("the two-input model, and its reference in double") {
    InferenceSession session(test::WriteModel(dir, test::kBatchModel), OneThreadPerRun());
    const Feeds<BatchInputs> feeds(kRuns);
    const Concurrent run = RunConcurrently(session, feeds.views);
    CHECK(run.mismatches == 0);
    CHECK(run.other_threads <= threads_before);  // no caller's Run formed a team (below)
    int wrong = 0;
    for (const auto& row : feeds.inputs)
      for (const BatchInputs& in : row) {
        const std::vector<float> got = session.Run(in.Views())[0].data;
        const std::vector<double> want = in.Reference();
        for (std::size_t i = 0; i < want.size(); ++i)
          if (std::abs(got[i] - want[i]) > 1e-5) ++wrong;
      }
    CHECK(wrong == 0);
    const SessionStats stats = session.stats();
    CHECK(stats.compiles == 3);  // one schedule per batch size, whichever thread came first
    CHECK(stats.cached_shapes == 3);
    CHECK(stats.cache_hits + stats.compiles == 3 * kThreads * kRuns);
    CHECK(stats.plan_instances >= 3);
  }
  SECTION("a small CNN: prepacked convolution and Gemm weights shared by three schedules") {
    InferenceSession session(test::WriteModel(dir, test::SmallCnnModel()), OneThreadPerRun());
    const Feeds<CnnInputs> feeds(kRuns);
    const Concurrent run = RunConcurrently(session, feeds.views);
    CHECK(run.mismatches == 0);
    CHECK(run.other_threads <= threads_before);
    // Each image of a batch gives what it gives alone (a batch row mixed up with another would not).
    const CnnInputs& seven = feeds.inputs[0][2];
    REQUIRE(seven.n == 7);
    const std::vector<float> batch = session.Run(seven.Views())[0].data;
    for (std::int64_t k = 0; k < 7; ++k) {
      std::vector<float> image(seven.x.begin() + k * 192, seven.x.begin() + (k + 1) * 192);
      const std::vector<float> alone = session.Run({{"x", {ElementType::kFloat, {1, 3, 8, 8}, image.data()}}})[0].data;
      for (std::size_t i = 0; i < 5; ++i) CHECK(alone[i] == Approx(batch[std::size_t(k) * 5 + i]).margin(1e-5));
    }
    CHECK(session.stats().compiles == 3);
  }
  // SessionOptions::threads holds for every compile a Run makes, not only for
  // the steps: a Run whose shape another thread compiled compiles its own
  // instance (shape_schedule.h), and its primitives' team is fixed then.
  // This thread's own Runs formed none either. (In one process with tests
  // that ran teams before, vacuous.)
  CHECK(ProcessThreads() <= threads_before);
}

TEST_CASE("session: concurrent Runs through a cache smaller than their shapes evict and recompile", "[session][threads]") {
  // Three batch sizes through a cache of two: schedules are evicted while
  // other threads still run on them and return their instances to them.
  test::TempDir dir("session_threads");
  const long threads_before = ProcessThreads();
  SessionOptions options = OneThreadPerRun();
  options.shape_cache_size = 2;
  InferenceSession session(test::WriteModel(dir, test::kBatchModel), options);
  std::atomic<int> wrong{0};
  const long other_threads = OnThreads([&](int t) {
    for (int r = 0; r < kRuns; ++r) {
      BatchInputs in(BatchOf(t, r), t * 100 + r);
      const std::vector<float> got = session.Run(in.Views())[0].data;
      const std::vector<double> want = in.Reference();  // recompiled schedules may pick other kernels: not bit-equal
      for (std::size_t i = 0; i < want.size(); ++i)
        if (std::abs(got[i] - want[i]) > 1e-5) ++wrong;
    }
  });
  CHECK(wrong == 0);
  const SessionStats stats = session.stats();
  CHECK(stats.cached_shapes == 2);
  CHECK(stats.evictions == stats.compiles - 2);
  CHECK(stats.cache_hits + stats.compiles == kThreads * kRuns);
  CHECK(other_threads <= threads_before);  // no OpenMP team formed, as above
}

TEST_CASE("session: two threads on resnet18 with different images get their own outputs", "[session][models][threads]") {
  test::ModelCase c = test::LoadCase("resnet18");
  InferenceSession session(c.dir + "/model.onnx", OneThreadPerRun());
  std::vector<Tensor> images = {c.inputs[0], c.inputs[0]};
  for (float& v : images[1].data) v = -0.5f * v;
  std::vector<std::vector<float>> single;
  for (const Tensor& image : images) single.push_back(session.Run(test::ViewsOf({image}, session))[0].data);
  REQUIRE(single[0] != single[1]);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 3; ++r)
        if (session.Run(test::ViewsOf({images[std::size_t(t)]}, session))[0].data != single[std::size_t(t)]) ++mismatches;
    });
  for (std::thread& t : threads) t.join();
  CHECK(mismatches == 0);
  CHECK(session.stats().plan_instances <= 2);  // never more instances than calls at once
}

// Last of the file: the teams it forms stay in the process (ProcessThreads above).
// Each Run an OpenMP team of two (SessionOptions::threads = 2), four Runs at
// once: oneDNN's primitives and our kernels split across a team while other
// teams run the same schedule's other instances and the shared prepacked
// weights. Under ThreadSanitizer, LLVM's Archer (an OMPT tool: libomp's
// barriers and task edges as happens-before, tests/CMakeLists.txt) makes the
// uninstrumented runtime's synchronization visible, so our code running on a
// team's workers is checked too.
TEST_CASE("session: concurrent Runs each on an OpenMP team of two equal single-threaded ones", "[session][threads]") {
  test::TempDir dir("session_threads");
  const long threads_before = ProcessThreads();
  constexpr int kImage = 64;  // steps large enough to share out to a team
  SessionOptions options;
  options.threads = 2;
  InferenceSession session(test::WriteModel(dir, test::SmallCnnModel(kImage)), options);
  const Feeds<CnnInputs> feeds(kRuns, kImage);
  const Concurrent run = RunConcurrently(session, feeds.views);
  CHECK(run.mismatches == 0);
  CHECK(session.stats().compiles == 3);
  // Teams formed, the callers' and then this thread's: their workers are
  // here. (ctest runs each case in a process of its own.)
  CHECK(run.other_threads > threads_before);
  CHECK(ProcessThreads() > threads_before);
}

// A batch that runs as passes at once (session.h: SessionOptions::threads 2,
// a batch 2 divides) starts helper threads inside the Run, each on an
// instance of its own from the same pool the concurrent callers take theirs
// from: batch 4 as passes of one sample, two at a time; 7 as passes one
// after another on a team of two; 1 as one pass.
TEST_CASE("session: concurrent Runs whose batches run as passes at once equal single-threaded ones",
          "[session][threads]") {
  test::TempDir dir("session_threads");
  constexpr int kImage = 16;
  SessionOptions options;
  options.threads = 2;
  options.max_samples_per_pass = 1;
  InferenceSession session(test::WriteModel(dir, test::SmallCnnModel(kImage)), options);
  const Feeds<CnnInputs> feeds(kRuns / 2, kImage);
  CHECK(RunConcurrently(session, feeds.views).mismatches == 0);
  const SessionStats stats = session.stats();
  REQUIRE(stats.shapes.size() == 3);
  for (const CachedShape& shape : stats.shapes) {
    const std::int64_t batch = shape.input_shapes.at("x")[0];
    INFO("batch " << batch);
    CHECK(shape.samples_per_pass == (batch == 1 ? 0 : 1));
    CHECK(shape.concurrent_passes == (batch == 4 ? 2 : 1));
  }
  // Each image of batch 4 gives what it gives alone.
  const CnnInputs& four = feeds.inputs[0][1];
  REQUIRE(four.n == 4);
  const std::vector<float> batch = session.Run(four.Views())[0].data;
  const std::int64_t pixels = 3 * kImage * kImage;
  for (std::int64_t k = 0; k < 4; ++k) {
    std::vector<float> image(four.x.begin() + k * pixels, four.x.begin() + (k + 1) * pixels);
    const std::vector<float> alone =
        session.Run({{"x", {ElementType::kFloat, {1, 3, kImage, kImage}, image.data()}}})[0].data;
    for (std::size_t i = 0; i < 5; ++i) CHECK(alone[i] == Approx(batch[std::size_t(k) * 5 + i]).margin(1e-5));
  }
}

}  // namespace
}  // namespace onnxfuse
