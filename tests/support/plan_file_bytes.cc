#include "plan_file_bytes.h"

#include <catch2/catch.hpp>
#include <unistd.h>
#include <zlib.h>

#include <fstream>
#include <iterator>

namespace onnxfuse::test {

namespace fs = std::filesystem;

PlanTempDir::PlanTempDir() : path(fs::temp_directory_path() / ("onnxfuse_plan_test_" + std::to_string(::getpid()))) {
  fs::create_directories(path);
}

PlanTempDir::~PlanTempDir() {
  std::error_code ignored;  // a destructor must not throw: a leftover folder is harmless
  fs::remove_all(path, ignored);
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string WithHeader(const std::string& payload, std::uint32_t version) {
  std::string out = "ONNXFPLN";
  auto put = [&](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  put(version, 4);
  put(crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size())), 4);
  put(payload.size(), 8);
  return out + payload;
}

planfile::Plan Payload(const std::string& file_bytes) {
  planfile::Plan plan;
  REQUIRE(file_bytes.size() >= kPlanHeaderBytes);
  REQUIRE(plan.ParseFromArray(file_bytes.data() + kPlanHeaderBytes, static_cast<int>(file_bytes.size() - kPlanHeaderBytes)));
  return plan;
}

}  // namespace onnxfuse::test
