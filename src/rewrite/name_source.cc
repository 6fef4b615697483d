#include "rewrite/name_source.h"

#include "ir/names.h"

namespace onnxfuse {

NameSource::NameSource(const onnx::ModelProto& model) { CollectNames(model.graph(), taken_); }

std::string NameSource::Fresh(const std::string& base) { return FreshName(base, taken_); }

}  // namespace onnxfuse
