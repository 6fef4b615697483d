// Views and in-place writes (src/backend/lower/core/views.cc, backend/lower/ops/slice.cc):
// attention's scaled Q K^T reading transposed views in place, Slice, Split and
// Gather of one run as views, sum post-ops and elementwise ops writing over a
// source only when nothing reads it later, and 0-size tensors. Numbers are
// checked against naive loops in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "onnxfuse/error.h"
#include "backend/runtime/executor.h"
#include "plan_check.h"
#include "test_models.h"

using namespace onnxfuse;
using test::CheckBoth;
using test::CheckClose;
using test::CompileError;
using test::Floats;
using test::PlanRun;
using test::TensorFrom;
using test::Wave;

namespace {

using Dims = std::vector<std::int64_t>;

const char* kHeader = "<ir_version: 8, opset_import: [\"\" : 13]>\n";

}  // namespace

TEST_CASE("attention's Q / sqrt(d) scales the Q K^T MatMul's result, which reads both transposed views in place",
          "[backend_ops]") {
  // ViT's attention: q and k [tokens, heads, d] transposed to [heads, tokens, d]
  // and [heads, d, tokens]; q / 2 (a constant scalar) feeds only the MatMul:
  // (q / 2) k^T = (q k^T) / 2, no pass over q. The product of two run-time
  // operands may run on gemm, which reads the transposed views without copies.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[5,2,4] q, float[5,2,4] k, float[1] two = {2.0}) => (float[2,5,5] y) {
      qt = Transpose <perm = [1, 0, 2]> (q)
      qs = Div (qt, two)
      kt = Transpose <perm = [1, 2, 0]> (k)
      y = MatMul (qs, kt)
    })";
  Tensor q = TensorFrom({5, 2, 4}, Wave, "q"), k = TensorFrom({5, 2, 4}, [](std::int64_t i) { return Wave(i * 3 + 1); }, "k");
  std::vector<double> y;
  for (std::int64_t h = 0; h < 2; ++h)
    for (std::int64_t i = 0; i < 5; ++i)
      for (std::int64_t j = 0; j < 5; ++j) {
        double sum = 0;
        for (std::int64_t d = 0; d < 4; ++d)
          sum += static_cast<double>(q.data[static_cast<std::size_t>((i * 2 + h) * 4 + d)]) / 2 *
                 k.data[static_cast<std::size_t>((j * 2 + h) * 4 + d)];
        y.push_back(sum);
      }
  PlanRun fused = CheckBoth(text, {q, k}, y, 1e-5);
  INFO(test::StepList(fused));
  CHECK(test::StepsStartingWith(fused, "binary ") == 0);
  CHECK(test::StepsStartingWith(fused, "reorder ") == 0);
  CHECK(test::StepsStartingWith(fused, "matmul ") == 1);
}

TEST_CASE("fused, Slice, Split and a Gather of one run are views: attention's Q and K slices reach the MatMul uncopied",
          "[backend_ops][views]") {
  // ViT's in-projection result qkv [tokens, 1, 3 * E] is sliced into Q, K and
  // V along its last axis; each is reshaped to [tokens, heads, d] and
  // transposed. The slices are strided views (rows 3 * E apart) that the
  // MatMul reads in place: no slice, no reorder.
  const std::int64_t tokens = 5, heads = 2, d = 4, e = heads * d;
  Tensor qkv = TensorFrom({tokens, 1, 3 * e}, Wave, "qkv");
  auto at = [&](std::int64_t t, std::int64_t part, std::int64_t h, std::int64_t i) {
    return static_cast<double>(qkv.data[static_cast<std::size_t>(t * 3 * e + part * e + h * d + i)]);
  };
  std::vector<double> y;
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < tokens; ++i)
      for (std::int64_t j = 0; j < tokens; ++j) {
        double sum = 0;
        for (std::int64_t k = 0; k < d; ++k) sum += at(i, 0, h, k) * at(j, 1, h, k);
        y.push_back(sum);
      }
  PlanRun fused = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[5,1,24] qkv) => (float[2,5,5] y) {
      axis = Constant <value = int64[1] {-1}> ()
      s0 = Constant <value = int64[1] {0}> ()
      s1 = Constant <value = int64[1] {8}> ()
      s2 = Constant <value = int64[1] {16}> ()
      shape = Constant <value = int64[3] {5, 2, 4}> ()
      q = Slice (qkv, s0, s1, axis)
      k = Slice (qkv, s1, s2, axis)
      q3 = Reshape (q, shape)
      k3 = Reshape (k, shape)
      qt = Transpose <perm = [1, 0, 2]> (q3)
      kt = Transpose <perm = [1, 2, 0]> (k3)
      y = MatMul (qt, kt)
    })",
                            {qkv}, y);
  INFO(test::StepList(fused));
  CHECK(fused.stats.kernels == 1);
  CHECK(test::StepsStartingWith(fused, "matmul ") == 1);

  // Split along the outer axis: each part is a plain view at its offset; a
  // Relu reads part b in place and the Add reads both. A part that is a graph
  // output is copied out of the shared buffer.
  Tensor x = TensorFrom({2, 3, 4}, Wave);
  const std::string split = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,4] x) => (float[1,3,4] y, float[1,3,4] b) {
      a, b = Split <axis = 0> (x)
      r = Relu (b)
      y = Add (r, a)
    })";
  std::vector<double> sum, second(x.data.begin() + 12, x.data.end());
  for (std::size_t i = 0; i < 12; ++i) sum.push_back(std::max(0.f, x.data[i + 12]) + x.data[i]);
  PlanRun parts = CheckBoth(split, {x}, sum, 1e-6);
  INFO(test::StepList(parts));
  CheckClose(parts.outputs.at(1), second, 0);
  CHECK(test::StepsStartingWith(parts, "split ") == 0);
  CHECK(test::StepsStartingWith(parts, "reorder ") == 0);

  // A Gather of one index (ViT's class token x[:, 0]) is a view too; the Gemm reads it.
  Tensor tokens_in = TensorFrom({1, 5, 6}, Wave);
  std::vector<float> w = Floats(18, 0.5f, 2);
  std::vector<double> cls;
  for (std::int64_t j = 0; j < 3; ++j) {
    double s = 0;
    for (std::int64_t c = 0; c < 6; ++c) s += static_cast<double>(tokens_in.data[static_cast<std::size_t>(c)]) * w[static_cast<std::size_t>(c * 3 + j)];
    cls.push_back(s);
  }
  PlanRun gathered = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,5,6] x, float[6,3] w = )" + test::FloatList(w) + R"() => (float[1,3] y) {
      i = Constant <value = int64 {0}> ()
      c = Gather <axis = 1> (x, i)
      y = MatMul (c, w)
    })",
                               {tokens_in}, cls);
  INFO(test::StepList(gathered));
  CHECK(gathered.stats.kernels == 1);
}

TEST_CASE("a buffer a view still reads is not overwritten in place by a sum post-op", "[backend_ops][views]") {
  // s views c's buffer (the odd columns) and is a graph output; the second
  // Conv, of x, takes c (in the convolutions' layout) as the sum addend of its
  // residual Add. Writing that Conv's result over c would change s: the addend
  // is copied instead.
  Tensor x = TensorFrom({1, 2, 2, 4}, Wave);
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,2,4] x, float[2,2,1,1] w0 = {1, 0.5, -0.5, 1}, float[2,2,1,1] w = {0.5, -1, 2, 0.25})
        => (float[1,2,2,2] s, float[1,2,2,4] y) {
      u = Conv (x, w0)
      c = Relu (u)
      st = Constant <value = int64[1] {1}> ()
      en = Constant <value = int64[1] {4}> ()
      ax = Constant <value = int64[1] {3}> ()
      k = Constant <value = int64[1] {2}> ()
      s = Slice (c, st, en, ax, k)
      v = Conv (x, w)
      y = Add (v, c)
    })";
  const double w0[2][2] = {{1, 0.5}, {-0.5, 1}}, w[2][2] = {{0.5, -1}, {2, 0.25}};
  std::vector<double> c, s, y;
  for (std::size_t o = 0; o < 2; ++o)
    for (std::size_t p = 0; p < 8; ++p) c.push_back(std::max(0.0, w0[o][0] * x.data[p] + w0[o][1] * x.data[8 + p]));
  for (std::size_t i = 1; i < c.size(); i += 2) s.push_back(c[i]);
  for (std::size_t o = 0; o < 2; ++o)
    for (std::size_t p = 0; p < 8; ++p) y.push_back(w[o][0] * x.data[p] + w[o][1] * x.data[8 + p] + c[o * 8 + p]);
  PlanRun fused = CheckBoth(text, {x}, s, 1e-6);
  INFO(test::StepList(fused));
  CheckClose(fused.outputs.at(1), y, 1e-6);
  CHECK(test::StepsStartingWith(fused, "slice ") == 0);
}

TEST_CASE("an elementwise op does not write over a buffer that a view at an offset still reads", "[backend_ops][views]") {
  // s views a's buffer from its third element on (a view slot of its own);
  // n = Neg(s) makes s before Relu(a). Relu could then run in place, as
  // nothing reads a itself later, but s is read after it: by z = s -
  // Slice(y), which needs y first. Written over a, s would read Relu(a), and
  // z would be 0.
  Tensor x = TensorFrom({1, 6}, [](std::int64_t i) { return static_cast<float>(i % 2 ? 1 : -1) * (1.f + static_cast<float>(i)); });
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,6] x) => (float[1,6] y, float[1,2] z, float[1,2] n) {
      a = Add (x, x)
      st = Constant <value = int64[1] {2}> ()
      en = Constant <value = int64[1] {4}> ()
      ax = Constant <value = int64[1] {1}> ()
      s = Slice (a, st, en, ax)
      n = Neg (s)
      y = Relu (a)
      t = Slice (y, st, en, ax)
      z = Sub (s, t)
    })";
  std::vector<double> y, z;
  for (float v : x.data) y.push_back(std::max(0.0, 2.0 * v));
  for (std::size_t i = 2; i < 4; ++i) z.push_back(2.0 * x.data[i] - y[i]);
  PlanRun fused = CheckBoth(text, {x}, y, 1e-6);
  INFO(test::StepList(fused));
  CheckClose(fused.outputs.at(1), z, 1e-6);
  CHECK(z[0] != 0.0);  // x[2] < 0: the case that tells the two apart
}

TEST_CASE("fused, an elementwise op or Add writes over its source when nothing reads that later", "[backend_ops][in_place]") {
  // x [1, 2, 4, 4] (128 bytes); p, q its 2x2 max and average pools (32 bytes each).
  Tensor x = TensorFrom({1, 2, 4, 4}, Wave);
  std::vector<double> p, q;
  for (std::int64_t c = 0; c < 2; ++c)
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 2; ++j) {
        double high = -1e9, sum = 0;
        for (std::int64_t di = 0; di < 2; ++di)
          for (std::int64_t dj = 0; dj < 2; ++dj) {
            const double v = x.data[static_cast<std::size_t>(c * 16 + (2 * i + di) * 4 + 2 * j + dj)];
            high = std::max(high, v), sum += v;
          }
        p.push_back(high), q.push_back(sum / 4);
      }
  auto bytes = [](const std::string& text, const std::vector<Tensor>& inputs, bool fuse) {
    return test::RunPlan(test::GraphFromText(text), fuse, inputs).stats.buffer_bytes_total;
  };
  // A Relu after a pooling (no chain to join) runs in place over the pooled values.
  const std::string relu = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x) => (float[1,2,2,2] y) {
      p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x)
      y = Relu (p)
    })";
  std::vector<double> y;
  for (double v : p) y.push_back(std::max(0.0, v));
  CheckBoth(relu, {x}, y, 1e-6);
  CHECK(bytes(relu, {x}, true) == 128 + 32);
  CHECK(bytes(relu, {x}, false) == 128 + 32 + 32);
  // The Add writes over p; q is read by the Add itself.
  const std::string add = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x) => (float[1,2,2,2] s) {
      p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x)
      q = AveragePool <kernel_shape = [2, 2], strides = [2, 2]> (x)
      s = Add (p, q)
    })";
  std::vector<double> s;
  for (std::size_t i = 0; i < p.size(); ++i) s.push_back(p[i] + q[i]);
  CheckBoth(add, {x}, s, 1e-6);
  CHECK(bytes(add, {x}, true) == 128 + 32 + 32);
  // p is also a graph output: it keeps its values, the sum gets its own buffer.
  const std::string kept = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x) => (float[1,2,2,2] s, float[1,2,2,2] p) {
      p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x)
      q = AveragePool <kernel_shape = [2, 2], strides = [2, 2]> (x)
      s = Add (p, q)
    })";
  PlanRun both = CheckBoth(kept, {x}, s, 1e-6);
  CheckClose(both.outputs.at(1), p, 0);
  CHECK(both.stats.buffer_bytes_total == 128 + 32 + 32 + 32);
}

TEST_CASE("0-size tensors: Split, Slice and views pass them on, any other reader is refused at build time",
          "[backend_ops]") {
  Tensor empty = TensorFrom({0, 3}, Wave);
  const std::string parts = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[0,3] x) => (float[0,1] a, float[0,2] b) {
      s = Constant <value = int64[2] {1, 2}> ()
      a, b = Split <axis = 1> (x, s)
    })";
  for (bool fuse : {false, true}) {
    test::PlanRun run = test::RunPlan(test::GraphFromText(parts), fuse, {empty});
    CHECK(run.outputs.at(0).dims == Dims{0, 1});
    CHECK(run.outputs.at(1).dims == Dims{0, 2});
    CHECK(run.outputs.at(1).data.empty());
  }
  // An empty Slice read by a MatMul (its kernel would see a zero dim; it divided by it before).
  CHECK_THAT(CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4,3] x, float[3,2] w = {1, 2, 3, 4, 5, 6}) => (float[0,2] y) {
      s = Constant <value = int64[1] {2}> ()
      e = Constant <value = int64[1] {2}> ()
      t = Slice (x, s, e)
      y = MatMul (t, w)
    })"),
             Catch::Matchers::Contains("node 'MatMul_3' (MatMul): input 't' has no elements (shape [0,3])"));
  CHECK_THAT(CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[0,3] x) => (float[0,3] y) {
      y = Relu (x)
    })"),
             Catch::Matchers::Contains("0-size tensors are not supported here"));
}

TEST_CASE("Dropout is the identity in inference, its mask all true, and random dropping (training_mode true, ratio above 0) is refused",
          "[backend_ops][views]") {
  Tensor x = TensorFrom({2, 3}, Wave);
  const std::vector<double> same(x.data.begin(), x.data.end());
  auto model = [](const std::string& ratio, const std::string& mode) {
    return R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3] x, float r = {)" + ratio + "}, bool t = {" + mode + R"(}) => (float[2,3] y) {
        d = Dropout (x, r, t)
        y = Relu (d)
      })";
  };
  // training_mode false, or true with ratio 0 (ONNX Operators.md, Dropout-13): the identity.
  for (const auto& [ratio, mode] : {std::pair<const char*, const char*>{"0.5", "0"}, {"0.0", "1"}}) {
    INFO("ratio " << ratio << ", training_mode " << mode);
    std::vector<double> y = same;
    for (double& v : y) v = std::max(v, 0.0);
    CheckBoth(model(ratio, mode), {x}, y, 0);
  }
  CHECK_THAT(CompileError(model("0.5", "1")),
             Catch::Matchers::Contains("node 'Dropout_0' (Dropout): training_mode is true and ratio above 0"));
  // The mask (BOOL) as a graph output: all true, as nothing is dropped.
  for (bool fuse : {true, false}) {
    test::PlanRun run = test::RunPlan(test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3] x) => (float[2,3] y, bool[2,3] m) {
        y, m = Dropout (x)
      })"), fuse, {x});
    test::CheckClose(run.outputs[0], same);
    CHECK(run.outputs[1].DataType() == onnx::TensorProto::BOOL);
    CHECK(run.outputs[1].int_data == std::vector<std::int64_t>(6, 1));
  }
  // Folded at build time (a constant input): refused the same way.
  CHECK_THAT(CompileError(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[2,3] c = {1, 2, 3, 4, 5, 6}, bool t = {1}) => (float[2,3] y) {
      d = Dropout (c, , t)
      y = Add (x, d)
    })"),
             Catch::Matchers::Contains("training_mode is true and ratio above 0"));
}

TEST_CASE("SpaceToDepth then DepthToSpace (DCR) give the input back, one reorder each", "[backend_ops]") {
  Tensor x = TensorFrom({1, 3, 4, 6}, [](std::int64_t i) { return static_cast<float>(i); });
  PlanRun fused = CheckBoth(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,4,6] x) => (float[1,3,4,6] y) {
      s = SpaceToDepth <blocksize = 2> (x)
      y = DepthToSpace <blocksize = 2, mode = "DCR"> (s)
    })",
                            {x}, std::vector<double>(x.data.begin(), x.data.end()), 0);
  CHECK(fused.stats.kernels == 2);
  // SpaceToDepth's channel c' = (b1 * 2 + b2) * 3 + c holds x[c][2h + b1][2w + b2].
  Tensor s = test::RunPlan(test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,4,6] x) => (float[1,12,2,3] s) {
      s = SpaceToDepth <blocksize = 2> (x)
    })"), true, {x}).outputs.at(0);
  CHECK(s.data[static_cast<std::size_t>(((1 * 2 + 0) * 3 + 2) * 6 + 1 * 3 + 2)] == x.data[2 * 24 + 3 * 6 + 4]);
}

// Build-time folding (PrefoldConstants, TryFold: the host evaluator on known
// inputs) and the nodes whose inputs are all known but which it cannot
// evaluate (Builder::ConstAsAct), as torchvision's detection models use them.
TEST_CASE("Slice's ends of INT64_MAX survive build-time evaluation", "[views]") {
  // torchvision's anchor generator: anchors[:, 2:] with ends 9223372036854775807.
  // Read through a double, INT64_MAX became 2^63, which converted to INT64_MIN:
  // an empty slice, then "shapes [3234,2] and [3234,0] do not broadcast".
  const std::string text = std::string(kHeader) +
                           "g (float[2,2] x) => (float[2,2] y) {\n"
                           "  c = Constant <value = float[2,4] {1, 2, 3, 4, 5, 6, 7, 8}> ()\n"
                           "  s = Constant <value = int64[1] {2}> ()\n"
                           "  e = Constant <value = int64[1] {9223372036854775807}> ()\n"
                           "  a = Constant <value = int64[1] {1}> ()\n"
                           "  t = Slice (c, s, e, a)\n"
                           "  y = Add (x, t)\n"
                           "}";
  const Tensor x = test::TensorFrom({2, 2}, [](std::int64_t i) { return 0.5f * static_cast<float>(i); });
  test::CheckBoth(text, {x}, {3.0, 4.5, 8.0, 9.5}, 0);

}

TEST_CASE("Reduce*, Min, Max, Ceil and Tile of constants fold at build time", "[views]") {
  // torchvision's GeneralizedRCNNTransform: ReduceMax of a Constant image
  // size, Ceil of a division, then a Pad's amounts; it was an internal error
  // ("reads '/transform/Constant_9_output_0' before it is computed").
  const std::string text = std::string(kHeader) +
                           "g (float[2,3] x) => (float[2,3] y) {\n"
                           "  c = Constant <value = float[2,3] {1, -2, 3.5, -4, 5, 0.25}> ()\n"
                           "  m = ReduceMax <axes = [1], keepdims = 1> (c)\n"          // [[3.5], [5]]
                           "  n = ReduceMean <keepdims = 0> (c)\n"                       // 3.75 / 6 = 0.625
                           "  k = Ceil (m)\n"                                            // [[4], [5]]
                           "  r = Constant <value = int64[2] {1, 3}> ()\n"
                           "  o = Constant <value = float[1,1] {0.5}> ()\n"
                           "  t = Tile (o, r)\n"                                         // [[.5, .5, .5]]
                           "  u = Max (k, t)\n"                                          // [[4]*3, [5]*3]
                           "  v = Add (u, n)\n"
                           "  y = Add (x, v)\n"
                           "}";
  const Tensor x = test::TensorFrom({2, 3}, [](std::int64_t i) { return static_cast<float>(i); });
  test::CheckBoth(text, {x}, {4.625, 5.625, 6.625, 8.625, 9.625, 10.625}, 1e-6);
}

TEST_CASE("a node whose inputs are all constants, which build time cannot evaluate, runs", "[views]") {
  // Softmax has no build-time evaluator: its constant input becomes an
  // activation filled at the start of each inference (Builder::ConstAsAct).
  const std::string text = std::string(kHeader) +
                           "g (float[1,3] x) => (float[1,3] y) {\n"
                           "  c = Constant <value = float[1,3] {0, 1, 2}> ()\n"
                           "  s = Softmax <axis = 1> (c)\n"
                           "  y = Add (x, s)\n"
                           "}";
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  const Tensor x = test::TensorFrom({1, 3}, [](std::int64_t i) { return static_cast<float>(i); });
  test::CheckBoth(text, {x}, {1 / z, 1 + std::exp(1.0) / z, 2 + std::exp(2.0) / z}, 1e-6);
}
