// The spatial mean (src/backend/lower/ops/spatial_mean.cc): GlobalAveragePool
// and ReduceMean over the spatial axes give the same bits in a plan, and the
// mean within rounding of a double reference.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

namespace {

std::string Dims(const std::vector<std::int64_t>& dims) {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s;
}

// ReduceMean over axes 2.. and GlobalAveragePool of the same tensor, as two
// outputs; with `conv`, of a 3x3 Conv's output, which the fused plan keeps in a
// channel-blocked layout.
std::string MeansModel(const std::vector<std::int64_t>& in, bool conv) {
  std::string axes;
  std::vector<std::int64_t> out = in;
  for (std::size_t d = 2; d < in.size(); ++d) axes += (d > 2 ? "," : "") + std::to_string(d), out[d] = 1;
  const std::string x = conv ? "c" : "x";
  std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[" + Dims(in) + "] x";
  if (conv) {  // a constant weight, so that the Conv is lowered as one
    std::string w;
    for (std::int64_t i = 0; i < in[1] * in[1] * 9; ++i) w += (i ? "," : "") + std::to_string(0.1f * test::Wave(11 * i + 5));
    text += ", float[" + std::to_string(in[1]) + "," + std::to_string(in[1]) + ",3,3] w = {" + w + "}";
  }
  text += ") => (float[" + Dims(out) + "] r, float[" + Dims(out) + "] p) {\n";
  if (conv) text += "  c = Conv <pads = [1,1,1,1]> (x, w)\n";
  text += "  r = ReduceMean <axes = [" + axes + "]> (" + x + ")\n  p = GlobalAveragePool (" + x + ")\n}";
  return text;
}

}  // namespace

TEST_CASE("ReduceMean over the spatial axes and GlobalAveragePool agree to the bit", "[reduce]") {
  for (const std::vector<std::int64_t>& in :
       {std::vector<std::int64_t>{2, 3, 12}, {2, 17, 12, 12}, {1, 8, 7, 7}, {1, 5, 3, 4, 6}, {1, 4, 1, 1}})
    for (bool fuse : {false, true}) {
      INFO("input " << Dims(in) << (fuse ? " fused" : " unfused"));
      const Graph graph = test::GraphFromText(MeansModel(in, false));
      const Tensor x = test::TensorFrom(in, [](std::int64_t i) { return 3.f * test::Wave(7 * i) + 0.1f; });
      const test::PlanRun run = test::RunPlan(graph, fuse, {x});
      REQUIRE(run.outputs.size() == 2);
      CHECK(run.outputs[0].data == run.outputs[1].data);
      std::int64_t rows = 1;
      for (std::size_t d = 2; d < in.size(); ++d) rows *= in[d];
      std::vector<double> mean(static_cast<std::size_t>(in[0] * in[1]), 0.0);
      for (std::size_t i = 0; i < x.data.size(); ++i) mean[i / static_cast<std::size_t>(rows)] += x.data[i];
      for (double& m : mean) m /= static_cast<double>(rows);
      test::CheckClose(run.outputs[0], mean, 1e-6, 1e-6);
    }
}

TEST_CASE("the two means agree on a Conv's channel-blocked output too", "[reduce]") {
  // The fused plan reads the Conv's layout as it is (our kernel); the unfused
  // one reads it plain (oneDNN's reduction).
  const std::vector<std::int64_t> in{2, 17, 12, 12};
  const Graph graph = test::GraphFromText(MeansModel(in, true));
  const Tensor x = test::TensorFrom(in, [](std::int64_t i) { return test::Wave(3 * i); });
  for (bool fuse : {false, true}) {
    INFO((fuse ? "fused" : "unfused"));
    const test::PlanRun run = test::RunPlan(graph, fuse, {x});
    REQUIRE(run.outputs.size() == 2);
    CHECK(run.outputs[0].data == run.outputs[1].data);
  }
}

TEST_CASE("a GlobalAveragePool whose last spatial dim is 1 runs on our reduction, not oneDNN's reference one",
          "[backend_ops]") {
  // oneDNN 2.6's reduction of a plain [1,16,12,1] over its last two axes is
  // ref:any (found by the differential tester).
  const Tensor x = test::TensorFrom({1, 16, 12, 1}, [](std::int64_t i) { return test::Wave(3 * i); });
  std::vector<double> means;
  for (std::size_t c = 0; c < 16; ++c) {
    double sum = 0;
    for (std::size_t k = 0; k < 12; ++k) sum += x.data[c * 12 + k];
    means.push_back(sum / 12);
  }
  const test::PlanRun fused = test::CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,16,12,1] x) => (float[1,16,1,1] y) {
      y = GlobalAveragePool (x)
    })",
                                              {x}, means, 1e-6);
  INFO(test::StepList(fused));
  CHECK(test::SlowSteps(fused) == 0);
}
