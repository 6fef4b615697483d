#include "temp_dir.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace onnxfuse::test {

namespace fs = std::filesystem;

TempDir::TempDir(const std::string& tag) {
  static int made = 0;
  path = fs::temp_directory_path() /
         ("onnxfuse_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(made++));
  fs::remove_all(path);  // left by an earlier process of the same pid
  fs::create_directories(path);
}

TempDir::~TempDir() {
  std::error_code ignored;  // a destructor must not throw
  fs::remove_all(path, ignored);
}

std::vector<std::string> TempDir::Entries() const { return FolderEntries(path); }

std::string TempDir::Write(const std::string& name, const std::string& bytes) const {
  std::ofstream(path / name, std::ios::binary) << bytes;
  return (path / name).string();
}

std::vector<std::string> FolderEntries(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(folder)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string FileContents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace onnxfuse::test
