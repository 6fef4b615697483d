// Host tensors and their files: the inputs and outputs of `onnx-fuse run`.
//
// Files follow the ONNX backend-test layout (onnx/backend/test/data/node/*/
// test_data_set_0): DIR/input_0.pb, input_1.pb, ... and output_0.pb, ...,
// each one serialized onnx.TensorProto. Reading accepts float32, float16,
// double, int64, int32, int16, int8, uint64, uint32, uint16, uint8 and bool
// tensors (raw_data or the typed field); their values are held widened
// (storage types below) and the ONNX type is kept in Tensor::data_type.
// Writing stores the values narrowed back to data_type as raw_data
// (little-endian, the ONNX spec's byte order).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnxfuse/tensor.h"

namespace onnxfuse {

/// The storage type of an ONNX element type (TensorProto::DataType): FLOAT for
/// FLOAT, FLOAT16 and DOUBLE (computed in float32); INT64 for every integer
/// type and BOOL (0 or 1); UNDEFINED (0) for the types onnx-fuse cannot hold
/// (STRING, complex, bfloat16, ...).
std::int32_t StorageTypeOf(std::int32_t data_type);


/// Converts a TensorProto (raw or typed fields; the types listed above) into a
/// Tensor (data_type: the proto's). `where` names the source in messages.
/// Throws Error(kUnsupported) for other types or external data, Error(kInvalidModel)
/// when the byte count does not match the dims.
Tensor TensorFromProto(const onnx::TensorProto& proto, const std::string& where);
/// The tensor as raw_data of its DataType(): float values rounded to FLOAT16 or
/// widened to DOUBLE, integers wrapped to the type's width, BOOL as 0/1.
onnx::TensorProto TensorToProto(const Tensor& tensor);
/// A tensor's ValueInfoProto, as a graph's input, output or value_info states
/// it: `name`, `elem_type` (TensorProto::DataType), and `dims` when given
/// (else no shape: rank unknown).
onnx::ValueInfoProto TensorValueInfo(const std::string& name, std::int32_t elem_type,
                                     const std::vector<std::int64_t>* dims);

// ReadTensorFile: onnxfuse/tensor.h.
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

/// Deterministic pseudo-random inputs for every graph input, from mulberry32
/// seeded with (input index + 1), the generator of scripts/ort/compare.js, so
/// both tools feed identical inputs: float inputs uniform in [-1, 1); integer
/// inputs small non-negative values, floor(u * 4) for u uniform in [0, 1)
/// (valid as indices into any dim of 4 or more); bool inputs u < 0.5.
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
