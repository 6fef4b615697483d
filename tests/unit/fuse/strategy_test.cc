// Strategy names (src/fuse/strategy.cc): one default, parsed in one place.
#include <catch2/catch.hpp>

#include "onnxfuse/error.h"
#include "onnxfuse/strategy.h"
#include "test_models.h"

namespace onnxfuse {
namespace {

TEST_CASE("strategies by name, the default pattern", "[strategy]") {
  CHECK(StrategyNames() == std::vector<std::string>{"pattern", "postdom", "greedy"});
  CHECK(kDefaultStrategy == Strategy::kPattern);
  for (Strategy s : {Strategy::kPattern, Strategy::kPostdom, Strategy::kGreedy})
    CHECK(ParseStrategy(StrategyName(s)) == s);
  CHECK(StrategyName(Strategy::kPostdom) == "postdom");
}

TEST_CASE("an unknown strategy is a usage error naming it and the valid ones", "[strategy]") {
  for (const std::string bad : {"fastest", "", "Pattern"}) {
    const test::ThrownError e = test::ErrorOf([&] { ParseStrategy(bad); });
    CHECK(e.kind == ErrorKind::kUsage);
    CHECK(e.message == "unknown strategy '" + bad + "'; the strategies are: pattern, postdom, greedy");
  }
}

}  // namespace
}  // namespace onnxfuse
