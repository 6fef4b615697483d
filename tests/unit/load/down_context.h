// Helpers for the tests of the down-conversion adapters (src/load/adapt_*.cc,
// down_helpers.cc): a DownContext over a scope the test fills in, and nodes
// written in ONNX text syntax. Header-only: the test binary globs *_test.cc.
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

#include <onnx/defs/parser.h>

#include "load/down_adapters.h"

namespace onnxfuse::test {

/// What an adapter sees besides its node: constants and declared dims by
/// name; what it adds: initializers; fresh names are "<base>" then "<base>_1", ...
struct AdapterScope {
  std::map<std::string, onnx::TensorProto> constants;
  std::map<std::string, std::vector<std::int64_t>> dims;
  std::vector<onnx::TensorProto> added;
  std::map<std::string, int> issued;
  load::DownContext ctx;

  explicit AdapterScope(std::int64_t from_opset) {
    ctx.source = "new.onnx";
    ctx.from_opset = from_opset;
    ctx.constant = [this](const std::string& name) -> const onnx::TensorProto* {
      auto it = constants.find(name);
      return it == constants.end() ? nullptr : &it->second;
    };
    ctx.dims = [this](const std::string& name) -> std::optional<std::vector<std::int64_t>> {
      auto it = dims.find(name);
      if (it == dims.end()) return std::nullopt;
      return it->second;
    };
    ctx.fresh = [this](const std::string& base) {
      const int n = issued[base]++;
      return n == 0 ? base : base + "_" + std::to_string(n);
    };
    ctx.add_initializer = [this](onnx::TensorProto t) { added.push_back(std::move(t)); };
  }
  AdapterScope(const AdapterScope&) = delete;  // ctx refers to this object
  AdapterScope& operator=(const AdapterScope&) = delete;

  /// Makes `name` an int64 constant [values.size()].
  void Ints(const std::string& name, const std::vector<std::int64_t>& values) {
    constants[name] = load::IntTensor(name, values);
  }

  /// The added initializer named `name`; fails the test when there is none.
  const onnx::TensorProto& Added(const std::string& name) const {
    for (const auto& t : added)
      if (t.name() == name) return t;
    FAIL("no initializer " << name << " was added");
    throw std::logic_error("unreachable");
  }
};

/// One node in ONNX text syntax, e.g. "y = ReduceMean <keepdims = 0> (x, axes)", named `name`.
inline onnx::NodeProto NodeFromText(const std::string& text, const std::string& name = "n") {
  onnx::NodeProto node;
  const auto status = onnx::OnnxParser::Parse(node, text.c_str());
  if (!status.IsOK()) FAIL("node does not parse: " << status.ErrorMessage());
  node.set_name(name);
  return node;
}

/// Checks that `adapt` (load::AdaptPad, ...) leaves the node of `text` (as
/// NodeFromText reads it) as it is, from opset `from_opset`: the same node
/// first in what it returns, and nothing reported.
inline void CheckLeftAsItIs(load::Rewrite (*adapt)(const onnx::NodeProto&, load::DownContext&),
                            const std::string& text, std::int64_t from_opset) {
  AdapterScope scope(from_opset);
  const onnx::NodeProto node = NodeFromText(text);
  const load::Rewrite r = adapt(node, scope.ctx);
  CHECK(r.what.empty());
  CHECK(r.nodes[0].SerializeAsString() == node.SerializeAsString());
}

/// Op types of `nodes`, in order.
inline std::vector<std::string> OpTypes(const std::vector<onnx::NodeProto>& nodes) {
  std::vector<std::string> types;
  for (const auto& n : nodes) types.push_back(n.op_type());
  return types;
}

/// Inputs (or outputs) of a node as a vector.
inline std::vector<std::string> Strings(const google::protobuf::RepeatedPtrField<std::string>& names) {
  return {names.begin(), names.end()};
}

/// The ints of attribute `name` of `node`; fails the test when absent.
inline std::vector<std::int64_t> IntsOf(const onnx::NodeProto& node, const std::string& name) {
  const auto* a = FindAttribute(node, name);
  if (!a) FAIL("node " << node.name() << " has no attribute " << name);
  return {a->ints().begin(), a->ints().end()};
}

/// The int64 values of an initializer the adapters write (IntTensor: int64_data).
inline std::vector<std::int64_t> IntValues(const onnx::TensorProto& t) {
  return {t.int64_data().begin(), t.int64_data().end()};
}

}  // namespace onnxfuse::test
