// AveragePool-19 and LpPool-18 down to opset 17 (src/load/adapt_pooling.cc).
#include "down_context.h"

#include "onnxfuse/error.h"
#include "test_models.h"

using namespace onnxfuse;
using load::AdaptPooling;
using test::AdapterScope;
using test::NodeFromText;

TEST_CASE("AveragePool: dilations of 1 are dropped, others refused", "[adapt_pooling]") {
  AdapterScope scope(19);
  auto r = AdaptPooling(NodeFromText("y = AveragePool <kernel_shape = [3, 3], dilations = [1, 1]> (x)", "p"), scope.ctx);
  REQUIRE(r.nodes.size() == 1);
  CHECK(FindAttribute(r.nodes[0], "dilations") == nullptr);
  CHECK(test::IntsOf(r.nodes[0], "kernel_shape") == std::vector<std::int64_t>{3, 3});
  CHECK(r.what == "AveragePool-19: dilations of 1 dropped");
  auto e = test::ErrorOf([&] {
    AdaptPooling(NodeFromText("y = AveragePool <kernel_shape = [3, 3], dilations = [1, 2]> (x)", "p"), scope.ctx);
  });
  CHECK(e.kind == ErrorKind::kUnsupported);
  CHECK(e.message == "new.onnx: node 'p' (AveragePool, opset 19): dilations other than 1 have no equivalent at opset 17");
}

TEST_CASE("LpPool: ceil_mode 0 is dropped, 1 refused", "[adapt_pooling]") {
  AdapterScope scope(18);
  auto r = AdaptPooling(NodeFromText("y = LpPool <kernel_shape = [2], p = 3, ceil_mode = 0> (x)", "lp"), scope.ctx);
  CHECK(FindAttribute(r.nodes[0], "ceil_mode") == nullptr);
  CHECK(AttrInt(r.nodes[0], "p", 0) == 3);
  CHECK(r.what == "LpPool-18: ceil_mode 0 dropped");
  auto e = test::ErrorOf([&] { AdaptPooling(NodeFromText("y = LpPool <kernel_shape = [2], ceil_mode = 1> (x)", "lp"), scope.ctx); });
  CHECK_THAT(e.message, Catch::EndsWith("ceil_mode = 1 has no equivalent at opset 17"));
}
