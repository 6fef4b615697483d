// Host tensors and their files: the inputs and outputs of `onnx-fuse run`.
//
// Files follow the ONNX backend-test layout (onnx/backend/test/data/node/*/
// test_data_set_0): DIR/input_0.pb, input_1.pb, ... and output_0.pb, ...,
// each one serialized onnx.TensorProto. Reading accepts float32 (raw_data or
// float_data), float16, double, int32 and int64 tensors; float-like types are
// converted to float32, integer types to int64. Writing stores float32 and
// int64 as raw_data (little-endian, the ONNX spec's byte order).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnxfuse/graph.h"

namespace onnxfuse {

/// A dense, row-major host tensor. Exactly one of `data` / `int_data` holds the
/// elements: `data` when elem_type is FLOAT, `int_data` when it is INT64.
struct Tensor {
  std::string name;
  std::int32_t elem_type = onnx::TensorProto::FLOAT;  ///< FLOAT or INT64
  std::vector<std::int64_t> dims;
  std::vector<float> data;
  std::vector<std::int64_t> int_data;

  std::int64_t NumElements() const;
};

/// Converts a TensorProto (raw or typed fields; FLOAT, FLOAT16, DOUBLE, INT32,
/// INT64, INT8, UINT8, BOOL) into a Tensor. `where` names the source in messages.
/// Throws Error(kUnsupported) for other types or external data, Error(kInvalidModel)
/// when the byte count does not match the dims.
Tensor TensorFromProto(const onnx::TensorProto& proto, const std::string& where);
onnx::TensorProto TensorToProto(const Tensor& tensor);

/// Reads one serialized TensorProto. Throws Error(kIo) / Error(kInvalidModel).
Tensor ReadTensorFile(const std::string& path);
/// Writes one tensor atomically. Throws Error(kIo).
void WriteTensorFile(const std::string& path, const Tensor& tensor);

/// DIR/<prefix>_0.pb, DIR/<prefix>_1.pb, ... up to the first missing index.
/// Throws Error(kIo) when DIR has no <prefix>_0.pb.
std::vector<Tensor> ReadTensorDir(const std::string& dir, const std::string& prefix = "input");
/// Writes DIR/<prefix>_N.pb for each tensor (creating DIR).
void WriteTensorDir(const std::string& dir, const std::vector<Tensor>& tensors, const std::string& prefix = "output");

/// Orders `tensors` as the graph's inputs: by name when every tensor's name is a
/// graph input, else by position. Checks element type and (known) dims and names
/// each tensor after its input. Throws Error(kUsage) on a count, type or shape mismatch.
std::vector<Tensor> MatchInputs(const Graph& graph, std::vector<Tensor> tensors);

/// Deterministic pseudo-random inputs for every graph input: float inputs uniform
/// in [-1, 1) from mulberry32 seeded with (input index + 1), the generator of
/// scripts/ort/compare.js, so both tools feed identical inputs; int64 inputs are 0.
/// Unknown or symbolic dims are 1 (as in compare.js); pin them with --input-shape.
std::vector<Tensor> RandomInputs(const Graph& graph);

/// Difference of two tensors: max |a - b| and that divided by max |reference|
/// (the tensor-wide relative measure of scripts/ort/compare.js).
struct TensorDiff {
  double max_abs = 0;
  double max_rel = 0;
  bool shape_mismatch = false;
};
TensorDiff CompareTensors(const Tensor& reference, const Tensor& candidate);

}  // namespace onnxfuse
