// SaveModelAtomically: one file, or a model plus its external-data file,
// written atomically (see src/write/onnx_writer.h).
//
// Over protobuf's 2 GB limit the model is split: a copy of everything but the
// large initializers' bytes (google::protobuf::util::FieldMaskUtil copies all
// fields but the named ones, so fields added to onnx.proto later are kept), in
// which each large initializer is a stub pointing into "<out>.data"; the bytes
// themselves are written straight from the caller's model, never copied.
#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include <google/protobuf/field_mask.pb.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/field_mask_util.h>

#include "common/atomic_file.h"
#include "onnxfuse/error.h"
#include "write/onnx_writer.h"

namespace onnxfuse {

namespace {

using google::protobuf::FieldMask;
using google::protobuf::Message;
using google::protobuf::util::FieldMaskUtil;

constexpr std::int64_t kPageAlignment = 4096, kSmallAlignment = 64, kPageAlignedFrom = 64 * 1024;

// Merges every set field of `from` into `to` except the top-level fields named in `skip`.
void CopyAllBut(const Message& from, Message* to, const std::vector<std::string>& skip) {
  FieldMask mask;
  const auto* descriptor = from.GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const std::string& name = descriptor->field(i)->name();
    if (std::find(skip.begin(), skip.end(), name) == skip.end()) mask.add_paths(name);
  }
  FieldMaskUtil::MergeMessageTo(from, mask, FieldMaskUtil::MergeOptions(), to);
}

bool GoesExternal(const onnx::TensorProto& t, const SaveOptions& options) {
  return t.data_location() != onnx::TensorProto::EXTERNAL &&
         static_cast<std::int64_t>(t.raw_data().size()) >= options.min_external_bytes && !t.raw_data().empty();
}

std::int64_t AlignUp(std::int64_t offset, std::int64_t length) {
  const std::int64_t alignment = length >= kPageAlignedFrom ? kPageAlignment : kSmallAlignment;
  return (offset + alignment - 1) / alignment * alignment;
}

void AddEntry(onnx::TensorProto* t, const std::string& key, const std::string& value) {
  auto* entry = t->add_external_data();
  entry->set_key(key);
  entry->set_value(value);
}

// The model without the large initializers' bytes; `external` receives, per
// moved initializer, its index in the graph and its offset in the data file.
onnx::ModelProto Split(const onnx::ModelProto& model, const std::string& location, const SaveOptions& options,
                       std::vector<std::pair<int, std::int64_t>>& external) {
  onnx::ModelProto out;
  CopyAllBut(model, &out, {"graph"});
  const onnx::GraphProto& graph = model.graph();
  CopyAllBut(graph, out.mutable_graph(), {"initializer"});
  std::int64_t offset = 0;
  for (int i = 0; i < graph.initializer_size(); ++i) {
    const onnx::TensorProto& t = graph.initializer(i);
    auto* copy = out.mutable_graph()->add_initializer();
    if (!GoesExternal(t, options)) {
      *copy = t;
      continue;
    }
    CopyAllBut(t, copy, {"raw_data", "external_data", "data_location"});
    const auto length = static_cast<std::int64_t>(t.raw_data().size());
    offset = AlignUp(offset, length);
    copy->set_data_location(onnx::TensorProto::EXTERNAL);
    AddEntry(copy, "location", location);
    AddEntry(copy, "offset", std::to_string(offset));
    AddEntry(copy, "length", std::to_string(length));
    external.emplace_back(i, offset);
    offset += length;
  }
  return out;
}

void Serialize(const onnx::ModelProto& model, AtomicFile& file) {
  google::protobuf::io::FileOutputStream stream(file.fd());
  if (model.SerializeToZeroCopyStream(&stream) && stream.Flush()) return;
  file.CheckWrite(stream.GetErrno() ? stream.GetErrno() : EIO);
}

}  // namespace

void SaveModelAtomically(const onnx::ModelProto& model, const std::string& path, const SaveOptions& options) {
  const std::uint64_t size = model.ByteSizeLong();
  const std::string data_path = path + ".data";
  std::vector<std::pair<int, std::int64_t>> external;
  onnx::ModelProto head;
  if (size > options.inline_limit || size > kProtobufMessageLimit)
    head = Split(model, std::filesystem::path(data_path).filename().string(), options, external);
  if (external.empty() && size <= kProtobufMessageLimit) {  // small enough, or nothing worth moving
    AtomicFile file(path);
    Serialize(model, file);
    file.Commit();
    return;
  }
  const std::uint64_t head_size = head.ByteSizeLong();
  if (head_size > kProtobufMessageLimit)
    throw Error(ErrorKind::kUnsupported,
                path + ": the model is " + std::to_string(head_size) + " bytes without its " +
                    std::to_string(external.size()) +
                    " large initializers, over protobuf's 2 GB limit for one message (large Constant nodes?)");

  AtomicFile data(data_path), file(path);
  std::int64_t written = 0;
  const std::vector<char> zeros(kPageAlignment, 0);
  for (const auto& [index, offset] : external) {
    const std::string& bytes = model.graph().initializer(index).raw_data();
    data.CheckWrite(WriteAll(data.fd(), zeros.data(), static_cast<std::size_t>(offset - written)));
    data.CheckWrite(WriteAll(data.fd(), bytes.data(), bytes.size()));
    written = offset + static_cast<std::int64_t>(bytes.size());
  }
  data.Sync();
  Serialize(head, file);
  file.Sync();
  data.Commit();  // a model never refers to data that is not yet in place
  file.Commit();
}

}  // namespace onnxfuse
