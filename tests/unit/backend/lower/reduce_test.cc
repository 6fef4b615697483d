// Reductions (src/backend/lower/reduce.cc, EmitReduce).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

TEST_CASE("a reduction over axes of size 1 reduces each element alone", "[reduce]") {
  // oneDNN's reduction refuses a destination equal to its source: this was an
  // internal error (found by the differential tester as ReduceMean of [1,1]).
  const Tensor x = test::TensorFrom({2, 1, 3}, [](std::int64_t i) { return 1.f + test::Wave(5 * i); });  // positive: ReduceLogSum
  for (const std::string op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                               "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    for (int keepdims : {1, 0}) {
      INFO(op << " keepdims " << keepdims);
      const std::string out = keepdims ? "2,1,3" : "2,3";
      const bool axes_input = op == "ReduceSum";  // ReduceSum-13 takes its axes as an input
      const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                               "g (float[2,1,3] x, int64[1] axes = {1}) => (float[" + out + "] y) {\n  r = " + op +
                               " <" + (axes_input ? "" : "axes = [1], ") + "keepdims = " + std::to_string(keepdims) +
                               "> (x" + (axes_input ? ", axes" : "") + ")\n  y = Identity (r)\n}";
      std::vector<double> expected;
      for (float v : x.data) {
        double e = v;
        if (op == "ReduceL1" || op == "ReduceL2") e = std::fabs(v);
        else if (op == "ReduceSumSquare") e = double{v} * v;
        else if (op == "ReduceLogSum") e = std::log(v);
        expected.push_back(e);
      }
      test::PlanRun fused = test::CheckBoth(text, {x}, expected, 1e-5);
      CHECK(fused.outputs.at(0).dims == (keepdims ? std::vector<std::int64_t>{2, 1, 3} : std::vector<std::int64_t>{2, 3}));
    }
}
