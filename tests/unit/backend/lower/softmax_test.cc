// Softmax and LogSoftmax (src/backend/lower/softmax.cc): over one axis from
// opset 13, over all trailing axes before. Numbers are checked against the
// definition in double.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "onnxfuse/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::TensorFrom;
using test::Wave;

TEST_CASE("Softmax and LogSoftmax: over one axis from opset 13, over all trailing axes before", "[backend_ops]") {
  Tensor x = TensorFrom({2, 3, 4}, Wave);
  // y[i] = log(exp(x[i]) / sum over the normalized group of exp(x[j])), the
  // group being `group` consecutive elements of the plain [2, 3, 4] tensor
  // (opset 11, axis 1: 12; opset 13, axis 2: 4).
  auto log_softmax = [&](std::size_t group) {
    std::vector<double> y;
    for (std::size_t g = 0; g < x.data.size(); g += group) {
      double sum = 0;
      for (std::size_t i = g; i < g + group; ++i) sum += std::exp(static_cast<double>(x.data[i]));
      for (std::size_t i = g; i < g + group; ++i) y.push_back(x.data[i] - std::log(sum));
    }
    return y;
  };
  auto exp_of = [](std::vector<double> v) {
    for (double& e : v) e = std::exp(e);
    return v;
  };
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    INFO(op);
    const bool log = std::string(op) == "LogSoftmax";
    const std::string opset11 = std::string(R"(<ir_version: 8, opset_import: ["" : 11]>
      g (float[2,3,4] x) => (float[2,3,4] y) {
        y = )") + op + R"( <axis = 1> (x)
      })";
    CheckBoth(opset11, {x}, log ? log_softmax(12) : exp_of(log_softmax(12)), 1e-5);
    const std::string opset13 = std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3,4] x) => (float[2,3,4] y) {
        y = )") + op + R"( (x)
      })";
    CheckBoth(opset13, {x}, log ? log_softmax(4) : exp_of(log_softmax(4)), 1e-5);
  }
}
