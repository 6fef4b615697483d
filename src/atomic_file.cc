// Atomic file writes (see include/onnxfuse/atomic_file.h) and SaveModelAtomically on top.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <vector>

#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "onnxfuse/atomic_file.h"
#include "onnxfuse/error.h"
#include "onnxfuse/onnx_writer.h"

namespace onnxfuse {

namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& what, int error) {
  throw Error(ErrorKind::kIo, path + ": " + what + (error ? std::string(": ") + std::strerror(error) : ""));
}

// Mode of the new file: the old file's, or what open(2) would give (0666 & ~umask).
mode_t NewFileMode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return st.st_mode & 07777;
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// Best effort: make the rename itself durable.
void SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void WriteFileAtomically(const std::string& path, const std::function<int(int fd)>& write) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  std::vector<char> temp(path.begin(), path.end());
  const std::string suffix = ".tmp.XXXXXX";
  temp.insert(temp.end(), suffix.begin(), suffix.end());
  temp.push_back('\0');
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) Fail(path, "cannot create a temporary file in " + dir, errno);

  const std::string temp_path(temp.data());
  int error = 0;
  std::string step;
  if (::fchmod(fd, NewFileMode(path)) != 0) {
    error = errno;
    step = "cannot set the file mode";
  }
  if (step.empty() && (error = write(fd)) != 0) step = "cannot write " + temp_path;
  if (step.empty() && ::fsync(fd) != 0) {
    error = errno;
    step = "cannot sync " + temp_path;
  }
  if (::close(fd) != 0 && step.empty()) {
    error = errno;
    step = "cannot close " + temp_path;
  }
  if (step.empty() && ::rename(temp_path.c_str(), path.c_str()) != 0) {
    error = errno;
    step = "cannot replace the file";
  }
  if (!step.empty()) {
    ::unlink(temp_path.c_str());
    Fail(path, step, error);
  }
  SyncDirectory(dir);
}

void WriteTextAtomically(const std::string& path, const std::string& text) {
  WriteFileAtomically(path, [&text](int fd) {
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno;
      }
      done += static_cast<std::size_t>(n);
    }
    return 0;
  });
}

void SaveModelAtomically(const onnx::ModelProto& model, const std::string& path) {
  const std::size_t size = model.ByteSizeLong();
  if (size > static_cast<std::size_t>(INT_MAX))
    throw Error(ErrorKind::kUnsupported,
                path + ": the model is " + std::to_string(size) +
                    " bytes, over protobuf's 2 GB limit for one message; writing weights as external data "
                    "is not supported yet");
  WriteFileAtomically(path, [&model](int fd) {
    google::protobuf::io::FileOutputStream stream(fd);
    if (model.SerializeToZeroCopyStream(&stream) && stream.Flush()) return 0;
    return stream.GetErrno() ? stream.GetErrno() : EIO;
  });
}

}  // namespace onnxfuse
