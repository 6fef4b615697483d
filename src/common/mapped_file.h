// A whole file mapped read-only into memory (POSIX mmap), for readers that
// parse it where it lies: the model loader (protobuf parses a message from
// one flat buffer, copying each tensor's bytes once) and plan files (whose
// constants are used in place).
#pragma once

#include <cstddef>
#include <string>

namespace onnxfuse {

class MappedFile {
 public:
  /// Maps the regular file at `path`, its pages faulted in at once
  /// (MAP_POPULATE: every reader here reads every byte). The mapping is
  /// private and read-only, and lives until destruction; the file may be
  /// renamed over meanwhile (atomic_file.h) but not truncated in place, which
  /// would fault its readers (SIGBUS), as with any mapped file.
  /// Throws Error(kIo) "<path>: cannot open: <reason>", "<path>: not a regular
  /// file" or "<path>: cannot map: <reason>".
  explicit MappedFile(const std::string& path);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  /// The file's bytes (a valid pointer for an empty file too).
  const void* data() const;
  /// Bytes.
  std::size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace onnxfuse
