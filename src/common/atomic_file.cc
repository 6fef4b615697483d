// Atomic file writes (see src/common/atomic_file.h).
#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "onnxfuse/error.h"

namespace onnxfuse {

namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& what, int error) {
  throw Error(ErrorKind::kIo, path + ": " + what + (error ? std::string(": ") + std::strerror(error) : ""));
}

std::string DirectoryOf(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
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

bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::exists(b, ec) && std::filesystem::equivalent(a, b, ec)) return true;
  return std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::vector<char> temp(path_.begin(), path_.end());
  const std::string suffix = ".tmp.XXXXXX";
  temp.insert(temp.end(), suffix.begin(), suffix.end());
  temp.push_back('\0');
  fd_ = ::mkstemp(temp.data());
  if (fd_ < 0) Fail(path_, "cannot create a temporary file in " + DirectoryOf(path_), errno);
  temp_path_ = temp.data();
  if (::fchmod(fd_, NewFileMode(path_)) != 0) {
    const int error = errno;
    ::close(fd_);
    ::unlink(temp_path_.c_str());
    Fail(path_, "cannot set the file mode", error);
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFile::CheckWrite(int error) const {
  if (error != 0) Fail(path_, "cannot write " + temp_path_, error);
}

void AtomicFile::Sync() {
  if (fd_ < 0) return;
  if (::fsync(fd_) != 0) Fail(path_, "cannot sync " + temp_path_, errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) Fail(path_, "cannot close " + temp_path_, errno);
}

void AtomicFile::Commit() {
  Sync();
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) Fail(path_, "cannot replace the file", errno);
  committed_ = true;
  SyncDirectory(DirectoryOf(path_));
}

void WriteFileAtomically(const std::string& path, const std::function<int(int fd)>& write) {
  AtomicFile file(path);
  file.CheckWrite(write(file.fd()));
  file.Commit();
}

int WriteAll(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

void WriteTextAtomically(const std::string& path, const std::string& text) {
  WriteFileAtomically(path, [&text](int fd) { return WriteAll(fd, text.data(), text.size()); });
}

}  // namespace onnxfuse
