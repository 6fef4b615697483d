// Atomic file writes (common/atomic_file.h): the target is replaced whole or
// not at all, no temporary file outlives a failure, permissions are kept.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/atomic_file.h"
#include "onnxfuse/error.h"
#include "temp_dir.h"
#include "test_models.h"

using namespace onnxfuse;
namespace fs = std::filesystem;

namespace {

using test::FileContents;

fs::perms Permissions(const fs::path& p) { return fs::status(p).permissions() & fs::perms::all; }

}  // namespace

TEST_CASE("WriteTextAtomically creates a file, then replaces it keeping its mode", "[atomic_file]") {
  test::TempDir dir("atomic_file");
  const std::string path = (dir.path / "report.json").string();
  const mode_t mask = ::umask(022);
  WriteTextAtomically(path, "first");
  ::umask(mask);
  CHECK(FileContents(path) == "first");
  CHECK(Permissions(path) == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                              fs::perms::others_read));  // 0666 & ~022
  ::chmod(path.c_str(), 0600);
  WriteTextAtomically(path, std::string("second\0with a NUL", 17));
  CHECK(FileContents(path) == std::string("second\0with a NUL", 17));
  CHECK(Permissions(path) == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(dir.Entries() == std::vector<std::string>{"report.json"});
}

TEST_CASE("a failing writer leaves the old file and no temporary one", "[atomic_file]") {
  test::TempDir dir("atomic_file");
  const std::string path = (dir.path / "model.onnx").string();
  { std::ofstream(path) << "old"; }
  auto e = test::ErrorOf([&] {
    WriteFileAtomically(path, [](int fd) {
      WriteAll(fd, "partial", 7);
      return ENOSPC;
    });
  });
  CHECK(e.kind == ErrorKind::kIo);
  CHECK(e.message.rfind(path + ": cannot write " + path + ".tmp.", 0) == 0);
  CHECK_THAT(e.message, Catch::EndsWith(std::string(": ") + std::strerror(ENOSPC)));
  CHECK(FileContents(path) == "old");
  CHECK(dir.Entries() == std::vector<std::string>{"model.onnx"});
}

TEST_CASE("a missing directory is an I/O error naming the path and the folder", "[atomic_file]") {
  test::TempDir dir("atomic_file");
  const std::string path = (dir.path / "absent" / "out.txt").string();
  auto e = test::ErrorOf([&] { WriteTextAtomically(path, "x"); });
  CHECK(e.kind == ErrorKind::kIo);
  CHECK_THAT(e.message, Catch::StartsWith(path + ": cannot create a temporary file in " + (dir.path / "absent").string()));
}

TEST_CASE("AtomicFile: nothing changes before Commit, an uncommitted file is removed", "[atomic_file]") {
  test::TempDir dir("atomic_file");
  const std::string model = (dir.path / "m.onnx").string(), data = (dir.path / "m.onnx.data").string();
  { std::ofstream(model) << "old model"; }
  {
    AtomicFile a(model), b(data);
    CHECK(a.path() == model);
    CHECK(a.temp_path().rfind(model + ".tmp.", 0) == 0);
    CHECK(fs::exists(a.temp_path()));
    a.CheckWrite(WriteAll(a.fd(), "new model", 9));
    b.CheckWrite(WriteAll(b.fd(), "data", 4));
    a.Sync();
    b.Sync();
    CHECK(FileContents(model) == "old model");
    CHECK(!fs::exists(data));
    b.Commit();  // a is abandoned: its destructor removes the temporary file
  }
  CHECK(FileContents(model) == "old model");
  CHECK(FileContents(data) == "data");
  CHECK(dir.Entries() == std::vector<std::string>{"m.onnx", "m.onnx.data"});
}

TEST_CASE("WriteAll writes every byte through a pipe and reports a bad descriptor", "[atomic_file]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string text(4000, 'a');
  CHECK(WriteAll(fds[1], text.data(), text.size()) == 0);
  ::close(fds[1]);
  std::string read;
  char buffer[1024];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) read.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  CHECK(read == text);
  CHECK(WriteAll(-1, "x", 1) == EBADF);
  CHECK(WriteAll(-1, "", 0) == 0);  // nothing to write: no call at all
}
