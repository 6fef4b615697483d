// Executable plan files: a written plan reloads to the same outputs with its
// constants as stored; a payload altered behind a valid checksum (bad groups,
// a memory descriptor addressing past its data) is refused, never run.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "onnxfuse/error.h"
#include "onnxfuse/plan_file.h"
#include "fuse/pattern_fuser.h"
#include "fuse/postdom_fuser.h"
#include "onnxfuse/pattern.h"
#include "onnxfuse_plan.pb.h"
#include "test_models.h"

using namespace onnxfuse;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("onnxfuse_plan_test_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A plan file's bytes around `payload`, with a correct header (plan_file.h's layout).
std::string WithHeader(const std::string& payload, std::uint32_t version = kPlanFormatVersion) {
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
  REQUIRE(plan.ParseFromArray(file_bytes.data() + kPlanHeaderBytes, static_cast<int>(file_bytes.size() - kPlanHeaderBytes)));
  return plan;
}

std::vector<Tensor> Inputs(const Graph& graph) { return RandomInputs(graph); }

}  // namespace

TEST_CASE("a written plan reloads and computes what was compiled", "[plan_file]") {
  TempDir dir;
  Graph graph = test::GraphFromText(test::kBasicBlock);
  FusionPlan fusion = FuseByPostDominator(graph, {});
  const fs::path path = dir.path / "block.plan";
  PlanFileInfo written = WritePlanFile(path.string(), graph, fusion, CompileOptions{}, "block.onnx");
  CHECK(written.constants >= 4);  // two convolutions' weights and biases

  std::vector<Tensor> expected = ExecutablePlan::Compile(graph, fusion).Run(Inputs(graph));
  LoadedPlan loaded = ReadPlanFile(path.string());
  CHECK(loaded.info.constants == written.constants);
  CHECK(loaded.info.constants_reused == written.constants);  // same CPU: every constant as stored
  CHECK(loaded.info.same_schedule);
  CHECK(loaded.fusion.groups.size() == fusion.groups.size());
  std::vector<Tensor> got = loaded.executable.Run(Inputs(*loaded.graph));
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i].data == expected[i].data);
}

TEST_CASE("a plan file keeps each group's library pattern, and one without them runs the same schedule",
          "[plan_file]") {
  // The basic block fuses as ConvBnRelu and ConvBnAddRelu. The pattern is an
  // optional field (Group.pattern): a file written before it existed has
  // none, and its groups are lowered by recognizing the patterns again.
  TempDir dir;
  Graph graph = test::GraphFromText(test::kBasicBlock);
  FusionPlan fusion = FuseByPatterns(graph, LoadPatternDir(BuiltinPatternDir()), {});
  const fs::path path = dir.path / "block.plan";
  WritePlanFile(path.string(), graph, fusion, CompileOptions{}, "block.onnx");
  const planfile::Plan stored = Payload(ReadBytes(path));
  REQUIRE(stored.groups_size() == static_cast<int>(fusion.groups.size()));
  std::vector<std::string> names;
  for (int g = 0; g < stored.groups_size(); ++g) {
    CHECK(stored.groups(g).pattern() == fusion.groups[static_cast<std::size_t>(g)].pattern_name);
    if (!stored.groups(g).pattern().empty()) names.push_back(stored.groups(g).pattern());
  }
  CHECK(names == std::vector<std::string>{"ConvBnRelu", "ConvBnAddRelu"});

  LoadedPlan loaded = ReadPlanFile(path.string());
  CHECK(loaded.info.same_schedule);
  for (std::size_t g = 0; g < fusion.groups.size(); ++g)
    CHECK(loaded.fusion.groups[g].pattern_name == fusion.groups[g].pattern_name);
  for (const ScheduleStep& s : loaded.executable.Schedule()) {
    INFO(s.kind << " " << s.label);
    if (s.group < 0) CHECK(s.kind == "reorder");  // a graph output's copy, after every group
    else CHECK(s.pattern == fusion.groups.at(static_cast<std::size_t>(s.group)).pattern_name);
  }

  planfile::Plan old = stored;
  for (auto& group : *old.mutable_groups()) group.clear_pattern();
  const std::string old_bytes = WithHeader(old.SerializeAsString());
  LoadedPlan old_loaded = ParsePlanFile(old_bytes.data(), old_bytes.size(), "old.plan", false);
  CHECK(old_loaded.info.same_schedule);
  for (const FusedGroup& g : old_loaded.fusion.groups) CHECK(g.pattern_name.empty());
}

TEST_CASE("damaged plans are refused with a reason", "[plan_file]") {
  TempDir dir;
  Graph graph = test::GraphFromText(test::kBasicBlock);
  const fs::path path = dir.path / "block.plan";
  WritePlanFile(path.string(), graph, FuseByPostDominator(graph, {}), CompileOptions{}, "block.onnx");
  const std::string bytes = ReadBytes(path);
  auto refused = [](const std::string& data, ErrorKind kind, const std::string& needle) {
    try {
      ParsePlanFile(data.data(), data.size(), "x.plan");
      FAIL("accepted: expected " << needle);
    } catch (const Error& e) {
      CHECK(e.kind() == kind);
      CHECK_THAT(e.what(), Catch::Contains(needle) && Catch::Contains("x.plan"));
    }
  };
  std::string flipped = bytes;
  flipped[bytes.size() / 2] = static_cast<char>(flipped[bytes.size() / 2] ^ 0x10);
  refused(flipped, ErrorKind::kInvalidModel, "corrupted");
  refused(bytes.substr(0, bytes.size() - 1), ErrorKind::kInvalidModel, "truncated");
  refused(bytes + "x", ErrorKind::kInvalidModel, "longer than its payload");
  refused("ONNXFP", ErrorKind::kInvalidModel, "not an onnx-fuse plan file");
  refused(WithHeader(bytes.substr(kPlanHeaderBytes), 3), ErrorKind::kUnsupported, "plan format version 3");

  SECTION("a node in two groups") {
    planfile::Plan plan = Payload(bytes);
    REQUIRE(plan.groups_size() >= 2);
    plan.mutable_groups(1)->add_nodes(plan.groups(0).nodes(0));
    refused(WithHeader(plan.SerializeAsString()), ErrorKind::kInvalidModel, "twice");
  }
  SECTION("a constant whose strides address past its data") {
    planfile::Plan plan = Payload(bytes);
    REQUIRE(plan.constants_size() > 0);
    auto* desc = plan.mutable_constants(0)->mutable_desc();
    desc->set_strides(0, desc->strides(0) * 1000);
    refused(WithHeader(plan.SerializeAsString()), ErrorKind::kInvalidModel, "constant '");
  }
  SECTION("a constant with less data than its descriptor") {
    planfile::Plan plan = Payload(bytes);
    auto* data = plan.mutable_constants(0)->mutable_data();
    data->resize(data->size() - 4);
    refused(WithHeader(plan.SerializeAsString()), ErrorKind::kInvalidModel, "bytes of data");
  }
  SECTION("a model that is not a model") {
    planfile::Plan plan = Payload(bytes);
    plan.set_model("garbage");
    refused(WithHeader(plan.SerializeAsString()), ErrorKind::kInvalidModel, "x.plan (its model)");
  }
}

TEST_CASE("the plan file is replaced atomically and never half-written", "[plan_file]") {
  TempDir dir;
  Graph graph = test::GraphFromText(test::kBasicBlock);
  const fs::path path = dir.path / "block.plan";
  std::ofstream(path) << "previous";
  WritePlanFile(path.string(), graph, FuseByPostDominator(graph, {}), CompileOptions{}, "block.onnx");
  CHECK(IsPlanFile(path.string()));
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path)) files += entry.is_regular_file();
  CHECK(files == 1);  // no temporary file left
}

TEST_CASE("a depthwise convolution's implementation is chosen by timing, a plan replays the stored choice",
          "[plan_file]") {
  // On AVX-512, oneDNN 2.6 offers brdgmm_dw and jit_dw for the same
  // channels-last layouts here (jit_dw about 1.6x faster for this shape on
  // the AMD Zen CI machine); the build times both and keeps the faster.
  // Loading a plan must run what the plan stored, even the other one: rewrite
  // the stored choice.
  TempDir dir;
  std::string weights = "{";
  for (int i = 0; i < 72 * 9; ++i) weights += (i ? ", " : "") + std::to_string(((i * 7) % 11 - 5) * 0.1);
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,72,56,56] x, float[72,1,3,3] w = )" + weights + R"(}) => (float[1,72,56,56] y) {
      c = Conv <group = 72, pads = [1, 1, 1, 1]> (x, w)
      y = Relu (c)
    })");
  FusionPlan fusion = FuseByPostDominator(graph, {});
  const fs::path path = dir.path / "dw.plan";
  WritePlanFile(path.string(), graph, fusion, CompileOptions{}, "dw.onnx");
  planfile::Plan plan = Payload(ReadBytes(path));
  int conv = -1;
  for (int i = 0; i < plan.schedule_size(); ++i)
    if (plan.schedule(i).kind() == "conv") conv = i;
  REQUIRE(conv >= 0);
  const std::string built = plan.schedule(conv).impl(), isa = built.substr(built.find(':'));
  INFO("built with " << built);
  REQUIRE((built.rfind("brdgmm_dw:", 0) == 0 || built.rfind("jit_dw:", 0) == 0));
  const std::string other = (built.rfind("jit_dw:", 0) == 0 ? "brdgmm_dw" : "jit_dw") + isa;
  plan.mutable_schedule(conv)->set_impl(other);
  const std::string altered = WithHeader(plan.SerializeAsString());

  LoadedPlan loaded = ParsePlanFile(altered.data(), altered.size(), "dw.plan");
  // oneDNN 2.6 has brdgmm_dw for AVX-512 only: elsewhere jit_dw is the one
  // implementation, the stored other one cannot be replayed, and the plan
  // runs on jit_dw, saying its schedule differs from the stored one.
  const bool both = CpuIsaName().rfind("avx512", 0) == 0;
  CHECK(loaded.info.same_schedule == both);
  const auto schedule = loaded.executable.Schedule();
  REQUIRE(static_cast<int>(schedule.size()) == plan.schedule_size());
  CHECK(schedule[static_cast<std::size_t>(conv)].impl == (both ? other : built));
  std::vector<Tensor> expected = ExecutablePlan::Compile(graph, fusion).Run(Inputs(graph));
  std::vector<Tensor> got = loaded.executable.Run(Inputs(*loaded.graph));
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].data.size() == expected[0].data.size());
  double max_diff = 0;
  for (std::size_t i = 0; i < got[0].data.size(); ++i)
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[0].data[i] - expected[0].data[i])));
  CHECK(max_diff <= 1e-5);
}

TEST_CASE("a Winograd convolution's weights are stored in oneDNN's Winograd layout and used as stored",
          "[plan_file]") {
  // A 3x3, stride-1, 64 -> 64 convolution read by another convolution runs as
  // Winograd F(2x2, 3x3) on AVX-512 (backend/lower/conv.cc): its weights' layout is
  // dnnl_format_kind_wino, which the plan file keeps as such (format version 2).
  TempDir dir;
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
  FusionPlan fusion = FuseByPostDominator(graph, {});
  const fs::path path = dir.path / "wino.plan";
  WritePlanFile(path.string(), graph, fusion, CompileOptions{}, "wino.onnx");
  const std::string bytes = ReadBytes(path);
  planfile::Plan plan = Payload(bytes);
  int winograd = 0;
  for (const auto& c : plan.constants()) winograd += c.desc().has_wino();
  bool wino_step = false;
  for (const auto& s : plan.schedule()) wino_step |= s.impl().find("wino") != std::string::npos;
  if (!wino_step) WARN("this CPU has no Winograd kernel (oneDNN's is AVX-512 only): nothing stored in its layout");
  CHECK(winograd == (wino_step ? 1 : 0));

  LoadedPlan loaded = ParsePlanFile(bytes.data(), bytes.size(), "wino.plan");
  CHECK(loaded.info.same_schedule);
  CHECK(loaded.info.constants_reused == loaded.info.constants);
  std::vector<Tensor> expected = ExecutablePlan::Compile(graph, fusion, CompileOptions{false}).Run(Inputs(graph));
  std::vector<Tensor> got = loaded.executable.Run(Inputs(*loaded.graph));
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].data.size() == expected[0].data.size());
  double max_rel = 0;
  for (std::size_t i = 0; i < got[0].data.size(); ++i)
    max_rel = std::max(max_rel, std::fabs(got[0].data[i] - expected[0].data[i]) / (std::fabs(expected[0].data[i]) + 1e-3));
  CHECK(max_rel <= 1e-4);

  SECTION("a Winograd descriptor whose size is not its data's is refused") {
    for (auto& c : *plan.mutable_constants())
      if (c.desc().has_wino()) c.mutable_desc()->mutable_wino()->set_size(c.desc().wino().size() + 4);
    if (winograd > 0) {
      const std::string altered = WithHeader(plan.SerializeAsString());
      CHECK_THROWS_WITH(ParsePlanFile(altered.data(), altered.size(), "wino.plan"),
                        Catch::Contains("malformed Winograd memory descriptor"));
    }
  }
}

TEST_CASE("constant MatMul weights on oneDNN's gemm are stored column-major, numbers as computed", "[plan_file]") {
  // Where oneDNN has no brgemm matmul (AVX2) it runs its sgemm, which reads
  // the weights [K, N] faster column-major than row-major (backend/lower/conv.cc,
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
  TempDir dir;
  const fs::path path = dir.path / "matmul.plan";
  WritePlanFile(path.string(), graph, FuseByPostDominator(graph, {}), CompileOptions{}, "matmul.onnx");
  const std::string bytes = ReadBytes(path);
  planfile::Plan plan = Payload(bytes);
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
  const std::vector<Tensor> inputs = Inputs(*loaded.graph);
  const std::vector<Tensor> got = loaded.executable.Run(inputs);
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].data.size() == 5u * n);
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < n; ++c) {
      double sum = 0;
      for (int i = 0; i < k; ++i) sum += static_cast<double>(inputs[0].data[static_cast<std::size_t>(r * k + i)]) * w[static_cast<std::size_t>(i * n + c)];
      CHECK(got[0].data[static_cast<std::size_t>(r * n + c)] == Approx(sum).margin(1e-4).epsilon(1e-4));
    }
}
