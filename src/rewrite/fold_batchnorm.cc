#include "rewrite/fold_batchnorm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <unordered_set>
#include <variant>

#include "onnxfuse/error.h"

namespace onnxfuse {

namespace {

std::string Describe(const Node& node) { return "'" + node.name + "' (" + node.op_type + ")"; }

bool IsFloating(std::int32_t dtype) { return dtype == onnx::TensorProto::FLOAT || dtype == onnx::TensorProto::DOUBLE; }

std::string DtypeName(std::int32_t dtype) {
  return onnx::TensorProto_DataType_IsValid(dtype)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(dtype))
             : "type " + std::to_string(dtype);
}

std::int64_t AttrInt(const Node& node, const std::string& name, std::int64_t fallback) {
  for (const auto& a : node.proto.attribute())
    if (a.name() == name && a.type() == onnx::AttributeProto::INT) return a.i();
  return fallback;
}

float AttrFloat(const Node& node, const std::string& name, float fallback) {
  for (const auto& a : node.proto.attribute())
    if (a.name() == name && a.type() == onnx::AttributeProto::FLOAT) return a.f();
  return fallback;
}

// --- Tensor data (ONNX raw_data is little-endian; decoded byte by byte, so host order does not matter).

template <typename Bits>
Bits LoadLE(const char* p) {
  Bits bits = 0;
  for (std::size_t i = 0; i < sizeof(Bits); ++i) bits |= static_cast<Bits>(static_cast<unsigned char>(p[i])) << (8 * i);
  return bits;
}

template <typename Bits>
void StoreLE(Bits bits, char* p) {
  for (std::size_t i = 0; i < sizeof(Bits); ++i) p[i] = static_cast<char>((bits >> (8 * i)) & 0xff);
}

// The values of a float/double tensor as doubles; nullopt when the data does not match the dims.
std::optional<std::vector<double>> Decode(const onnx::TensorProto& t) {
  std::size_t n = 1;
  for (auto d : t.dims()) {
    if (d < 0) return std::nullopt;
    n *= static_cast<std::size_t>(d);
  }
  std::vector<double> out(n);
  const bool is_float = t.data_type() == onnx::TensorProto::FLOAT;
  const std::size_t width = is_float ? 4 : 8;
  if (!t.raw_data().empty()) {
    if (t.raw_data().size() != n * width) return std::nullopt;
    const char* p = t.raw_data().data();
    for (std::size_t i = 0; i < n; ++i, p += width) {
      if (is_float) {
        auto bits = LoadLE<std::uint32_t>(p);
        float f;
        std::memcpy(&f, &bits, 4);
        out[i] = f;
      } else {
        auto bits = LoadLE<std::uint64_t>(p);
        std::memcpy(&out[i], &bits, 8);
      }
    }
    return out;
  }
  const std::size_t stored = static_cast<std::size_t>(is_float ? t.float_data_size() : t.double_data_size());
  if (stored != n) return std::nullopt;
  for (std::size_t i = 0; i < n; ++i)
    out[i] = is_float ? t.float_data(static_cast<int>(i)) : t.double_data(static_cast<int>(i));
  return out;
}

onnx::TensorProto Encode(const std::string& name, std::int32_t dtype, const std::vector<std::int64_t>& dims,
                         const std::vector<double>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(dtype);
  for (auto d : dims) t.add_dims(d);
  const bool is_float = dtype == onnx::TensorProto::FLOAT;
  std::string bytes(values.size() * (is_float ? 4 : 8), '\0');
  char* p = bytes.data();
  for (double v : values) {
    if (is_float) {
      float f = static_cast<float>(v);
      std::uint32_t bits;
      std::memcpy(&bits, &f, 4);
      StoreLE(bits, p);
      p += 4;
    } else {
      std::uint64_t bits;
      std::memcpy(&bits, &v, 8);
      StoreLE(bits, p);
      p += 8;
    }
  }
  t.set_raw_data(std::move(bytes));
  return t;
}

// --- Match: read-only, yields a fold (with W' and B' computed) or the reason for refusing.

struct Refusal {
  std::string reason, detail;
};

struct Fold {
  NodeId bn = kNoNode, conv = kNoNode;
  std::int32_t dtype = 0;
  std::vector<std::int64_t> weight_dims;
  std::vector<double> weight, bias;
  std::string weight_base, bias_base;  // names the new initializers derive from
};

std::variant<Fold, Refusal> Match(const Graph& graph, NodeId bn_id) {
  const Node& bn = graph.node(bn_id);
  const std::string bn_text = Describe(bn);
  auto refuse = [](std::string reason, std::string detail) { return Refusal{std::move(reason), std::move(detail)}; };

  // 1. Inference mode only.
  if (AttrInt(bn, "training_mode", 0) != 0)
    return refuse("training_mode", bn_text + " has training_mode=1: it normalizes with batch statistics");
  for (std::size_t i = 1; i < bn.outputs.size(); ++i) {
    ValueId out = bn.outputs[i];
    if (out == kNoValue) continue;
    const Value& v = graph.value(out);
    if (!v.consumers.empty() || v.is_graph_output)
      return refuse("training_mode",
                    bn_text + " writes running statistics '" + v.name + "', which " +
                        (v.is_graph_output ? "is a graph output" : "'" + graph.node(v.consumers[0]).name + "' reads"));
  }

  // 2. Fed by output 0 of a Conv or ConvTranspose.
  ValueId x = bn.num_explicit_inputs > 0 ? bn.inputs[0] : kNoValue;
  NodeId conv_id = x == kNoValue ? kNoNode : graph.value(x).producer;
  if (x == kNoValue) return refuse("no_conv_producer", bn_text + " has no input X");
  if (conv_id == kNoNode)
    return refuse("no_conv_producer", bn_text + " reads '" + graph.value(x).name +
                                          "', a graph input, not the output of a Conv or ConvTranspose");
  const Node& conv = graph.node(conv_id);
  const bool transpose = conv.op_type == "ConvTranspose";
  if (!conv.domain.empty() || (conv.op_type != "Conv" && !transpose) || conv.outputs.empty() || conv.outputs[0] != x)
    return refuse("no_conv_producer", bn_text + " reads '" + graph.value(x).name + "' from " + Describe(conv) +
                                          ", not from a Conv or ConvTranspose");
  const std::string conv_text = Describe(conv);

  // 3. The conv's output goes only to this BN.
  const Value& mid = graph.value(x);
  if (mid.is_graph_output)
    return refuse("conv_output_is_graph_output", "the output '" + mid.name + "' of " + conv_text +
                                                     " is a graph output, so it cannot become " + bn_text +
                                                     "'s normalized value");
  if (mid.consumers.size() != 1) {
    std::vector<NodeId> others = mid.consumers;
    std::sort(others.begin(), others.end());
    others.erase(std::unique(others.begin(), others.end()), others.end());
    others.erase(std::remove(others.begin(), others.end(), bn_id), others.end());
    std::string list;
    for (std::size_t i = 0; i < others.size(); ++i) list += (i ? ", " : "") + Describe(graph.node(others[i]));
    return refuse("conv_output_shared",
                  "the output '" + mid.name + "' of " + conv_text + " is read by " +
                      (others.empty() ? bn_text + " more than once" : list + " besides " + bn_text));
  }

  // 4. Every operand is a constant tensor: W and b of the conv, then γ, β, μ, σ² of the BN.
  auto input = [](const Node& n, std::size_t i) { return i < n.num_explicit_inputs ? n.inputs[i] : kNoValue; };
  const char* roles[6] = {"weight", "bias", "scale", "B", "input_mean", "input_var"};
  const ValueId values[6] = {input(conv, 1), input(conv, 2), input(bn, 1), input(bn, 2), input(bn, 3), input(bn, 4)};
  const onnx::TensorProto* tensors[6] = {};
  std::vector<double> data[6];
  auto text = [&](int i) {  // "the scale 's' of 'bn1' (BatchNormalization)"
    return "the " + std::string(roles[i]) + " '" + graph.value(values[i]).name + "' of " +
           (i < 2 ? conv_text : bn_text);
  };
  for (int i = 0; i < 6; ++i) {
    if (values[i] == kNoValue) {
      if (i == 1) continue;  // the conv bias is optional
      return refuse("not_constant",
                    "the " + std::string(roles[i]) + " input of " + (i < 2 ? conv_text : bn_text) + " is missing");
    }
    const Value& v = graph.value(values[i]);
    if (!graph.IsConstant(values[i]))
      return refuse("not_constant", text(i) + " is " +
                                        (v.producer == kNoNode ? std::string("a graph input")
                                                               : "computed by " + Describe(graph.node(v.producer))) +
                                        ", not a constant");
    tensors[i] = graph.ConstantTensor(values[i]);
    if (!tensors[i]) return refuse("not_constant", text(i) + " comes from a Constant node without a 'value' tensor");
  }

  // 5. Float or double only.
  for (int i = 0; i < 6; ++i)
    if (tensors[i] && !IsFloating(tensors[i]->data_type()))
      return refuse("unsupported_dtype",
                    text(i) + " is " + DtypeName(tensors[i]->data_type()) + "; only FLOAT and DOUBLE fold");

  // 6. Shapes line up.
  const auto& w = *tensors[0];
  std::vector<std::int64_t> wdims(w.dims().begin(), w.dims().end());
  const bool empty = std::any_of(wdims.begin(), wdims.end(), [](std::int64_t d) { return d <= 0; });
  if (wdims.size() < 3 || empty)
    return refuse("shape_mismatch", text(0) + (empty ? " is empty" : " has rank " + std::to_string(wdims.size())) +
                                        "; a Conv weight has rank 3 or more and no zero dims");
  if (AttrInt(bn, "spatial", 1) == 0)
    return refuse("shape_mismatch", bn_text + " has spatial=0: its statistics are per location, not per channel");
  const std::int64_t group = AttrInt(conv, "group", 1);
  if (group < 1 || (transpose && wdims[0] % group != 0))
    return refuse("shape_mismatch", text(0) + " has " + std::to_string(wdims[0]) +
                                        " rows, which group=" + std::to_string(group) + " does not divide");
  const std::int64_t c_out = transpose ? wdims[1] * group : wdims[0];
  for (int i = 0; i < 6; ++i) {
    if (!tensors[i]) continue;
    const auto& t = *tensors[i];
    if (i > 0 && (t.dims_size() != 1 || t.dims(0) != c_out)) {
      std::string dims;
      for (auto d : t.dims()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
      return refuse("shape_mismatch", text(i) + " has shape [" + dims + "], but " + conv_text + " has " +
                                          std::to_string(c_out) + " output channels");
    }
    auto decoded = Decode(t);
    if (!decoded) return refuse("shape_mismatch", text(i) + " holds a number of values that does not match its dims");
    data[i] = std::move(*decoded);
  }

  // Compute W' and B' in double.
  const auto &gamma = data[2], &beta = data[3], &mean = data[4], &var = data[5];
  const double eps = AttrFloat(bn, "epsilon", 1e-5f);
  std::vector<double> s(static_cast<std::size_t>(c_out));
  Fold fold;
  fold.bn = bn_id;
  fold.conv = conv_id;
  fold.dtype = w.data_type();
  fold.weight_dims = wdims;
  fold.weight = std::move(data[0]);
  fold.bias.resize(s.size());
  for (std::size_t k = 0; k < s.size(); ++k) {
    s[k] = gamma[k] / std::sqrt(var[k] + eps);
    const double b = tensors[1] ? data[1][k] : 0.0;
    fold.bias[k] = (b - mean[k]) * s[k] + beta[k];
  }
  const std::size_t dim1 = static_cast<std::size_t>(wdims[1]);
  const std::size_t inner = fold.weight.size() / (static_cast<std::size_t>(wdims[0]) * dim1);
  if (!transpose) {
    // W is (C_out, C_in/group, k...): output channel k is the k-th slab.
    for (std::size_t i = 0; i < fold.weight.size(); ++i) fold.weight[i] *= s[i / (dim1 * inner)];
  } else {
    // W is (C_in, C_out/group, k...): input channel i belongs to group g = i / (C_in/group),
    // and W[i, j, ...] feeds output channel g·(C_out/group) + j.
    const std::size_t in_per_group = static_cast<std::size_t>(wdims[0] / group);
    for (std::size_t i = 0; i < static_cast<std::size_t>(wdims[0]); ++i)
      for (std::size_t j = 0; j < dim1; ++j) {
        const double sk = s[(i / in_per_group) * dim1 + j];
        double* slab = fold.weight.data() + (i * dim1 + j) * inner;
        for (std::size_t e = 0; e < inner; ++e) slab[e] *= sk;
      }
  }
  // Values the target type cannot hold (σ²+ε <= 0, or overflow) would change the results.
  const double limit = fold.dtype == onnx::TensorProto::FLOAT ? 3.4028234663852886e38 : 1.7976931348623157e308;
  auto finite = [&](const std::vector<double>& v) {
    for (double d : v)
      if (!(std::fabs(d) <= limit)) return false;
    return true;
  };
  if (!finite(fold.weight) || !finite(fold.bias))
    return refuse("non_finite", "folding " + bn_text + " into " + conv_text + " gives values that are infinite, NaN " +
                                    "or beyond " + DtypeName(fold.dtype) + " (input_var + epsilon <= 0, or overflow)");

  // Value names, not tensor names: a Constant node's tensor may have none.
  fold.weight_base = graph.value(values[0]).name;
  fold.bias_base = graph.value(values[tensors[1] ? 1 : 3]).name;
  return fold;
}

// --- Rewrite.

// Every name the model uses for a value, subgraphs included (new names must not shadow any).
void CollectNames(const onnx::GraphProto& g, std::unordered_set<std::string>& names) {
  for (const auto& v : g.input()) names.insert(v.name());
  for (const auto& v : g.output()) names.insert(v.name());
  for (const auto& v : g.value_info()) names.insert(v.name());
  for (const auto& t : g.initializer()) names.insert(t.name());
  for (const auto& n : g.node()) {
    for (const auto& s : n.input()) names.insert(s);
    for (const auto& s : n.output()) names.insert(s);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectNames(a.g(), names);
      for (const auto& sub : a.graphs()) CollectNames(sub, names);
    }
  }
}

std::string UniqueName(const std::string& base, std::unordered_set<std::string>& taken) {
  std::string name = base;
  for (int i = 2; taken.count(name); ++i) name = base + "_" + std::to_string(i);
  taken.insert(name);
  return name;
}

template <typename T, typename Keep>
void Filter(google::protobuf::RepeatedPtrField<T>* field, Keep keep) {
  google::protobuf::RepeatedPtrField<T> kept;
  for (auto& item : *field)
    if (keep(item)) kept.Add()->Swap(&item);
  field->Swap(&kept);
}

}  // namespace

FoldResult FoldBatchNormIntoConv(const Graph& graph) {
  FoldResult result;
  std::vector<Fold> folds;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    if (node.op_type != "BatchNormalization" || !node.domain.empty()) continue;
    auto match = Match(graph, id);
    if (auto* refusal = std::get_if<Refusal>(&match)) {
      NodeId producer =
          node.num_explicit_inputs > 0 && node.inputs[0] != kNoValue ? graph.value(node.inputs[0]).producer : kNoNode;
      result.refused.push_back({id, refusal->reason == "no_conv_producer" ? kNoNode : producer,
                                std::move(refusal->reason), std::move(refusal->detail)});
    } else {
      folds.push_back(std::move(std::get<Fold>(match)));
    }
  }

  result.model = graph.model();
  auto* g = result.model.mutable_graph();
  Check(g->node_size() == static_cast<int>(graph.num_nodes()), "fold_batchnorm: graph and model disagree on nodes");
  std::unordered_set<std::string> taken;
  CollectNames(*g, taken);

  std::vector<bool> drop_node(graph.num_nodes(), false);
  std::unordered_set<std::string> dropped_values;  // value_info entries to remove
  std::set<ValueId> candidates;                    // constants that may now be unused
  for (const Fold& f : folds) {
    const Node& bn = graph.node(f.bn);
    const Node& conv = graph.node(f.conv);
    BatchNormFold record{f.bn, f.conv, UniqueName(f.weight_base + "_bnfolded", taken),
                         UniqueName(f.bias_base + "_bnfolded", taken)};
    *g->add_initializer() = Encode(record.weight, f.dtype, f.weight_dims, f.weight);
    *g->add_initializer() = Encode(record.bias, f.dtype, {static_cast<std::int64_t>(f.bias.size())}, f.bias);
    if (result.model.ir_version() < 4) {  // IR 3 requires every initializer to be a graph input too
      for (int i = g->initializer_size() - 2; i < g->initializer_size(); ++i) {
        auto* in = g->add_input();
        in->set_name(g->initializer(i).name());
        auto* type = in->mutable_type()->mutable_tensor_type();
        type->set_elem_type(f.dtype);
        for (auto d : g->initializer(i).dims()) type->mutable_shape()->add_dim()->set_dim_value(d);
      }
    }

    auto* conv_proto = g->mutable_node(static_cast<int>(f.conv));
    dropped_values.insert(conv_proto->output(0));
    conv_proto->set_output(0, bn.proto.output(0));
    conv_proto->set_input(1, record.weight);
    if (conv_proto->input_size() > 2)
      conv_proto->set_input(2, record.bias);
    else
      conv_proto->add_input(record.bias);

    drop_node[f.bn] = true;
    for (int i = 1; i < bn.proto.output_size(); ++i)
      if (!bn.proto.output(i).empty()) dropped_values.insert(bn.proto.output(i));
    for (std::size_t i = 1; i < conv.num_explicit_inputs; ++i)
      if (conv.inputs[i] != kNoValue) candidates.insert(conv.inputs[i]);
    for (std::size_t i = 1; i < bn.num_explicit_inputs; ++i)
      if (bn.inputs[i] != kNoValue) candidates.insert(bn.inputs[i]);
    result.folded.push_back(std::move(record));
  }

  if (!folds.empty()) {
    // What the rewritten graph still reads (subgraph captures and graph outputs included).
    std::unordered_set<std::string> used;
    for (int i = 0; i < g->node_size(); ++i) {
      if (drop_node[static_cast<std::size_t>(i)]) continue;
      for (const auto& s : g->node(i).input()) used.insert(s);
      for (const auto& s : CapturedNames(g->node(i))) used.insert(s);
    }
    for (const auto& o : g->output()) used.insert(o.name());

    std::unordered_set<std::string> dead_initializers;
    for (ValueId v : candidates) {
      const Value& value = graph.value(v);
      if (used.count(value.name)) continue;
      if (value.initializer >= 0)
        dead_initializers.insert(value.name);
      else if (value.producer != kNoNode)
        drop_node[value.producer] = true;  // a Constant node
      dropped_values.insert(value.name);
    }

    int index = 0;
    Filter(g->mutable_node(), [&](const onnx::NodeProto&) { return !drop_node[static_cast<std::size_t>(index++)]; });
    Filter(g->mutable_initializer(), [&](const onnx::TensorProto& t) { return !dead_initializers.count(t.name()); });
    Filter(g->mutable_input(), [&](const onnx::ValueInfoProto& v) { return !dead_initializers.count(v.name()); });
    Filter(g->mutable_value_info(), [&](const onnx::ValueInfoProto& v) { return !dropped_values.count(v.name()); });
  }
  return result;
}

}  // namespace onnxfuse
