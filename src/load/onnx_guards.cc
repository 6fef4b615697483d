// See onnx_guards.h. The registry's schemas are plain objects that libonnx
// hands out as const pointers; replacing one's inference function (via
// OpSchema::TypeAndShapeInferenceFunction, its own setter) once, before any
// inference runs, is how a fixed inference function would be installed too.
#include "load/onnx_guards.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include "ir/tensor_values.h"

namespace onnxfuse::detail {

namespace {

int RankOf(onnx::InferenceContext& ctx, std::size_t index) {
  if (index >= ctx.getNumInputs()) return -1;
  const auto* type = ctx.getInputType(index);
  if (!type || !type->has_tensor_type() || !type->tensor_type().has_shape()) return -1;
  return type->tensor_type().shape().dim_size();
}

enum class Verdict { kRun, kTypeOnly };

using Precondition = Verdict (*)(onnx::InferenceContext& ctx);

template <std::size_t X, std::size_t W>
Verdict SameRankAsInput(onnx::InferenceContext& ctx) {
  const int x = RankOf(ctx, X), w = RankOf(ctx, W);
  if (x >= 0 && w >= 0 && x != w)
    fail_shape_inference("the weight has rank ", w, " but the input has rank ", x, "; they must be equal");
  if (w >= 0 && w < 2) fail_shape_inference("the weight has rank ", w, "; at least 2 is needed");
  return Verdict::kRun;
}

Verdict IndicesShaped(onnx::InferenceContext& ctx) {
  return RankOf(ctx, 1) >= 2 ? Verdict::kRun : Verdict::kTypeOnly;
}

// Reshape's shape entry 0 copies the input's dim at that index (allowzero 0):
// libonnx 1.12 reads past the input's dims when there is none (SEGV; the
// fuzzer reached it through an opset-18 model whose ReduceMean had keepdims 5).
Verdict ReshapeZerosWithinRank(onnx::InferenceContext& ctx) {
  const int rank = RankOf(ctx, 0);
  const onnx::TensorProto* shape = ctx.getNumInputs() > 1 ? ctx.getInputData(1) : nullptr;
  const auto* allowzero = ctx.getAttribute("allowzero");
  if (rank < 0 || !shape || shape->data_type() != onnx::TensorProto::INT64 || (allowzero && allowzero->i() != 0))
    return Verdict::kRun;
  const auto values = DecodeTensor<std::int64_t>(*shape, "Reshape's shape");
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] == 0 && static_cast<int>(i) >= rank)
      fail_shape_inference("Reshape: shape[", i, "] is 0 (keep the input's dim) but the input has rank ", rank);
  return Verdict::kRun;
}

// A window op's strides, dilations and kernel_shape are positive (ONNX
// Operators.md, Conv and the poolings): libonnx 1.12's convPoolShapeInference
// divides by the stride (SIGFPE on 0: the fuzzer's MaxPool with strides [2, 0]).
Verdict PositiveWindow(onnx::InferenceContext& ctx) {
  for (const char* name : {"strides", "dilations", "kernel_shape"})
    if (const onnx::AttributeProto* attribute = ctx.getAttribute(name))
      for (std::int64_t v : attribute->ints())
        if (v < 1) fail_shape_inference(name, " has an entry ", v, "; every entry must be at least 1");
  return Verdict::kRun;
}

// Both preconditions: the first that refuses or types only decides.
template <Precondition First, Precondition Second>
Verdict Both(onnx::InferenceContext& ctx) {
  return First(ctx) == Verdict::kRun ? Second(ctx) : Verdict::kTypeOnly;
}

// Calls edit(schema) on every version of the default-domain operator `op` in
// the registry: Schema(op, v) is the latest version since v or before, so the
// walk goes from the newest opset down, one lookup per version. (The registry
// lists its schemas only as a copy of them all, 444 in libonnx 1.12, which
// took 8 ms.)
template <typename Edit>
void EditSchemas(const std::string& op, Edit edit) {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto latest = ranges.find(onnx::ONNX_DOMAIN);
  if (latest == ranges.end()) return;
  for (int version = latest->second.second; version >= 1;) {
    auto* schema = const_cast<onnx::OpSchema*>(onnx::OpSchemaRegistry::Schema(op, version, onnx::ONNX_DOMAIN));
    if (!schema) return;
    edit(*schema);
    version = schema->since_version() - 1;
  }
}

void Guard(const std::string& op, Precondition precondition) {
  EditSchemas(op, [precondition](onnx::OpSchema& schema) {
    auto original = schema.GetTypeAndShapeInferenceFunction();
    schema.TypeAndShapeInferenceFunction([original, precondition](onnx::InferenceContext& ctx) {
      if (precondition(ctx) == Verdict::kRun) original(ctx);
      else onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    });
  });
}

// Data propagation (Shape -> ... -> Reshape targets) is skipped for a node
// whose input has no type at all: libonnx 1.12's Shape propagator reads its
// input's type without checking for one (SEGV at a null TypeProto). An input
// has no type when an upstream node's inference failed (the errors are
// collected, error_mode 1, and refuse the model afterwards): the fuzzer reached
// it through an opset-18 GroupNormalization, whose converted body starts with
// Shape(X), below a Sub whose broadcast failed. Nothing is lost: there is no
// shape to propagate, and the model is refused either way.
void GuardPropagation(const std::string& op) {
  EditSchemas(op, [](onnx::OpSchema& schema) {
    auto original = schema.GetDataPropagationFunction();
    schema.PartialDataPropagationFunction([original](onnx::DataPropagationContext& ctx) {
      for (std::size_t i = 0; i < ctx.getNumInputs(); ++i)
        if (!ctx.getInputType(i)) return;
      original(ctx);
    });
  });
}

}  // namespace

void InstallOnnxInferenceGuards() {
  static std::once_flag once;
  std::call_once(once, [] {
    Guard("Conv", Both<PositiveWindow, SameRankAsInput<0, 1>>);
    Guard("ConvInteger", Both<PositiveWindow, SameRankAsInput<0, 1>>);
    Guard("QLinearConv", Both<PositiveWindow, SameRankAsInput<0, 3>>);
    Guard("ConvTranspose", Both<PositiveWindow, SameRankAsInput<0, 1>>);
    Guard("MaxPool", PositiveWindow);
    Guard("AveragePool", PositiveWindow);
    Guard("LpPool", PositiveWindow);
    Guard("MaxUnpool", Both<PositiveWindow, IndicesShaped>);
    Guard("Reshape", ReshapeZerosWithinRank);
    GuardPropagation("Shape");
  });
}

}  // namespace onnxfuse::detail
