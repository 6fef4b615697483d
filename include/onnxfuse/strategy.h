// The fusion strategies, their names and the one default: what `onnx-fuse
// --strategy`, `onnx-fuse run --strategy`, SessionOptions::strategy and the
// Python module's `strategy=` choose between.
#pragma once

#include <string>
#include <vector>

namespace onnxfuse {

enum class Strategy {
  kPattern,  ///< "pattern": the pattern library by benefit, then the post-dominator fuser
  kPostdom,  ///< "postdom": TVM's post-dominator partitioner
  kGreedy,   ///< "greedy": chains ended by forks, joins and shape changes
};

/// The one default of the fuse path, `run` and InferenceSession.
inline constexpr Strategy kDefaultStrategy = Strategy::kPattern;

/// The strategy's name: "pattern", "postdom" or "greedy".
const std::string& StrategyName(Strategy strategy);

/// Every strategy's name, in the order `--help` lists them.
const std::vector<std::string>& StrategyNames();

/// The strategy named `name`. Throws Error(kUsage) "unknown strategy 'NAME';
/// the strategies are: pattern, postdom, greedy" for any other text.
Strategy ParseStrategy(const std::string& name);

}  // namespace onnxfuse
