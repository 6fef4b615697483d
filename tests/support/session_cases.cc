#include "session_cases.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "test_models.h"

namespace onnxfuse::test {

const char* const kNonZeroModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N] x) => (float[K] y, int64[1, K] idx) {
  zero = Constant <value = float {0}> ()
  pos = Greater(x, zero)
  idx = NonZero(pos)
  flat = Squeeze(idx)
  picked = Gather(x, flat)
  two = Constant <value = float {2}> ()
  y = Mul(picked, two)
}
)";

const char* const kBatchModel = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[N,4] x, float[N,4] z,
     float[4,3] w = {0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0, 0.3, -0.7, 0.2, 0.9},
     float[3] b = {0.1, -0.2, 0.05}) => (float[N,3] y) {
    s = Add (x, z)
    m = MatMul (s, w)
    a = Add (m, b)
    y = Relu (a)
  })";
const double kBatchW[4][3] = {{0.5, -0.25, 0.75}, {1.0, -0.5, 0.25}, {0.125, -1.0, 0.3}, {-0.7, 0.2, 0.9}};
const double kBatchB[3] = {0.1, -0.2, 0.05};

std::string SmallCnnModel(int image_size) {
  std::ostringstream text;
  text << R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[N,3,)" << image_size << "," << image_size << R"(] x, float[8,3,3,3] w1 = )"
       << FloatList(Floats(8 * 3 * 3 * 3, 0.5f, 1)) << ", float[8] b1 = " << FloatList(Floats(8, 0.25f, 2))
       << ", float[8,8,1,1] w2 = " << FloatList(Floats(8 * 8, 0.5f, 3))
       << ", float[5,8] wf = " << FloatList(Floats(5 * 8, 1.0f, 4)) << ", float[5] bf = " << FloatList(Floats(5, 0.5f, 5))
       << R"() => (float[N,5] y) {
    c1 = Conv <pads = [1, 1, 1, 1]> (x, w1, b1)
    r1 = Relu (c1)
    c2 = Conv (r1, w2)
    s = Add (c2, r1)
    p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (s)
    g = GlobalAveragePool (p)
    f = Flatten (g)
    y = Gemm <transB = 1> (f, wf, bf)
  })";
  return text.str();
}

std::string WriteModel(const TempDir& dir, const std::string& text, const std::string& name) {
  return dir.Write(name, ParseModel(text).SerializeAsString());
}

BatchInputs::BatchInputs(std::int64_t batch, int salt) : n(batch) {
  for (std::int64_t i = 0; i < 4 * n; ++i) {
    x.push_back(Wave(i + salt));
    z.push_back(Wave(3 * i + salt) / 2);
  }
}

NamedInputs BatchInputs::Views() const {
  return {{"x", {ElementType::kFloat, {n, 4}, x.data()}}, {"z", {ElementType::kFloat, {n, 4}, z.data()}}};
}

std::vector<double> BatchInputs::Reference() const {
  std::vector<double> y;
  for (std::int64_t r = 0; r < n; ++r)
    for (int c = 0; c < 3; ++c) {
      double acc = kBatchB[c];
      for (int k = 0; k < 4; ++k)
        acc += (double(x[std::size_t(r * 4 + k)]) + double(z[std::size_t(r * 4 + k)])) * kBatchW[k][c];
      y.push_back(std::max(acc, 0.0));
    }
  return y;
}

CnnInputs::CnnInputs(std::int64_t batch, int salt, int image_size) : n(batch), size(image_size) {
  for (std::int64_t i = 0; i < n * 3 * size * size; ++i) x.push_back(Wave(5 * i + salt));
}

NamedInputs CnnInputs::Views() const { return {{"x", {ElementType::kFloat, {n, 3, size, size}, x.data()}}}; }

ModelCase LoadCase(const std::string& name) {
  ModelCase c{std::string(ONNXFUSE_MODELS_DIR) + "/" + name, {}};
  REQUIRE(std::filesystem::exists(c.dir + "/model.onnx"));  // scripts/export_models.py; a missing model fails
  c.inputs = ReadTensorDir(c.dir + "/test_data_set_0", "input");
  return c;
}

NamedInputs ViewsOf(const std::vector<Tensor>& inputs, const InferenceSession& session) {
  NamedInputs views;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    views[session.inputs()[i].name] = {ElementType::kFloat, inputs[i].dims, inputs[i].data.data()};
  return views;
}

}  // namespace onnxfuse::test
