// The CPU a plan needs (src/backend/runtime/cpu_requirement.h): below AVX2,
// as oneDNN sees it, compiling is refused as unsupported with a message
// naming the ISA; at AVX2 and above the same model compiles. ctest runs this
// natively and again under ONEDNN_MAX_CPU_ISA=SSE41 (cpu_requirement.SSE41).
#include <catch2/catch.hpp>

#include <dnnl.hpp>

#include <string>

#include "onnxfuse/error.h"
#include "backend/plan/plan_file.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;

TEST_CASE("a plan needs AVX2: refused below it, naming the ISA, and compiled at or above it", "[cpu_requirement]") {
  const Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4] x) => (float[1,4] y) {
      y = Relu (x)
    })");
  const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx2 = static_cast<unsigned>(dnnl::cpu_isa::avx2);
  INFO("oneDNN runs at " << CpuIsaName());
  if ((effective & avx2) == avx2) {
    CHECK(test::RunPlan(graph, true, {test::TensorOf("x", {1, 4}, {-1, 0, 1, 2})}).outputs.at(0).data ==
          std::vector<float>{0, 0, 1, 2});
    return;
  }
  const std::string message = test::CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4] x) => (float[1,4] y) {
      y = Relu (x)
    })");
  CHECK(message.find("this CPU runs oneDNN at " + CpuIsaName()) != std::string::npos);
  CHECK(message.find("need AVX2 with FMA") != std::string::npos);
}
