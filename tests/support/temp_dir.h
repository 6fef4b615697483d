// Helpers for tests that read and write files: a fresh folder per test and
// the whole contents of a file.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace onnxfuse::test {

/// A fresh, empty folder under the system temp folder,
/// "onnxfuse_<tag>_<pid>_<n>" (n counts the folders this process made, so
/// tests and Catch2 sections never share one); removed with its contents at
/// scope exit.
struct TempDir {
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// The names of the folder's entries, sorted.
  std::vector<std::string> Entries() const;
  /// Writes `bytes` to the file `name` in the folder; returns its path.
  std::string Write(const std::string& name, const std::string& bytes) const;

  std::filesystem::path path;
};

/// The names of the entries of `folder`, sorted.
std::vector<std::string> FolderEntries(const std::filesystem::path& folder);

/// The bytes of the file at `path`; "" when it cannot be read.
std::string FileContents(const std::filesystem::path& path);

}  // namespace onnxfuse::test
