#include "load/loader.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <unordered_map>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "onnxfuse/error.h"
#include "common/mapped_file.h"
#include "load/opset_conversion.h"
#include "ir/fused_domain.h"
#include "ir/node_label.h"
#include "ir/tensor_data.h"
#include "load/shape_inference.h"
#include "load/onnx_guards.h"

namespace onnxfuse {

namespace fs = std::filesystem;

namespace {

// What a model may come with; opset_conversion.h brings it into 7-17, IR 3-8.
constexpr std::int64_t kMinIrVersion = 3, kMaxIrVersion = kNewestIrVersion;
constexpr std::int64_t kMinOpset = kOldestOpset, kMaxOpset = kNewestOpset;
// Protobuf's own default, stated: a graph inside an If/Loop attribute costs 3
// levels (Graph > Node > Attribute), so 100 allows ~30 nested subgraphs, and no
// recursive walk over a parsed model (ours, shape inference's) can be driven
// deeper than this by a hostile file.
constexpr int kMaxMessageNesting = 100;

[[noreturn]] void Fail(ErrorKind kind, const std::string& source, const std::string& what) {
  throw Error(kind, source + ": " + what);
}

void CheckVersions(const onnx::ModelProto& model, const std::string& source) {
  if (model.ir_version() < kMinIrVersion || model.ir_version() > kMaxIrVersion)
    Fail(ErrorKind::kUnsupported, source,
         "IR version " + std::to_string(model.ir_version()) + " is outside the supported range " +
             std::to_string(kMinIrVersion) + "-" + std::to_string(kMaxIrVersion));
  bool has_default = false;
  for (const auto& opset : model.opset_import()) {
    if (!opset.domain().empty() && opset.domain() != "ai.onnx") continue;
    has_default = true;
    if (opset.version() < kMinOpset || opset.version() > kMaxOpset)
      Fail(ErrorKind::kUnsupported, source,
           "default-domain opset " + std::to_string(opset.version()) + " is outside the supported range " +
               std::to_string(kMinOpset) + "-" + std::to_string(kMaxOpset));
  }
  // Valid ONNX (a model needs one opset import, of any domain), but outside
  // what onnx-fuse runs: every op it computes is a default-domain one.
  if (!has_default) {
    std::string domains;
    for (const auto& opset : model.opset_import())
      domains += (domains.empty() ? "" : ", ") + opset.domain() + " " + std::to_string(opset.version());
    Fail(ErrorKind::kUnsupported, source,
         "the model imports no default-domain opset (only " + (domains.empty() ? "none" : domains) +
             "): onnx-fuse computes default-domain ops");
  }
}

// Parses an external-data integer key ("offset", "length"): decimal digits only.
std::int64_t ExternalInt(const std::string& text, const std::string& key, const std::string& source,
                         const std::string& what) {
  std::int64_t value = -1;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0)
    Fail(ErrorKind::kInvalidModel, source, what + " has a bad " + key + " '" + text + "'");
  return value;
}

// Reads one tensor stored outside the model file into raw_data (ONNX
// external-data spec, onnx/docs/ExternalData.md). The path must stay inside
// the model's folder; the declared length must equal what the dims need, and
// the range must lie inside the file, all checked before anything is allocated.
void ReadExternalTensor(onnx::TensorProto& tensor, const std::string& what_tensor, const std::string& source,
                        const std::string& base_dir) {
  std::string location;
  std::optional<std::int64_t> offset_key, length_key;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") location = entry.value();
    else if (entry.key() == "offset") offset_key = ExternalInt(entry.value(), "offset", source, what_tensor);
    else if (entry.key() == "length") length_key = ExternalInt(entry.value(), "length", source, what_tensor);
  }
  const std::string what = what_tensor + " external data '" + location + "'";
  if (base_dir.empty() || location.empty() || fs::path(location).is_absolute())
    Fail(ErrorKind::kInvalidModel, source, what + " must be a path relative to the model's folder");
  fs::path base = fs::weakly_canonical(base_dir);
  fs::path file = fs::weakly_canonical(base / location);
  auto rel = file.lexically_relative(base);
  if (rel.empty() || *rel.begin() == ".." || rel == ".")
    Fail(ErrorKind::kInvalidModel, source, what + " points outside the model's folder");
  const auto needed = TensorDataBytes(tensor);
  if (!needed)
    Fail(ErrorKind::kInvalidModel, source, what + ": its type and dims do not give a size in bytes");
  if (length_key && *length_key != *needed)
    Fail(ErrorKind::kInvalidModel, source,
         what + ": length " + std::to_string(*length_key) + " but its dims need " + std::to_string(*needed) + " bytes");
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) Fail(ErrorKind::kIo, source, what + ": cannot open " + file.string());
  const auto size = static_cast<std::int64_t>(fs::file_size(file, ec));
  const std::int64_t offset = offset_key.value_or(0), length = *needed;
  if (ec || offset > size || length > size - offset)
    Fail(ErrorKind::kInvalidModel, source,
         what + ": " + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
             " run past the end of the file (" + std::to_string(size) + " bytes)");
  std::ifstream in(file, std::ios::binary);
  if (!in) Fail(ErrorKind::kIo, source, what + ": cannot open " + file.string());
  std::string bytes(static_cast<std::size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) Fail(ErrorKind::kIo, source, what + ": read failed");
  tensor.set_raw_data(std::move(bytes));
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::DEFAULT);
}

// Reads every externally stored tensor, then checks every tensor's data against
// its dims (tensor_data.h), so nothing downstream reads past a short raw_data.
void ReadAndValidateTensors(onnx::ModelProto& model, const std::string& source, const std::string& base_dir) {
  ForEachTensor(*model.mutable_graph(), [&](onnx::TensorProto& tensor, const std::string& what) {
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL) ReadExternalTensor(tensor, what, source, base_dir);
    ValidateTensorData(tensor, what, source);
  });
}

void CheckGraphInputs(const onnx::GraphProto& graph, const std::string& source) {
  std::set<std::string> initializers;
  for (const auto& t : graph.initializer()) initializers.insert(t.name());
  std::set<std::string> seen;
  for (const auto& input : graph.input()) {
    if (input.name().empty()) Fail(ErrorKind::kInvalidModel, source, "a graph input has no name");
    if (!seen.insert(input.name()).second)
      Fail(ErrorKind::kInvalidModel, source, "graph input '" + input.name() + "' is listed twice");
    if (!input.has_type() && !initializers.count(input.name()))
      Fail(ErrorKind::kInvalidModel, source, "graph input '" + input.name() + "' has no type");
  }
}

// Every graph output is written by a node, or is a graph input or initializer
// (libonnx's version converter dereferences an output's producer).
void CheckGraphOutputs(const onnx::GraphProto& graph, const std::string& source) {
  std::set<std::string> defined;
  for (const auto& v : graph.input()) defined.insert(v.name());
  for (const auto& t : graph.initializer()) defined.insert(t.name());
  for (const auto& n : graph.node())
    for (const auto& o : n.output()) defined.insert(o);
  for (const auto& o : graph.output())
    if (!defined.count(o.name()))
      Fail(ErrorKind::kInvalidModel, source, "graph output '" + o.name() + "' is written by no node, input or initializer");
}

// Kahn's algorithm, keeping the file's order among ready nodes so an already
// sorted model is left as it is. Reports missing producers, duplicate
// definitions and cycles by node name.
void SortTopologically(onnx::GraphProto& graph, const std::string& source) {
  const int n = graph.node_size();
  std::unordered_map<std::string, int> producer;
  std::set<std::string> outside;  // defined by graph inputs and initializers
  for (const auto& v : graph.input()) outside.insert(v.name());
  for (const auto& t : graph.initializer()) outside.insert(t.name());
  for (int i = 0; i < n; ++i) {
    for (const auto& out : graph.node(i).output()) {
      if (out.empty()) continue;
      if (outside.count(out))
        Fail(ErrorKind::kInvalidModel, source,
             NodeLabel(graph.node(i), i) + " writes '" + out + "', which is a graph input or initializer");
      auto [it, inserted] = producer.emplace(out, i);
      if (!inserted)
        Fail(ErrorKind::kInvalidModel, source,
             NodeLabel(graph.node(i), i) + " writes '" + out + "', which " + NodeLabel(graph.node(it->second), it->second) +
                 " also writes");
    }
  }
  std::vector<std::vector<int>> consumers(static_cast<std::size_t>(n));
  std::vector<int> pending(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> reads(graph.node(i).input().begin(), graph.node(i).input().end());
    for (auto& captured : CapturedNames(graph.node(i))) reads.push_back(captured);
    std::set<int> deps;
    for (const auto& name : reads) {
      if (name.empty() || outside.count(name)) continue;
      auto it = producer.find(name);
      if (it == producer.end())
        Fail(ErrorKind::kInvalidModel, source,
             NodeLabel(graph.node(i), i) + " reads '" + name + "', which no node, graph input or initializer defines");
      if (it->second != i) deps.insert(it->second);
      else Fail(ErrorKind::kInvalidModel, source, NodeLabel(graph.node(i), i) + " reads its own output '" + name + "'");
    }
    for (int d : deps) consumers[static_cast<std::size_t>(d)].push_back(i);
    pending[static_cast<std::size_t>(i)] = static_cast<int>(deps.size());
  }
  std::set<int> ready;  // ordered: smallest original index first
  for (int i = 0; i < n; ++i)
    if (pending[static_cast<std::size_t>(i)] == 0) ready.insert(i);
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(n));
  while (!ready.empty()) {
    int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int c : consumers[static_cast<std::size_t>(i)])
      if (--pending[static_cast<std::size_t>(c)] == 0) ready.insert(c);
  }
  if (static_cast<int>(order.size()) != n) {
    std::string names;
    int listed = 0;
    for (int i = 0; i < n && listed < 8; ++i)
      if (pending[static_cast<std::size_t>(i)] > 0) {
        names += (listed++ ? ", " : "") + NodeLabel(graph.node(i), i);
      }
    Fail(ErrorKind::kInvalidModel, source, "the graph has a cycle through " + names);
  }
  bool sorted = true;
  for (int i = 0; i < n; ++i) sorted = sorted && order[static_cast<std::size_t>(i)] == i;
  if (sorted) return;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i : order) *nodes.Add() = graph.node(i);
  graph.mutable_node()->Swap(&nodes);
}

// Checks each default-domain node against its operator schema (input/output
// counts, attribute types), as onnx::checker would, but naming the node.
void VerifyNodes(const onnx::ModelProto& model, const std::string& source) {
  std::int64_t opset = 0;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  const auto& graph = model.graph();
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    if (!node.domain().empty() && node.domain() != "ai.onnx") continue;
    const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), "");
    if (!schema)
      Fail(ErrorKind::kInvalidModel, source,
           NodeLabel(node, i) + ": no operator " + node.op_type() + " exists in opset " + std::to_string(opset));
    try {
      schema->Verify(node);
    } catch (const onnx::checker::ValidationError& e) {
      std::string message = e.what();
      if (auto cut = message.find("\n"); cut != std::string::npos) message.resize(cut);
      Fail(ErrorKind::kInvalidModel, source, NodeLabel(node, i) + ": " + message);
    }
  }
}

}  // namespace

std::vector<std::int64_t> ParseShape(const std::string& text) {
  std::vector<std::int64_t> dims;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find_first_of("x,", start);
    std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || value < 0)
      throw Error(ErrorKind::kUsage, "shape '" + text + "' is not a list of dims like 1x3x224x224");
    dims.push_back(value);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return dims;
}

Graph LoadModelProto(onnx::ModelProto model, const std::string& source, const LoadOptions& options,
                     const std::string& base_dir) {
  detail::InstallOnnxInferenceGuards();
  CheckVersions(model, source);
  RefuseNewElementTypes(model, source);
  ReadAndValidateTensors(model, source, base_dir);
  // The graph's structure is checked by name before the opset conversion:
  // ONNX's version converter and shape inference assume a sound graph.
  CheckGraphInputs(model.graph(), source);
  PinInputShapes(model, options.input_shapes, source);
  SortTopologically(*model.mutable_graph(), source);
  CheckGraphOutputs(model.graph(), source);
  OpsetConversion conversion = ConvertToWorkingOpset(model, source);
  VerifyNodes(model, source);
  // What the writer's CheckFusedModel demands of the output, demanded of the
  // input: onnx::checker (model-local functions and If/Loop bodies included,
  // which are written back verbatim) and type-checking shape inference. A model
  // that fails either is the user's to fix (exit code 3), not a bug in the
  // fused model (70). Data propagation lets Reshape targets computed by
  // Shape->Gather->Concat resolve.
  std::string step = "the ONNX checker refuses it: ";
  try {
    onnx::checker::check_model(model);
    step = "shape inference failed: ";
    InferValueShapes(model);
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (auto cut = message.find("\n"); cut != std::string::npos) message.resize(cut);
    Fail(ErrorKind::kInvalidModel, source, step + message);
  }
  CheckFunctionCalls(model, ErrorKind::kInvalidModel, source + ": ");
  Graph graph(std::move(model), source);
  graph.set_conversion(std::move(conversion));
  return graph;
}

onnx::ModelProto ParseModel(google::protobuf::io::ZeroCopyInputStream& stream, const std::string& source) {
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);  // protobuf's hard ceiling; larger models use external data
  coded.SetRecursionLimit(kMaxMessageNesting);
  onnx::ModelProto model;
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    throw Error(ErrorKind::kInvalidModel,
                source + ": not an ONNX model (the protobuf does not parse; truncated, nested deeper than " +
                    std::to_string(kMaxMessageNesting) + " messages, or another format?)");
  if (!model.has_graph()) throw Error(ErrorKind::kInvalidModel, source + ": not an ONNX model (no graph)");
  return model;
}

onnx::ModelProto ParseModelBytes(const void* data, std::size_t size, const std::string& source) {
  if (size > static_cast<std::size_t>(INT_MAX))
    throw Error(ErrorKind::kUnsupported, source + ": over protobuf's 2 GB limit (store the weights as external data)");
  google::protobuf::io::ArrayInputStream stream(data, static_cast<int>(size));
  return ParseModel(stream, source);
}

Graph LoadModel(const std::string& path, const LoadOptions& options) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(ErrorKind::kIo, path + ": is a directory, not a model file");
  const bool regular = fs::is_regular_file(path, ec);
  if (regular && fs::file_size(path, ec) > static_cast<std::uintmax_t>(INT_MAX))
    throw Error(ErrorKind::kUnsupported,
                path + ": over protobuf's 2 GB limit for one message (a model this large stores its weights as external data)");
  onnx::ModelProto model;
  if (regular) {
    // Parsed from the mapped file: protobuf then copies each tensor's bytes
    // once, where reading through a stream appends them in buffer-sized
    // pieces, growing each string as it goes.
    const MappedFile file(path);
    model = ParseModelBytes(file.data(), file.size(), path);
  } else {  // a pipe or a device
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::kIo, path + ": cannot open for reading");
    google::protobuf::io::IstreamInputStream stream(&in);
    try {
      model = ParseModel(stream, path);
    } catch (const Error&) {
      if (in.bad()) throw Error(ErrorKind::kIo, path + ": read failed");
      throw;
    }
  }
  std::string base_dir = fs::path(path).parent_path().string();
  if (base_dir.empty()) base_dir = ".";
  return LoadModelProto(std::move(model), path, options, base_dir);
}

}  // namespace onnxfuse
