#include "common/mapped_file.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxfuse/error.h"

namespace onnxfuse {

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorKind::kIo, path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(ErrorKind::kIo, path + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::kIo, path + ": not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the file
  if (data_ == MAP_FAILED) {
    data_ = nullptr;
    throw Error(ErrorKind::kIo, path + ": cannot map: " + std::strerror(err));
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

const void* MappedFile::data() const { return data_ ? data_ : ""; }

}  // namespace onnxfuse
