#include "test_models.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <onnx/defs/parser.h>

namespace onnxfuse::test {

const char* const kBasicBlock = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[1,2,8,8] x, float[2,2,1,1] w1 = {1.0, 0.5, -0.5, 1.0}, float[2,2,1,1] w2 = {0.5, 0.0, 0.0, 0.5},
     float[2] s = {1.0, 1.0}, float[2] b = {0.0, 0.1}, float[2] m = {0.0, 0.0}, float[2] v = {1.0, 1.0})
    => (float[1,2,8,8] y) {
    r0 = Relu (x)
    c1 = Conv (r0, w1)
    n1 = BatchNormalization (c1, s, b, m, v)
    r1 = Relu (n1)
    c2 = Conv (r1, w2)
    n2 = BatchNormalization (c2, s, b, m, v)
    a = Add (n2, r0)
    y = Relu (a)
  })";

const char* const kTvmDiamond = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[1,3,16,16] x, float[3,3,3,3] w, float[1,3,14,14] k, float[1] h) => (float[1,3,14,14] y) {
    c = Conv (x, w)
    a = Add (c, k)
    r = Relu (a)
    m = Mul (c, h)
    y = Add (r, m)
  })";

const char* const kTwoBranchesToOutputs = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[4] x) => (float[4] y1, float[4] y2) {
    a = Relu (x)
    y1 = Exp (a)
    y2 = Sigmoid (a)
  })";

const char* const kGeluVariants = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8] x, float[1,8] w, float[1,8] u, float[1,8] v)
  => (float[1,8] y, float[1,8] yw, float[1,8] yu, float[1,8] yv, float[1,8] qv) {
  r2 = Constant <value = float {1.4142135}> ()
  one = Constant <value = float {1.0}> ()
  half = Constant <value = float {0.5}> ()
  quarter = Constant <value = float {0.25}> ()
  q = Div (x, r2)
  e = Erf (q)
  e1 = Add (e, one)
  p = Mul (x, e1)
  y = Mul (p, half)
  qw = Div (w, r2)
  ew = Erf (qw)
  e1w = Add (one, ew)
  pw = Mul (e1w, w)
  yw = Mul (half, pw)
  qu = Div (u, r2)
  eu = Erf (qu)
  e1u = Add (eu, one)
  pu = Mul (u, e1u)
  yu = Mul (pu, quarter)
  qv = Div (v, r2)
  ev = Erf (qv)
  e1v = Add (ev, one)
  pv = Mul (v, e1v)
  yv = Mul (pv, half)
}
)";

const char* const kDownsampleBlock = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,8,8] x, float[16,8,3,3] w1, float[16,16,3,3] w2, float[16,8,1,1] wd,
       float[16] s, float[16] b, float[16] m, float[16] v) => (float[1,16,4,4] y) {
      c1 = Conv <strides: ints = [2,2], pads: ints = [1,1,1,1]> (x, w1)
      n1 = BatchNormalization (c1, s, b, m, v)
      r1 = Relu (n1)
      c2 = Conv <pads: ints = [1,1,1,1]> (r1, w2)
      n2 = BatchNormalization (c2, s, b, m, v)
      cd = Conv <strides: ints = [2,2]> (x, wd)
      nd = BatchNormalization (cd, s, b, m, v)
      sum = Add (n2, nd)
      y = Relu (sum)
    })";

onnx::ModelProto ParseModel(const std::string& text) {
  onnx::ModelProto model;
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  if (!status.IsOK()) throw std::runtime_error("test model does not parse: " + status.ErrorMessage());
  return model;
}

Graph GraphFromText(const std::string& text, const LoadOptions& options) {
  return LoadModelProto(ParseModel(text), "inline.onnx", options);
}

std::string ChainText(const std::vector<std::string>& ops, const std::string& dims, int opset, int ir_version,
                      const std::vector<std::size_t>& also_outputs) {
  if (ops.empty() || ops.size() > 23) throw std::runtime_error("ChainText: 1 to 23 ops");
  auto value = [&](std::size_t i) { return i + 1 == ops.size() ? std::string("y") : std::string(1, char('a' + i)); };
  std::string outputs;
  for (std::size_t i : also_outputs) outputs += "float[" + dims + "] " + value(i) + ", ";
  std::string text = "<ir_version: " + std::to_string(ir_version) + ", opset_import: [\"\" : " +
                     std::to_string(opset) + "]>\ng (float[" + dims + "] x) => (" + outputs + "float[" + dims +
                     "] y) {\n";
  for (std::size_t i = 0; i < ops.size(); ++i)
    text += "  " + value(i) + " = " + ops[i] + " (" + (i ? value(i - 1) : "x") + ")\n";
  return text + "}\n";
}

std::string LayerNormText(const std::string& in, const std::string& gamma, const std::string& beta,
                          const std::string& out) {
  return "  m = ReduceMean <axes = [-1]> (" + in + ")\n  d = Sub (" + in + ", m)\n"
         "  two = Constant <value = float {2}> ()\n  p = Pow (d, two)\n  v = ReduceMean <axes = [-1]> (p)\n"
         "  eps = Constant <value = float {1e-5}> ()\n  ve = Add (v, eps)\n  s = Sqrt (ve)\n  n = Div (d, s)\n"
         "  a = Mul (n, " + gamma + ")\n  " + out + " = Add (a, " + beta + ")\n";
}

std::string GeluText(const std::string& in, const std::string& out, const std::string& half,
                     const std::string& prefix) {
  const std::string k = prefix + "k", d = prefix + "d", e = prefix + "e", one = prefix + "one", a = prefix + "a",
                    m = prefix + "m", h = prefix + "half";
  return "  " + k + " = Constant <value = float {1.4142135381698608}> ()\n  " + d + " = Div (" + in + ", " + k +
         ")\n  " + e + " = Erf (" + d + ")\n  " + one + " = Constant <value = float {1.0}> ()\n  " + a + " = Add (" +
         e + ", " + one + ")\n  " + m + " = Mul (" + in + ", " + a + ")\n  " + h + " = Constant <value = float {" +
         half + "}> ()\n  " + out + " = Mul (" + m + ", " + h + ")\n";
}

Graph ChainGraph(const std::string& input, const std::vector<std::string>& ops,
                 const std::vector<std::string>& names) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  auto* g = model.mutable_graph();
  g->set_name("chain");
  auto add_value = [](onnx::ValueInfoProto* vi, const std::string& name) {
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(1);
    t->mutable_shape()->add_dim()->set_dim_value(4);
  };
  add_value(g->add_input(), input);
  std::string previous = input;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto* node = g->add_node();
    if (i < names.size()) node->set_name(names[i]);
    node->set_op_type(ops[i]);
    node->add_input(previous);
    previous = "v" + std::to_string(i + 1);
    node->add_output(previous);
  }
  add_value(g->add_output(), previous);
  return LoadModelProto(std::move(model), "chain.onnx");
}

NodeId NodeNamed(const Graph& graph, const std::string& name) {
  for (NodeId id = 0; id < graph.num_nodes(); ++id)
    if (graph.node(id).name == name) return id;
  throw std::runtime_error("no node named " + name);
}

FusionPlan PlanGrouping(const Graph& graph, const std::vector<std::vector<std::string>>& groups) {
  std::vector<int> label(graph.num_nodes(), -1);
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (const auto& name : groups[g]) label[NodeNamed(graph, name)] = static_cast<int>(g);
  int next = static_cast<int>(groups.size());
  for (auto& l : label)
    if (l < 0) l = next++;
  std::vector<std::string> rules(static_cast<std::size_t>(next), "test");
  return MakeFusionPlan(graph, ClassifyAll(graph), label, rules, "test");
}

ThrownError ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  throw std::runtime_error("expected an onnxfuse::Error, none was thrown");
}

Tensor TensorOf(std::string name, std::vector<std::int64_t> dims, std::vector<float> data) {
  Tensor t;
  t.name = std::move(name);
  t.dims = std::move(dims);
  t.data = std::move(data);
  return t;
}

Tensor IntTensorOf(std::string name, std::vector<std::int64_t> dims, std::vector<std::int64_t> values) {
  Tensor t;
  t.name = std::move(name);
  t.elem_type = onnx::TensorProto::INT64;
  t.dims = std::move(dims);
  t.int_data = std::move(values);
  return t;
}

Tensor ChannelsLast(const Tensor& x, const std::string& name) {
  const std::int64_t n = x.dims[0], c = x.dims[1], pixels = x.dims[2] * x.dims[3];
  Tensor t;
  t.name = name;
  t.dims = {n, x.dims[2], x.dims[3], c};
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t p = 0; p < pixels; ++p)
      for (std::int64_t k = 0; k < c; ++k) t.data.push_back(x.data[static_cast<std::size_t>((b * c + k) * pixels + p)]);
  return t;
}

std::vector<double> NaivePointwise(const Tensor& x, const std::vector<float>& w, std::int64_t out) {
  const std::int64_t batch = x.dims[0], in = x.dims[1], pixels = x.dims[2] * x.dims[3];
  std::vector<double> y(static_cast<std::size_t>(batch * out * pixels), 0.0);
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t o = 0; o < out; ++o)
      for (std::int64_t p = 0; p < pixels; ++p) {
        double s = 0;
        for (std::int64_t i = 0; i < in; ++i)
          s += static_cast<double>(w[static_cast<std::size_t>(o * in + i)]) *
               x.data[static_cast<std::size_t>((n * in + i) * pixels + p)];
        y[static_cast<std::size_t>((n * out + o) * pixels + p)] = s;
      }
  return y;
}

std::vector<double> NaiveConv2d(const Tensor& x, const std::vector<float>& w, std::int64_t out_channels,
                                std::int64_t k, std::int64_t stride, std::int64_t pad) {
  const std::int64_t c_in = x.dims[1], h = x.dims[2], wd = x.dims[3];
  const std::int64_t oh_n = (h + 2 * pad - k) / stride + 1, ow_n = (wd + 2 * pad - k) / stride + 1;
  std::vector<double> y;
  for (std::int64_t o = 0; o < out_channels; ++o)
    for (std::int64_t oh = 0; oh < oh_n; ++oh)
      for (std::int64_t ow = 0; ow < ow_n; ++ow) {
        double sum = 0;
        for (std::int64_t c = 0; c < c_in; ++c)
          for (std::int64_t kh = 0; kh < k; ++kh)
            for (std::int64_t kw = 0; kw < k; ++kw) {
              const std::int64_t ih = oh * stride - pad + kh, iw = ow * stride - pad + kw;
              if (ih < 0 || iw < 0 || ih >= h || iw >= wd) continue;
              sum += static_cast<double>(w[static_cast<std::size_t>(((o * c_in + c) * k + kh) * k + kw)]) *
                     x.data[static_cast<std::size_t>((c * h + ih) * wd + iw)];
            }
        y.push_back(sum);
      }
  return y;
}

std::vector<double> LayerNormLastAxis(const Tensor& x, const std::vector<double>& gamma,
                                      const std::vector<double>& beta, double epsilon) {
  const std::size_t n = gamma.size(), rows = x.data.size() / n;
  std::vector<double> y;
  for (std::size_t row = 0; row < rows; ++row) {
    const float* v = x.data.data() + row * n;
    double mean = 0, var = 0;
    for (std::size_t c = 0; c < n; ++c) mean += v[c] / static_cast<double>(n);
    for (std::size_t c = 0; c < n; ++c) var += std::pow(v[c] - mean, 2) / static_cast<double>(n);
    for (std::size_t c = 0; c < n; ++c) y.push_back((v[c] - mean) / std::sqrt(var + epsilon) * gamma[c] + beta[c]);
  }
  return y;
}

std::string FloatList(const std::vector<float>& values) {
  std::ostringstream out;
  out.precision(9);
  out << "{";
  for (std::size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "}";
  return out.str();
}

Tensor TensorFrom(std::vector<std::int64_t> dims, const std::function<float(std::int64_t)>& f, std::string name) {
  Tensor t;
  t.name = std::move(name);
  t.dims = std::move(dims);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.data.push_back(f(i));
  return t;
}

float Wave(std::int64_t i) { return static_cast<float>((i * 7) % 11 - 5) * 0.125f + 0.03f * static_cast<float>(i % 4); }

std::vector<float> Floats(std::size_t n, float scale, int salt) {
  std::vector<float> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(scale * Wave(static_cast<std::int64_t>(i) * 3 + salt));
  return v;
}

std::vector<double> ConcatenatedPointwise(const Tensor& x, const std::vector<std::vector<float>>& w,
                                          const std::vector<std::int64_t>& couts) {
  const std::int64_t n = x.dims[0], cin = x.dims[1], hw = x.dims[2] * x.dims[3];
  std::vector<double> y;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < couts.size(); ++i)
      for (std::int64_t o = 0; o < couts[i]; ++o)
        for (std::int64_t p = 0; p < hw; ++p) {
          double sum = 0;
          for (std::int64_t ci = 0; ci < cin; ++ci)
            sum += static_cast<double>(w[i][static_cast<std::size_t>(o * cin + ci)]) *
                   x.data[static_cast<std::size_t>((b * cin + ci) * hw + p)];
          y.push_back(sum);
        }
  return y;
}

std::string DimsText(const std::vector<std::int64_t>& dims) {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s;
}

}  // namespace onnxfuse::test
