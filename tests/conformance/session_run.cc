// A node test's data set through InferenceSession: the model written where the
// session can open it, the inputs narrowed from the harness's storage types to
// the types the session checks them against.
#include "session_run.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "onnxfuse/error.h"
#include "onnxfuse/session.h"
#include "session/element_convert.h"

namespace onnxfuse::conformance {

namespace fs = std::filesystem;

namespace {

// Removes the model file when the run ends, however it ends.
struct ScratchFile {
  fs::path path;
  ~ScratchFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

}  // namespace

std::vector<Tensor> RunInSession(const onnx::ModelProto& model, const std::string& source,
                                 const std::vector<Tensor>& fed) {
  // One file per process: the runner forks one child per test.
  ScratchFile file{fs::temp_directory_path() / ("onnxfuse_conformance_" + std::to_string(getpid()) + ".onnx")};
  {
    std::ofstream out(file.path, std::ios::binary);
    if (!model.SerializeToOstream(&out)) throw Error(ErrorKind::kIo, source + ": cannot write " + file.path.string());
  }
  InferenceSession session(file.path.string());
  std::vector<std::vector<char>> buffers;
  buffers.reserve(session.inputs().size());
  NamedInputs views;
  for (const ValueInfo& in : session.inputs()) {
    const Tensor* given = nullptr;
    for (const Tensor& t : fed)
      if (t.name == in.name) given = &t;
    if (!given) throw Error(ErrorKind::kUsage, source + ": the data set has no input '" + in.name + "'");
    const ElementType storage_type =
        given->elem_type == onnx::TensorProto::INT64 ? ElementType::kInt64 : ElementType::kFloat;
    if (session::StorageOf(in.type) != storage_type)
      throw Error(ErrorKind::kUsage, source + ": input '" + in.name + "' is " + ElementTypeName(in.type) +
                                         ", the data set's is held as " + ElementTypeName(storage_type));
    const std::int64_t count = given->NumElements();
    const void* storage = given->elem_type == onnx::TensorProto::INT64 ? static_cast<const void*>(given->int_data.data())
                                                                       : static_cast<const void*>(given->data.data());
    buffers.emplace_back(static_cast<std::size_t>(count) * ElementSize(in.type) + 1);
    session::NarrowFromStorage(in.type, storage, count, buffers.back().data());
    views[in.name] = {in.type, given->dims, buffers.back().data()};
  }
  return session.Run(views);
}

}  // namespace onnxfuse::conformance
