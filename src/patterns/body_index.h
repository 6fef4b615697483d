// The pattern matcher's view of a pattern's function body (pattern_matcher.cc):
// its values numbered, and each body node's inputs and outputs by number.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

namespace onnxfuse::detail {

/// A pattern body's values by index: function inputs first, then body node
/// outputs in node order; per body node, its inputs and outputs as value indices.
struct BodyIndex {
  struct BodyValue {
    std::string name;
    int input = -1;     // function input index
    int producer = -1;  // body node index
    int output = -1;    // output slot of the producer
  };
  std::vector<BodyValue> values;
  std::vector<std::vector<int>> node_inputs;  // per body node; -1 for an omitted input ("")
  std::vector<std::vector<int>> node_outputs;
  std::vector<int> outputs;                   // function outputs as value indices (inputs are 0..n-1)

  explicit BodyIndex(const onnx::FunctionProto& fn) {
    std::unordered_map<std::string, int> by_name;
    auto add = [&](const std::string& name) {
      by_name[name] = static_cast<int>(values.size());
      values.push_back({name});
      return static_cast<int>(values.size()) - 1;
    };
    for (int i = 0; i < fn.input_size(); ++i) values[static_cast<std::size_t>(add(fn.input(i)))].input = i;
    for (int k = 0; k < fn.node_size(); ++k) {
      auto& ins = node_inputs.emplace_back();
      for (const auto& name : fn.node(k).input()) ins.push_back(name.empty() ? -1 : by_name.at(name));
      auto& outs = node_outputs.emplace_back();
      for (int o = 0; o < fn.node(k).output_size(); ++o) {
        const std::string& name = fn.node(k).output(o);
        int v = name.empty() ? -1 : add(name);
        if (v >= 0) values[static_cast<std::size_t>(v)].producer = k, values[static_cast<std::size_t>(v)].output = o;
        outs.push_back(v);
      }
    }
    for (const auto& name : fn.output()) outputs.push_back(by_name.at(name));
  }
};

}  // namespace onnxfuse::detail
