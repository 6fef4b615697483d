// One node test: load, compile fused and unfused, run every data set, compare.
//
// Weights as inputs: the backend prepacks Conv/ConvTranspose/Gemm weights and
// BatchNormalization parameters at build time, so it rejects them as graph
// inputs ("input 'W' must be a constant known at build time", "B must be a
// constant"), while the node tests feed them as inputs. When a compile names
// such a float graph input, it is bound as an initializer with the data set's
// value and the model is compiled again (the printed line says which inputs
// were bound); the op is then tested on the same numbers as the ONNX runner's.
// Integer inputs (Slice's starts, Gather's indices, Resize's sizes, ...), which
// the backend takes only as constants ("input 'indices' is not float32"), are
// bound the same way, as long as a float input stays a run-time input (else the
// test would exercise build-time evaluation only); so are a Loop's trip count
// and condition, which its unrolling needs at build time ("input 'M' must be a
// constant known at build time"), in the integer or bool type the model declares.
#include "run_case.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "onnxfuse/error.h"
#include "backend/runtime/executor.h"
#include "load/loader.h"
#include "backend/lower/core/lowered_ops.h"
#include "pipeline/prepare_model.h"
#include "session_run.h"

namespace onnxfuse::conformance {

namespace fs = std::filesystem;

namespace {

struct Diff {
  double max_abs = 0, max_rel = 0;
  std::string failure;  // "" = within tolerance
};

std::string Num(double v) {
  std::ostringstream out;
  out.precision(3);
  out << v;
  return out.str();
}

std::string DimsText(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Elementwise |a - e| <= atol + rtol * |e|; NaN must meet NaN, infinities equal.
Diff Compare(const Tensor& expected, const Tensor& actual) {
  Diff d;
  if (expected.elem_type != actual.elem_type) {
    d.failure = "element type " + std::to_string(actual.elem_type) + ", expected " + std::to_string(expected.elem_type);
    return d;
  }
  if (expected.dims != actual.dims) {
    d.failure = "shape " + DimsText(actual.dims) + ", expected " + DimsText(expected.dims);
    return d;
  }
  bool is_float = expected.elem_type == onnx::TensorProto::FLOAT;
  std::size_t n = is_float ? expected.data.size() : expected.int_data.size();
  auto at = [&](const Tensor& t, std::size_t i) { return is_float ? t.data[i] : static_cast<double>(t.int_data[i]); };
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double e = at(expected, i), a = at(actual, i);
    bool ok;
    if (std::isnan(e) || std::isnan(a)) ok = std::isnan(e) && std::isnan(a);
    else if (std::isinf(e) || std::isinf(a)) ok = e == a;
    else {
      double diff = std::fabs(a - e);
      ok = diff <= kAtol + kRtol * std::fabs(e);
      d.max_abs = std::max(d.max_abs, diff);
      if (e != 0) d.max_rel = std::max(d.max_rel, diff / std::fabs(e));
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad)
    d.failure = std::to_string(bad) + "/" + std::to_string(n) + " elements off, first [" + std::to_string(first) +
                "]: " + Num(at(actual, first)) + " expected " + Num(at(expected, first));
  return d;
}

struct Case {
  std::string path;
  onnx::ModelProto proto;
  std::vector<std::string> input_names;  // graph inputs that are not initializers, in order
};

// The data set's inputs, named after the graph inputs (by name, else by position).
std::vector<Tensor> ReadInputs(const Case& c, const fs::path& set) {
  if (c.input_names.empty()) return {};  // a model without inputs (test_constant)
  std::vector<Tensor> tensors = ReadTensorDir(set.string(), "input");
  bool by_name = std::all_of(tensors.begin(), tensors.end(), [&](const Tensor& t) {
    return std::count(c.input_names.begin(), c.input_names.end(), t.name) == 1;
  });
  for (std::size_t i = 0; !by_name && i < tensors.size() && i < c.input_names.size(); ++i)
    tensors[i].name = c.input_names[i];
  return tensors;
}

// `init` (Tensor's INT64 form of an integer or bool tensor) as the integer
// type `declared` the graph input has; anything else as it is.
onnx::TensorProto WithElementType(const onnx::TensorProto& init, const Tensor& t, std::int32_t declared) {
  if (t.elem_type != onnx::TensorProto::INT64 || declared == onnx::TensorProto::INT64 ||
      !(declared == onnx::TensorProto::BOOL || declared == onnx::TensorProto::INT32 ||
        declared == onnx::TensorProto::INT8 || declared == onnx::TensorProto::UINT8))
    return init;
  onnx::TensorProto typed;
  typed.set_name(init.name());
  typed.mutable_dims()->CopyFrom(init.dims());
  typed.set_data_type(declared);
  for (auto v : t.int_data) typed.add_int32_data(static_cast<std::int32_t>(declared == onnx::TensorProto::BOOL ? v != 0 : v));
  return typed;
}

// The model with `bound` inputs as initializers, in the types the graph declares.
onnx::ModelProto BoundModel(const Case& c, const std::vector<Tensor>& inputs, const std::set<std::string>& bound) {
  onnx::ModelProto proto = c.proto;
  for (const Tensor& t : inputs) {
    if (!bound.count(t.name)) continue;
    onnx::TensorProto init = TensorToProto(t);
    init.set_name(t.name);
    for (const auto& vi : proto.graph().input())  // Tensor holds BOOL, INT32, ... as INT64: the declared type back
      if (vi.name() == t.name) init = WithElementType(init, t, vi.type().tensor_type().elem_type());
    *proto.mutable_graph()->add_initializer() = init;
  }
  return proto;
}

// BoundModel loaded with unknown input dims pinned to the data's.
Graph Build(const Case& c, const std::vector<Tensor>& inputs, const std::set<std::string>& bound) {
  LoadOptions options;
  for (const Tensor& t : inputs) {
    if (bound.count(t.name)) continue;
    for (const auto& vi : c.proto.graph().input()) {
      if (vi.name() != t.name || !vi.type().has_tensor_type()) continue;
      const auto& type = vi.type().tensor_type();
      bool known = type.has_shape() && std::all_of(type.shape().dim().begin(), type.shape().dim().end(),
                                                   [](const auto& d) { return d.has_dim_value(); });
      if (!known) options.input_shapes[t.name] = t.dims;
    }
  }
  return LoadModelProto(BoundModel(c, inputs, bound), c.path, options, fs::path(c.path).parent_path().string());
}

// The graph input an Error(kUnsupported) asks to be a constant, or "": a float
// input named as needed at build time, or an integer input (not float32) when
// a float input that is not `bound` remains.
std::string WantedConstant(const Case& c, const std::optional<Graph>& graph, const std::string& message,
                           const std::set<std::string>& bound) {
  static const std::regex named("input '([^']+)' must be a constant"), gemm("node '([^']+)' \\(Gemm\\): B must be"),
      not_float("input '([^']+)' is not float32");
  std::smatch m;
  std::string name;
  bool integer = false;
  if (std::regex_search(message, m, named)) {
    name = m[1];
    for (const auto& vi : c.proto.graph().input())  // a trip count or condition: an integer or bool input
      if (vi.name() == name) integer = vi.type().tensor_type().elem_type() != onnx::TensorProto::FLOAT;
  } else if (graph && std::regex_search(message, m, gemm)) {
    for (const Node& node : graph->nodes())
      if (node.name == m[1].str() && node.inputs.size() > 1) name = graph->value(node.inputs[1]).name;
  } else if (std::regex_search(message, m, not_float)) {
    name = m[1], integer = true;
  }
  bool float_left = false;
  for (const auto& vi : c.proto.graph().input())
    float_left |= vi.name() != name && !bound.count(vi.name()) &&
                  vi.type().tensor_type().elem_type() == onnx::TensorProto::FLOAT &&
                  std::count(c.input_names.begin(), c.input_names.end(), vi.name());
  for (const auto& vi : c.proto.graph().input())
    if (vi.name() == name && std::count(c.input_names.begin(), c.input_names.end(), name) &&
        (integer ? float_left : vi.type().tensor_type().elem_type() == onnx::TensorProto::FLOAT))
      return name;
  return "";
}

void Fail(const std::string& what) { std::cout << "@@FAIL " << what << std::endl; }

[[noreturn]] void Unsupported(const std::string& why) {
  std::cout << "@@UNSUPPORTED " << why << std::endl;
  std::_Exit(0);
}

// Only Error(kUnsupported) leaves a test unclaimed: any other exception while
// loading a node test (a valid model by construction) is a failure of ours.
[[noreturn]] void Refused(const std::string& stage, const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  if (error && error->kind() == ErrorKind::kUnsupported) Unsupported(stage + ": " + e.what());
  Fail(stage + ": " + e.what());
  std::cout << "@@DONE" << std::endl;
  std::_Exit(0);
}

struct Plans {
  std::optional<Graph> graph;
  std::optional<ExecutablePlan> plan[2];  // fused, unfused
  std::string unsupported[2];             // Error(kUnsupported) of that mode's compile
  std::vector<std::string> errors;        // other compile errors: failures of a claimed test
};

const char* const kMode[2] = {"fused", "unfused"};

Plans CompileBoth(const Case& c, const std::vector<Tensor>& inputs, const std::set<std::string>& bound) {
  Plans p;
  // Prepared as `run` prepares a model (the front door, pipeline/prepare_model.h),
  // with the post-dominator fuser: If/Loop/Scan decided at build time
  // expanded, an If decided at run time as both branches and a Where (what
  // stays is unsupported in both modes), function ops the backend does not
  // lower expanded.
  PrepareOptions prepare;
  prepare.target = Target::kExecutable;
  prepare.fusion.strategy = Strategy::kPostdom;
  prepare.lowers = backend::LowersOp;
  FusionPlan fusion;
  try {
    PreparedModel prepared = PrepareGraph(Build(c, inputs, bound), prepare);
    p.graph.emplace(std::move(*prepared.graph));
    fusion = std::move(prepared.fusion);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUnsupported) throw;
    p.unsupported[0] = p.unsupported[1] = e.what();
    return p;
  }
  for (int m = 0; m < 2; ++m) {
    try {
      p.plan[m] = ExecutablePlan::Compile(*p.graph, fusion, CompileOptions{m == 0});
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kUnsupported) p.unsupported[m] = e.what();
      else p.errors.push_back(std::string(kMode[m]) + " compile: " + e.what());
    } catch (const std::exception& e) {
      p.errors.push_back(std::string(kMode[m]) + " compile: " + e.what());
    }
  }
  return p;
}

// One data set's outputs against the expected ones.
void CheckOutputs(const std::string& where, const std::vector<Tensor>& outputs, const fs::path& set) {
  std::vector<Tensor> expected = ReadTensorDir(set.string(), "output");
  if (outputs.size() != expected.size())
    Fail(where + ": " + std::to_string(outputs.size()) + " outputs, expected " + std::to_string(expected.size()));
  for (std::size_t k = 0; k < std::min(outputs.size(), expected.size()); ++k) {
    Diff d = Compare(expected[k], outputs[k]);
    std::cout << "@@CHECK " << d.max_abs << " " << d.max_rel << std::endl;
    if (!d.failure.empty()) Fail(where + " output '" + outputs[k].name + "': " + d.failure);
  }
}

}  // namespace

void RunCase(const std::string& dir, Via via) {
  Case c;
  c.path = (fs::path(dir) / "model.onnx").string();
  std::vector<fs::path> sets;
  for (int i = 0; fs::exists(fs::path(dir) / ("test_data_set_" + std::to_string(i))); ++i)
    sets.push_back(fs::path(dir) / ("test_data_set_" + std::to_string(i)));
  if (sets.empty()) Unsupported("no test_data_set_0");
  std::vector<Tensor> inputs;
  try {
    std::ifstream in(c.path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    c.proto = ParseModelBytes(bytes.data(), bytes.size(), c.path);
    std::set<std::string> initializers;
    for (const auto& init : c.proto.graph().initializer()) initializers.insert(init.name());
    for (const auto& vi : c.proto.graph().input())
      if (!initializers.count(vi.name())) c.input_names.push_back(vi.name());
  } catch (const std::exception& e) {
    Refused("load", e);
  }
  // The data files of a sequence or optional input are SequenceProto and
  // OptionalProto, which the runtime does not take (it refuses such inputs as
  // unsupported when compiling); the harness reads TensorProto files only.
  for (const auto& vi : c.proto.graph().input())
    if (!vi.type().has_tensor_type())
      Unsupported("graph input '" + vi.name() + "' is not a tensor (" +
                  (vi.type().has_sequence_type() ? "sequence" : vi.type().has_optional_type() ? "optional" : "other") +
                  " type)");
  try {
    inputs = ReadInputs(c, sets[0]);
  } catch (const std::exception& e) {
    Refused("inputs", e);
  }

  // Compile, binding weight inputs the backend needs at build time (at most 8 rounds).
  std::set<std::string> bound;
  Plans p;
  for (int round = 0; round < 8; ++round) {
    try {
      p = CompileBoth(c, inputs, bound);
    } catch (const std::exception& e) {
      Refused("load", e);
    }
    std::string want;
    for (int m = 0; m < 2 && want.empty(); ++m)
      if (!p.unsupported[m].empty()) want = WantedConstant(c, p.graph, p.unsupported[m], bound);
    if (want.empty() || bound.count(want)) break;
    bound.insert(want);
  }
  if (!p.plan[0] && !p.plan[1] && !p.unsupported[0].empty() && !p.unsupported[1].empty())
    Unsupported(p.unsupported[0]);
  for (const auto& name : bound) std::cout << "@@BOUND " << name << std::endl;
  for (const auto& error : p.errors) Fail(error);
  for (int m = 0; m < 2; ++m)
    if (!p.unsupported[m].empty()) Fail(std::string(kMode[m]) + " compile (the other mode compiles): " + p.unsupported[m]);

  for (std::size_t s = 0; s < sets.size(); ++s) {
    std::string set_name = sets[s].filename().string();
    try {
      if (s > 0) {  // bound constants differ per data set: compile that set's model
        inputs = ReadInputs(c, sets[s]);
        if (!bound.empty() && via == Via::kPlans) {  // the session compiles its own
          p = CompileBoth(c, inputs, bound);
          for (const auto& error : p.errors) Fail(set_name + " " + error);
        }
      }
    } catch (const std::exception& e) {
      Fail(set_name + ": " + e.what());
      continue;
    }
    std::vector<Tensor> fed;
    for (const Tensor& t : inputs)
      if (!bound.count(t.name)) fed.push_back(t);
    if (via == Via::kSession) {  // what the plans ran, through InferenceSession
      const std::string where = "session " + set_name;
      try {
        CheckOutputs(where, RunInSession(BoundModel(c, inputs, bound), c.path, fed), sets[s]);
      } catch (const std::exception& e) {
        Fail(where + ": " + e.what());
      }
      continue;
    }
    for (int m = 0; m < 2; ++m) {
      if (!p.plan[m]) continue;
      std::string where = std::string(kMode[m]) + " " + set_name;
      try {
        CheckOutputs(where, p.plan[m]->Run(MatchInputs(*p.graph, fed)), sets[s]);
      } catch (const std::exception& e) {
        Fail(where + ": " + e.what());
      }
    }
  }
  std::cout << "@@DONE" << std::endl;
}

}  // namespace onnxfuse::conformance
