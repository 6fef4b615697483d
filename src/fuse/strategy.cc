// Strategy names, parsed in this one place (include/onnxfuse/strategy.h).
#include "onnxfuse/strategy.h"

#include "onnxfuse/error.h"

namespace onnxfuse {

namespace {

constexpr Strategy kAll[] = {Strategy::kPattern, Strategy::kPostdom, Strategy::kGreedy};

}  // namespace

const std::string& StrategyName(Strategy strategy) {
  return StrategyNames()[static_cast<std::size_t>(strategy)];
}

const std::vector<std::string>& StrategyNames() {
  // Indexed by the enum's values, in their order.
  static const std::vector<std::string> names = {"pattern", "postdom", "greedy"};
  return names;
}

Strategy ParseStrategy(const std::string& name) {
  for (Strategy strategy : kAll)
    if (StrategyName(strategy) == name) return strategy;
  std::string valid;
  for (const std::string& known : StrategyNames()) valid += (valid.empty() ? "" : ", ") + known;
  throw Error(ErrorKind::kUsage, "unknown strategy '" + name + "'; the strategies are: " + valid);
}

}  // namespace onnxfuse
