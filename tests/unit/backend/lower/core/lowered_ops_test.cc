// LowersOp (backend/lower/core/lowered_ops.h): the function ops the backend keeps
// and those function expansion replaces; each kept one is lowered, not refused.
#include <catch2/catch.hpp>

#include "backend/lower/core/lowered_ops.h"
#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using backend::LowersOp;

TEST_CASE("LowersOp: the ops LowerGroup dispatches, not the function ops it has no lowering for", "[lowered_ops]") {
  for (const char* op : {"Conv", "MatMul", "Add", "Relu", "HardSwish", "Celu", "Shrink", "ThresholdedRelu",
                         "LayerNormalization", "Softmax", "LogSoftmax", "GreaterOrEqual", "LessOrEqual", "Range",
                         "MaxPool", "GlobalAveragePool", "ReduceMean", "ReduceLogSumExp", "Transpose", "Gather",
                         "Where", "Cast", "CastLike", "MeanVarianceNormalization",
                         "DynamicQuantizeLinear"})  // the last three: host steps
    CHECK(LowersOp("", op));
  for (const char* op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", "Bernoulli", "HannWindow"})
    CHECK_FALSE(LowersOp("", op));
  CHECK(LowersOp("ai.onnx", "Relu"));
  CHECK_FALSE(LowersOp("com.microsoft", "Relu"));
}

TEST_CASE("LowersOp's function ops compile as they are", "[lowered_ops]") {
  for (const char* op : {"HardSwish", "Celu", "Softmax", "LogSoftmax"}) {
    CAPTURE(op);
    REQUIRE(LowersOp("", op));
    Graph g = test::GraphFromText(test::ChainText({op}, "2,3", 14));
    CHECK_NOTHROW(ExecutablePlan::Compile(g, FusionPlan{}, CompileOptions{false}));
  }
}

TEST_CASE("an operator of another domain is refused naming the domain", "[lowered_ops]") {
  // ONNX Runtime's quantizer writes com.microsoft contrib ops in its QOperator format.
  const std::string message = test::CompileError(R"(<ir_version: 8, opset_import: ["" : 13, "com.microsoft" : 1]>
    g (uint8[4] a) => (uint8[4] y) {
      s = Constant <value = float {0.1}> ()
      z = Constant <value = uint8 {128}> ()
      y = com.microsoft.QLinearAdd (a, s, z, a, s, z, s, z)
    })");
  CHECK_THAT(message, Catch::Contains("node 'QLinearAdd_2' (QLinearAdd): operator of domain 'com.microsoft' not supported"));
}
