// Classifies one image with an onnx-fuse InferenceSession and prints the top 5.
//   classify MODEL(.onnx|.plan) [IMAGE.pb]
// IMAGE.pb: a serialized TensorProto float[1,3,H,W], normalized as the model
// expects (the models' test_data_set_0/input_0.pb); without it, a gray image.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

#include <onnxfuse/error.h>
#include <onnxfuse/session.h>
#include <onnxfuse/tensor.h>

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: classify MODEL [IMAGE.pb]\n"), 2;
  try {
    onnxfuse::SessionOptions options;
    options.threads = 1;
    onnxfuse::InferenceSession session(argv[1], options);
    const onnxfuse::ValueInfo& input = session.inputs().at(0);
    onnxfuse::Tensor image;
    if (argc > 2) {
      image = onnxfuse::ReadTensorFile(argv[2]);
    } else {
      image.dims = input.dims;
      for (auto& d : image.dims) d = d < 0 ? 1 : d;  // a symbolic batch: 1
      image.data.assign(static_cast<std::size_t>(image.NumElements()), 0.0f);
    }
    auto outputs = session.Run({{input.name, {onnxfuse::ElementType::kFloat, image.dims, image.data.data()}}});
    const std::vector<float>& scores = outputs.at(0).data;
    std::vector<int> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    const std::size_t top = std::min<std::size_t>(5, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<long>(top), order.end(),
                      [&](int a, int b) { return scores[std::size_t(a)] > scores[std::size_t(b)]; });
    for (std::size_t i = 0; i < top; ++i) std::printf("class %d: %.4f\n", order[i], scores[std::size_t(order[i])]);
    return 0;
  } catch (const onnxfuse::Error& e) {
    std::fprintf(stderr, "classify: %s\n", e.what());
    return e.exit_code();
  }
}
