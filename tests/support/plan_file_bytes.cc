#include "plan_file_bytes.h"

#include <catch2/catch.hpp>
#include <zlib.h>

namespace onnxfuse::test {

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
