// ONNX's node tests (/usr/share/libonnx-testdata/data/node/test_<op>*) run on
// the host evaluator alone: each model loaded by onnxfuse's loader, its nodes
// evaluated in order by eval::EvalOnHost, each result narrowed to its
// declared type (eval::NarrowTo, as a host step does), every output compared with test_data_set_0's at rtol 1e-3 / atol 1e-7.
// Header-only: the host_eval*_test.cc files share it.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "eval/host_eval.h"
#include "eval/host_tensor.h"
#include "onnxfuse/error.h"
#include "load/loader.h"
#include "ir/tensor_io.h"
#include "test_models.h"

#include <catch2/catch.hpp>

namespace onnxfuse::test {

inline const char* const kNodeTestDir = "/usr/share/libonnx-testdata/data/node";

/// The node-test folders of one op: test_<name>, test_<name>_* and
/// test_<name><digit>* (test_and2d), without the
/// *_expanded ones (those test the op's function body, other ops), sorted.
/// `name` is the folder spelling (top_k, gather_elements, ...).
inline std::vector<std::string> NodeTestDirs(const std::string& name) {
  std::vector<std::string> dirs;
  const std::string stem = "test_" + name;
  for (const auto& entry : std::filesystem::directory_iterator(kNodeTestDir)) {
    const std::string folder = entry.path().filename().string();
    const char next = folder.size() > stem.size() ? folder[stem.size()] : '_';
    const bool match = folder.rfind(stem, 0) == 0 && (next == '_' || std::isdigit(static_cast<unsigned char>(next)));
    const bool expanded = folder.size() > 9 && folder.compare(folder.size() - 9, 9, "_expanded") == 0;
    if (match && !expanded) dirs.push_back(entry.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

/// "" when `actual` matches `expected` elementwise (|a - e| <= 1e-7 + 1e-3 |e|,
/// NaN meets NaN, infinities equal), with the same ONNX element type and dims; else why not.
inline std::string CompareHostTensors(const Tensor& expected, const Tensor& actual) {
  if (expected.DataType() != actual.DataType() || expected.elem_type != actual.elem_type)
    return "element type " + std::to_string(actual.DataType()) + ", expected " + std::to_string(expected.DataType());
  if (expected.dims != actual.dims) return "dims differ";
  const bool is_int = expected.elem_type == onnx::TensorProto::INT64;
  for (std::int64_t i = 0; i < expected.NumElements(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (is_int) {
      if (expected.int_data[k] != actual.int_data[k])
        return "[" + std::to_string(i) + "] " + std::to_string(actual.int_data[k]) + ", expected " +
               std::to_string(expected.int_data[k]);
      continue;
    }
    const double e = expected.data[k], a = actual.data[k];
    const bool ok = std::isnan(e) || std::isnan(a) ? std::isnan(e) && std::isnan(a)
                    : std::isinf(e) || std::isinf(a) ? e == a
                                                     : std::fabs(a - e) <= 1e-7 + 1e-3 * std::fabs(e);
    if (!ok) return "[" + std::to_string(i) + "] " + std::to_string(a) + ", expected " + std::to_string(e);
  }
  return "";
}

/// Runs the node test in `dir` on the host: "" when every output matches, else
/// the first difference or the error raised (its message).
inline std::string RunNodeTestOnHost(const std::string& dir) {
  try {
    const Graph graph = LoadModel(dir + "/model.onnx");
    const std::string set = dir + "/test_data_set_0";
    const std::vector<Tensor> inputs = ReadTensorDir(set, "input"), outputs = ReadTensorDir(set, "output");
    std::map<ValueId, Tensor> known;
    for (ValueId v = 0; v < graph.values().size(); ++v)
      if (const auto* proto = graph.ConstantTensor(v); proto && graph.value(v).initializer >= 0)
        known[v] = TensorFromProto(*proto, graph.value(v).name);
    if (inputs.size() != graph.inputs().size()) return "the data set has another number of inputs";
    for (std::size_t i = 0; i < inputs.size(); ++i) known[graph.inputs()[i]] = inputs[i];
    for (const Node& node : graph.nodes()) {
      std::vector<const Tensor*> in;
      for (std::size_t i = 0; i < node.num_explicit_inputs; ++i)
        in.push_back(node.inputs[i] == kNoValue ? nullptr : &known.at(node.inputs[i]));
      auto results = eval::EvalOnHost(node, in, graph.opset());
      for (std::size_t i = 0; i < node.outputs.size() && i < results.size(); ++i) {
        if (node.outputs[i] == kNoValue) continue;
        eval::NarrowTo(results[i], graph.value(node.outputs[i]).type.elem_type);
        known[node.outputs[i]] = std::move(results[i]);
      }
    }
    if (outputs.size() != graph.outputs().size()) return "the data set has another number of outputs";
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const auto it = known.find(graph.outputs()[i]);
      if (it == known.end()) return "output " + std::to_string(i) + " was not computed";
      const std::string diff = CompareHostTensors(outputs[i], it->second);
      if (!diff.empty()) return "output " + std::to_string(i) + ": " + diff;
    }
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

/// A default-domain node named 'n' of `op` with these attributes, for hand cases.
inline Node NodeOf(const std::string& op, const std::vector<onnx::AttributeProto>& attrs = {}) {
  Node node;
  node.name = "n";
  node.op_type = op;
  node.proto.set_op_type(op);
  for (const auto& a : attrs) *node.proto.add_attribute() = a;
  return node;
}

inline onnx::AttributeProto IntAttr(const std::string& name, std::int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

inline onnx::AttributeProto IntsAttr(const std::string& name, const std::vector<std::int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (std::int64_t e : v) a.add_ints(e);
  return a;
}

inline onnx::AttributeProto FloatAttr(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

inline onnx::AttributeProto StringAttr(const std::string& name, const std::string& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}

/// A graph of one node, `body`, at default-domain opset `opset`, for hand
/// cases that evaluate its node 0 ("g (" + inputs + ") => (" + outputs + ")").
inline Graph OneNodeGraph(const std::string& inputs, const std::string& outputs, const std::string& body,
                          int opset = 13) {
  return GraphFromText("<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\ng (" + inputs +
                           ") => (" + outputs + ") {\n" + body + "\n}");
}

/// Every element of `t`, whatever its storage, within `margin` of `expected`.
inline void CheckValues(const Tensor& t, const std::vector<double>& expected, double margin) {
  const auto v = eval::HostValues(t);
  REQUIRE(v.size() == expected.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i);
    CHECK(v[i] == Approx(expected[i]).margin(margin));
  }
}

/// Requires `count` node tests of op folder `name` and that each one passes on the host.
inline void CheckNodeTestsOnHost(const std::string& name, std::size_t count) {
  const auto dirs = NodeTestDirs(name);
  INFO("node tests of " << name);
  CHECK(dirs.size() == count);  // a missing (or new) folder fails
  for (const auto& dir : dirs) {
    INFO(dir);
    CHECK(RunNodeTestOnHost(dir) == "");
  }
}

}  // namespace onnxfuse::test
