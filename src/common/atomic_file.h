// Writing files so that a failure never leaves a partial or damaged file.
//
// The content goes to a unique temporary file next to the target (mkstemp),
// is fsync'ed, then rename(2)s over the target, which POSIX makes atomic
// within one file system. Any failure removes the temporary file and leaves
// the target as it was. An existing target's permissions are kept.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace onnxfuse {

/// `write` fills the temporary file through the open descriptor and returns 0,
/// or an errno value on failure. Throws Error(kIo) "<path>: <step>: <reason>".
void WriteFileAtomically(const std::string& path, const std::function<int(int fd)>& write);

/// True when `a` and `b` name the same file (an existing `b` the same inode,
/// or the same normalised path): a job refuses to write over its input.
bool SameFile(const std::string& a, const std::string& b);

/// WriteFileAtomically for a string's bytes.
void WriteTextAtomically(const std::string& path, const std::string& text);

/// Writes all `size` bytes to `fd` (retrying short writes and EINTR). Returns 0 or an errno value.
int WriteAll(int fd, const void* data, std::size_t size);

/// The steps of WriteFileAtomically, for writes that must commit together (a
/// model and its external-data file): create every temporary file, write and
/// Sync() each, then Commit() each. Until Commit(), the target is untouched;
/// a temporary file not committed is removed by the destructor.
class AtomicFile {
 public:
  /// Creates "<path>.tmp.XXXXXX" next to `path`. Throws Error(kIo).
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }
  /// Throws Error(kIo) "<path>: cannot write <temp>: <strerror(error)>" when error != 0.
  void CheckWrite(int error) const;
  /// fsync and close the temporary file. Throws Error(kIo).
  void Sync();
  /// Renames the temporary file over the target (after Sync) and syncs the directory. Throws Error(kIo).
  void Commit();

 private:
  std::string path_, temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace onnxfuse
