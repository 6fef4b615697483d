// The plan file's fixed parts (src/backend/plan/plan_format.cc): CRC-32,
// little-endian fields, and oneDNN memory descriptors stored and loaded
// (blocked, column-major and Winograd layouts, int8 weights with their
// compensations), a stored descriptor that addresses past its data refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "backend/plan/plan_file.h"
#include "backend/plan/plan_format.h"
#include "onnxfuse_plan.pb.h"
#include "plan_file_bytes.h"
#include "temp_dir.h"
#include "test_models.h"
#include "plan_check.h"

using namespace onnxfuse;
namespace fs = std::filesystem;

TEST_CASE("a Winograd convolution's weights are stored in oneDNN's Winograd layout and used as stored",
          "[plan_file]") {
  // A 3x3, stride-1, 64 -> 64 convolution read by another convolution runs as
  // Winograd F(2x2, 3x3) on AVX-512 (backend/lower/ops/conv.cc): its weights' layout is
  // dnnl_format_kind_wino, which the plan file keeps as such (format version 2).
  test::TempDir dir("plan_file");
  std::string w1 = "{", w2 = "{";
  for (int i = 0; i < 64 * 64 * 9; ++i) w1 += (i ? ", " : "") + std::to_string(((i * 7) % 11 - 5) * 0.01);
  for (int i = 0; i < 16 * 64; ++i) w2 += (i ? ", " : "") + std::to_string(((i * 5) % 13 - 6) * 0.02);
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,64,14,14] x, float[64,64,3,3] w1 = )" + w1 + R"(}, float[16,64,1,1] w2 = )" + w2 +
                                    R"(}) => (float[1,16,14,14] y) {
      c = Conv <pads = [1, 1, 1, 1]> (x, w1)
      r = Relu (c)
      y = Conv (r, w2)
    })");
  FusionPlan fusion = test::FusePostdom(graph);
  const fs::path path = dir.path / "wino.plan";
  WritePlanFile(path.string(), graph, fusion, CompileOptions{}, "wino.onnx");
  const std::string bytes = test::FileContents(path);
  planfile::Plan plan = test::Payload(bytes);
  int winograd = 0;
  for (const auto& c : plan.constants()) winograd += c.desc().has_wino();
  bool wino_step = false;
  for (const auto& s : plan.schedule()) wino_step |= s.impl().find("wino") != std::string::npos;
  if (!wino_step) WARN("this CPU has no Winograd kernel (oneDNN's is AVX-512 only): nothing stored in its layout");
  CHECK(winograd == (wino_step ? 1 : 0));

  LoadedPlan loaded = ParsePlanFile(bytes.data(), bytes.size(), "wino.plan");
  CHECK(loaded.info.same_schedule);
  CHECK(loaded.info.constants_reused == loaded.info.constants);
  std::vector<Tensor> expected = ExecutablePlan::Compile(graph, fusion, CompileOptions{false}).Run(RandomInputs(graph));
  std::vector<Tensor> got = loaded.executable->Run(RandomInputs(*loaded.graph));
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].data.size() == expected[0].data.size());
  // The project's relative difference (scripts/ort/compare.js): the largest
  // difference over the largest magnitude, Winograd against the direct
  // convolution. A per-element ratio counts rounding on outputs near 0 as
  // large (2.2e-7 there read as 2.2e-4 when F(4x4, 3x3) ran, CI's ASan pass).
  double max_diff = 0, max_value = 0;
  for (std::size_t i = 0; i < got[0].data.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[0].data[i] - expected[0].data[i])));
    max_value = std::max(max_value, static_cast<double>(std::fabs(expected[0].data[i])));
  }
  CHECK(max_diff <= 1e-5 * max_value);

  SECTION("a Winograd descriptor whose size is not its data's is refused") {
    for (auto& c : *plan.mutable_constants())
      if (c.desc().has_wino()) c.mutable_desc()->mutable_wino()->set_size(c.desc().wino().size() + 4);
    if (winograd > 0) {
      const std::string altered = test::WithHeader(plan.SerializeAsString());
      CHECK_THROWS_WITH(ParsePlanFile(altered.data(), altered.size(), "wino.plan"),
                        Catch::Contains("malformed Winograd memory descriptor"));
    }
  }
}

TEST_CASE("constant MatMul weights on oneDNN's gemm are stored column-major, numbers as computed", "[plan_file]") {
  // Where oneDNN has no brgemm matmul (AVX2) it runs its sgemm, which reads
  // the weights [K, N] faster column-major than row-major (backend/lower/ops/conv.cc,
  // WithGemmWeights); with brgemm (AVX-512) they are blocked.
  const int k = 48, n = 40;
  std::vector<float> w;
  std::string text = "{";
  for (int i = 0; i < k * n; ++i) {
    w.push_back(static_cast<float>((i * 7) % 13 - 6) * 0.05f);
    text += (i ? ", " : "") + std::to_string(w.back());
  }
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[5,48] x, float[48,40] w = )" + text + R"(}) => (float[5,40] y) {
      y = MatMul (x, w)
    })");
  test::TempDir dir("plan_file");
  const fs::path path = dir.path / "matmul.plan";
  WritePlanFile(path.string(), graph, test::FusePostdom(graph), CompileOptions{}, "matmul.onnx");
  const std::string bytes = test::FileContents(path);
  planfile::Plan plan = test::Payload(bytes);
  REQUIRE(plan.schedule_size() == 1);
  const bool gemm = plan.schedule(0).impl().find("gemm") != std::string::npos;
  INFO(plan.schedule(0).impl());
  const planfile::PackedConstant* weights = nullptr;
  for (const auto& c : plan.constants())
    if (c.key().find("MatMul:weights") != std::string::npos) weights = &c;
  REQUIRE(weights != nullptr);
  if (gemm) {
    CHECK(weights->desc().inner_blks_size() == 0);
    CHECK(std::vector<std::int64_t>(weights->desc().strides().begin(), weights->desc().strides().end()) ==
          std::vector<std::int64_t>{1, k});
  } else {
    CHECK(weights->desc().inner_blks_size() > 0);
  }

  LoadedPlan loaded = ParsePlanFile(bytes.data(), bytes.size(), "matmul.plan");
  const std::vector<Tensor> inputs = RandomInputs(*loaded.graph);
  const std::vector<Tensor> got = loaded.executable->Run(inputs);
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].data.size() == 5u * n);
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < n; ++c) {
      double sum = 0;
      for (int i = 0; i < k; ++i) sum += static_cast<double>(inputs[0].data[static_cast<std::size_t>(r * k + i)]) * w[static_cast<std::size_t>(i * n + c)];
      CHECK(got[0].data[static_cast<std::size_t>(r * n + c)] == Approx(sum).margin(1e-4).epsilon(1e-4));
    }
}

TEST_CASE("CRC-32 is zlib's (ISO-HDLC), also in pieces, and header fields are little-endian", "[plan_file]") {
  // The check value of CRC-32/ISO-HDLC: the CRC of "123456789" (Greg Cook's
  // catalogue of parametrised CRC algorithms).
  const std::string digits = "123456789";
  CHECK(planformat::Crc32(digits.data(), digits.size()) == 0xCBF43926u);
  CHECK(planformat::Crc32(digits.data() + 4, 5, planformat::Crc32(digits.data(), 4)) == 0xCBF43926u);
  CHECK(planformat::Crc32(digits.data(), 0) == 0u);

  unsigned char bytes[8] = {};
  planformat::PutU32(bytes, 0x01020304u);
  CHECK((bytes[0] == 4 && bytes[1] == 3 && bytes[2] == 2 && bytes[3] == 1));
  CHECK(planformat::GetLe(bytes, 4) == 0x01020304u);
  planformat::PutU64(bytes, 0x1122334455667788ull);
  CHECK((bytes[0] == 0x88 && bytes[7] == 0x11));
  CHECK(planformat::GetLe(bytes, 8) == 0x1122334455667788ull);
  CHECK(planformat::GetLe(bytes, 2) == 0x7788u);
}

TEST_CASE("a blocked descriptor is stored and loaded back equal, one addressing past its data refused",
          "[plan_file]") {
  using dnnl::memory;
  const memory::dims dims = {20, 3, 3, 3};  // 20 output channels: padded to 32 in 16-blocks
  for (memory::format_tag tag : {memory::format_tag::oihw, memory::format_tag::ohwi, memory::format_tag::OIhw16i16o}) {
    const memory::desc md(dims, memory::data_type::f32, tag);
    INFO("format tag " << static_cast<int>(tag) << ", " << md.get_size() << " bytes");
    planfile::MemoryDesc stored;
    planformat::StoreDesc(md, stored);
    CHECK(std::vector<std::int64_t>(stored.dims().begin(), stored.dims().end()) == dims);
    CHECK(stored.data_type() == dnnl_f32);
    CHECK(planformat::LoadDesc(stored, md.get_size(), "w") == md);
    CHECK_THROWS_WITH(planformat::LoadDesc(stored, md.get_size() - 4, "w"),
                      Catch::Contains("w: " + std::to_string(md.get_size() - 4) + " bytes of data"));

    planfile::MemoryDesc far = stored;
    far.set_strides(0, far.strides(0) * 2);  // the last output channel lies past the data
    CHECK_THROWS_WITH(planformat::LoadDesc(far, md.get_size(), "w"), Catch::Contains("w: "));
    planfile::MemoryDesc negative = stored;
    negative.set_strides(1, -1);
    CHECK_THROWS_WITH(planformat::LoadDesc(negative, md.get_size(), "w"), Catch::Contains("bad dims or strides"));
    planfile::MemoryDesc uint8 = stored;
    uint8.set_data_type(dnnl_u8);
    CHECK_THROWS_WITH(planformat::LoadDesc(uint8, md.get_size(), "w"), Catch::Contains("neither f32 nor s8"));
    planfile::MemoryDesc short_strides = stored;
    short_strides.mutable_strides()->RemoveLast();
    CHECK_THROWS_WITH(planformat::LoadDesc(short_strides, md.get_size(), "w"),
                      Catch::Contains("malformed memory descriptor"));
  }
}

TEST_CASE("int8 weights are stored with their compensation data and loaded back equal, bad extra data refused",
          "[plan_file][int8]") {
  using dnnl::memory;
  for (std::uint64_t flags : {std::uint64_t{dnnl_memory_extra_flag_compensation_conv_s8s8},
                              std::uint64_t{dnnl_memory_extra_flag_compensation_conv_asymmetric_src},
                              std::uint64_t{dnnl_memory_extra_flag_compensation_conv_s8s8 |
                                            dnnl_memory_extra_flag_scale_adjust}}) {
    INFO("extra flags " << flags);
    // 20 output channels in 8-blocks, as oneDNN's AVX2 int8 convolution packs them.
    dnnl_memory_desc_t d = memory::desc({20, 16, 3, 3}, memory::data_type::s8, memory::format_tag::OIhw8i8o).data;
    d.extra.flags = flags;
    if (flags & dnnl_memory_extra_flag_compensation_conv_s8s8) d.extra.compensation_mask = 1;
    if (flags & dnnl_memory_extra_flag_compensation_conv_asymmetric_src) d.extra.asymm_compensation_mask = 1;
    if (flags & dnnl_memory_extra_flag_scale_adjust) d.extra.scale_adjust = 0.5f;
    const memory::desc md(d);
    REQUIRE(md.get_size() > 24 * 16 * 9);  // the elements, then the compensations
    REQUIRE(planformat::CanStoreDesc(md));
    planfile::MemoryDesc stored;
    planformat::StoreDesc(md, stored);
    CHECK(stored.data_type() == dnnl_s8);
    CHECK(static_cast<std::uint64_t>(stored.extra().flags()) == flags);
    CHECK(planformat::LoadDesc(stored, md.get_size(), "w") == md);
    CHECK_THROWS_WITH(planformat::LoadDesc(stored, md.get_size() - 4, "w"), Catch::Contains("bytes of data"));

    planfile::MemoryDesc rnn = stored;  // an extra this format does not know
    rnn.mutable_extra()->set_flags(dnnl_memory_extra_flag_rnn_u8s8_compensation);
    CHECK_THROWS_WITH(planformat::LoadDesc(rnn, md.get_size(), "w"), Catch::Contains("bad extra data"));
    planfile::MemoryDesc mask = stored;
    mask.mutable_extra()->set_compensation_mask(7);
    CHECK_THROWS_WITH(planformat::LoadDesc(mask, md.get_size(), "w"), Catch::Contains("bad extra data"));
  }
  // Float32 data never carries extra data.
  dnnl_memory_desc_t f = memory::desc({20, 16, 3, 3}, memory::data_type::f32, memory::format_tag::oihw).data;
  planfile::MemoryDesc stored;
  planformat::StoreDesc(memory::desc(f), stored);
  stored.mutable_extra()->set_flags(dnnl_memory_extra_flag_compensation_conv_s8s8);
  CHECK_THROWS_WITH(planformat::LoadDesc(stored, memory::desc(f).get_size(), "w"), Catch::Contains("bad extra data"));
}
