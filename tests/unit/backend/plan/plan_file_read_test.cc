// Reading plan files (src/backend/plan/plan_file_read.cc): a written plan
// reloads to the same outputs with its constants as stored and replays the
// implementations its schedule stored; a payload altered behind a valid
// checksum (bad groups, a memory descriptor addressing past its data) is
// refused, never run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "backend/plan/plan_payload.h"
#include "onnxfuse/error.h"
#include "backend/plan/plan_file.h"
#include "fuse/pattern_fuser.h"
#include "patterns/pattern.h"
#include "onnxfuse_plan.pb.h"
#include "plan_file_bytes.h"
#include "temp_dir.h"
#include "test_models.h"
#include "plan_check.h"

using namespace onnxfuse;
namespace fs = std::filesystem;

TEST_CASE("a written plan reloads and computes what was compiled", "[plan_file]") {
  test::TempDir dir("plan_file");
  Graph graph = test::GraphFromText(test::kBasicBlock);
  FusionPlan fusion = test::FusePostdom(graph);
  const fs::path path = dir.path / "block.plan";
  PlanFileInfo written = WritePlanFile(path.string(), graph, fusion, CompileOptions{}, "block.onnx");
  CHECK(written.constants >= 4);  // two convolutions' weights and biases

  std::vector<Tensor> expected = ExecutablePlan::Compile(graph, fusion).Run(RandomInputs(graph));
  LoadedPlan loaded = ReadPlanFile(path.string());
  CHECK(loaded.info.constants == written.constants);
  CHECK(loaded.info.constants_reused == written.constants);  // same CPU: every constant as stored
  CHECK(loaded.info.same_schedule);
  CHECK(loaded.fusion.groups.size() == fusion.groups.size());
  std::vector<Tensor> got = loaded.executable->Run(RandomInputs(*loaded.graph));
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i].data == expected[i].data);
}

TEST_CASE("a plan file's constants are used where they lie in the mapped file, and outlive its other parts",
          "[plan_file]") {
  test::TempDir dir("plan_file");
  Graph graph = test::GraphFromText(test::kBasicBlock);
  FusionPlan fusion = test::FusePostdom(graph);
  const fs::path path = dir.path / "block.plan";
  PlanFileInfo written = WritePlanFile(path.string(), graph, fusion, CompileOptions{}, "block.onnx");
  const std::vector<Tensor> expected = ExecutablePlan::Compile(graph, fusion).Run(RandomInputs(graph));
  const std::string bytes = test::FileContents(path);

  // Every constant's data starts at a multiple of 64 bytes into the file.
  const planformat::PayloadView view =
      planformat::ParsePayloadInPlace(bytes.data() + kPlanHeaderBytes, bytes.size() - kPlanHeaderBytes, "block.plan");
  REQUIRE(static_cast<int>(view.constants.size()) == written.constants);
  for (const auto& c : view.constants) CHECK((c.data.data() - bytes.data()) % 64 == 0);

  // Read from the file: every constant in place; the plan keeps the mapping
  // alive after the LoadedPlan that read it is gone (ASan: no unmapped read).
  ExecutablePlan executable = [&] {
    LoadedPlan loaded = ReadPlanFile(path.string());
    CHECK(loaded.info.constants_mapped == written.constants);
    CHECK(loaded.info.constants_reused == written.constants);
    return std::move(*loaded.executable);
  }();
  const std::vector<Tensor> got = executable.Run(RandomInputs(graph));
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i].data == expected[i].data);

  // From the caller's bytes, which may go away: copied.
  const LoadedPlan from_memory = ParsePlanFile(bytes.data(), bytes.size(), "block.plan", false);
  CHECK(from_memory.info.constants_mapped == 0);

  // A file whose constants are not aligned (written before the alignment
  // field): copied, with the same outputs.
  planfile::Plan unaligned = test::Payload(bytes);
  for (auto& c : *unaligned.mutable_constants()) c.clear_alignment();
  const fs::path old_path = dir.path / "unaligned.plan";
  std::ofstream(old_path, std::ios::binary) << test::WithHeader(unaligned.SerializeAsString());
  LoadedPlan old = ReadPlanFile(old_path.string());
  CHECK(old.info.constants_mapped < written.constants);
  const std::vector<Tensor> old_got = old.executable->Run(RandomInputs(graph));
  for (std::size_t i = 0; i < old_got.size(); ++i) CHECK(old_got[i].data == expected[i].data);
}

TEST_CASE("a plan file keeps each group's library pattern, and one without them runs the same schedule",
          "[plan_file]") {
  // The basic block fuses as ConvBnRelu and ConvBnAddRelu. The pattern is an
  // optional field (Group.pattern): a file without it lowers these groups
  // by the chain lowering, as their names would (neither has a lowering of
  // its own).
  test::TempDir dir("plan_file");
  Graph graph = test::GraphFromText(test::kBasicBlock);
  FusionPlan fusion = FuseByPatterns(graph, LoadPatternDir(BuiltinPatternDir()), {});
  const fs::path path = dir.path / "block.plan";
  WritePlanFile(path.string(), graph, fusion, CompileOptions{}, "block.onnx");
  const planfile::Plan stored = test::Payload(test::FileContents(path));
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
  for (const ScheduleStep& s : loaded.executable->Schedule()) {
    INFO(s.kind << " " << s.label);
    if (s.group < 0) CHECK(s.kind == "reorder");  // a graph output's copy, after every group
    else CHECK(s.pattern == fusion.groups.at(static_cast<std::size_t>(s.group)).pattern_name);
  }

  planfile::Plan old = stored;
  for (auto& group : *old.mutable_groups()) group.clear_pattern();
  const std::string old_bytes = test::WithHeader(old.SerializeAsString());
  LoadedPlan old_loaded = ParsePlanFile(old_bytes.data(), old_bytes.size(), "old.plan", false);
  CHECK(old_loaded.info.same_schedule);
  for (const FusedGroup& g : old_loaded.fusion.groups) CHECK(g.pattern_name.empty());
}

TEST_CASE("a plan file keeps the pattern regions of postdom groups, and one before format 4 finds them again",
          "[plan_file]") {
  // A decomposed Gelu after a residual Add: a Gelu region in the post-dominator groups.
  test::TempDir dir("plan_file");
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,24] x, float[2,24] r) => (float[2,24] y) {
  s = Add (x, r)
)" + test::GeluText("s", "y") + "}\n");
  const FusionPlan fusion = test::FusePostdom(graph);
  std::vector<PatternRegion> regions;
  for (const FusedGroup& g : fusion.groups) regions.insert(regions.end(), g.regions.begin(), g.regions.end());
  REQUIRE(regions.size() == 1);
  CHECK(regions[0].pattern == "Gelu");
  const fs::path path = dir.path / "gelu.plan";
  WritePlanFile(path.string(), graph, fusion, CompileOptions{}, "gelu.onnx");
  const std::string bytes = test::FileContents(path);
  const planfile::Plan stored = test::Payload(bytes);
  int stored_regions = 0;
  for (const auto& g : stored.groups()) stored_regions += g.regions_size();
  CHECK(stored_regions == 1);

  auto regions_of = [](const LoadedPlan& loaded) {
    std::vector<PatternRegion> found;
    for (const FusedGroup& g : loaded.fusion.groups) found.insert(found.end(), g.regions.begin(), g.regions.end());
    return found;
  };
  auto gelu_steps = [](const LoadedPlan& loaded) {
    int n = 0;
    for (const ScheduleStep& s : loaded.executable->Schedule()) n += s.kind == "gelu";
    return n;
  };
  const LoadedPlan loaded = ParsePlanFile(bytes.data(), bytes.size(), "gelu.plan", false);
  CHECK(loaded.info.same_schedule);
  REQUIRE(regions_of(loaded).size() == 1);
  CHECK(regions_of(loaded)[0].nodes == regions[0].nodes);
  CHECK(gelu_steps(loaded) == 1);

  // Format 3 had no regions: the reader matches the library again.
  planfile::Plan old = stored;
  for (auto& group : *old.mutable_groups()) group.clear_regions();
  const std::string old_bytes = test::WithHeader(old.SerializeAsString(), 3);
  const LoadedPlan old_loaded = ParsePlanFile(old_bytes.data(), old_bytes.size(), "old.plan", false);
  CHECK(old_loaded.info.same_schedule);
  REQUIRE(regions_of(old_loaded).size() == 1);
  CHECK(regions_of(old_loaded)[0].nodes == regions[0].nodes);

  // A region naming a node the model does not have is a damaged file.
  planfile::Plan damaged = stored;
  for (auto& group : *damaged.mutable_groups())
    for (auto& region : *group.mutable_regions()) region.set_nodes(0, 1000);
  const std::string damaged_bytes = test::WithHeader(damaged.SerializeAsString());
  CHECK_THROWS_WITH(ParsePlanFile(damaged_bytes.data(), damaged_bytes.size(), "damaged.plan", false),
                    Catch::Contains("pattern region names node 1000 out of range"));
}

TEST_CASE("damaged plans are refused with a reason", "[plan_file]") {
  test::TempDir dir("plan_file");
  Graph graph = test::GraphFromText(test::kBasicBlock);
  const fs::path path = dir.path / "block.plan";
  WritePlanFile(path.string(), graph, test::FusePostdom(graph), CompileOptions{}, "block.onnx");
  const std::string bytes = test::FileContents(path);
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
  refused(test::WithHeader(bytes.substr(kPlanHeaderBytes), kPlanFormatVersion + 1), ErrorKind::kUnsupported,
          "plan format version " + std::to_string(kPlanFormatVersion + 1));
  refused(test::WithHeader(bytes.substr(kPlanHeaderBytes), 1), ErrorKind::kUnsupported, "plan format version 1");

  SECTION("a node in two groups") {
    planfile::Plan plan = test::Payload(bytes);
    REQUIRE(plan.groups_size() >= 2);
    plan.mutable_groups(1)->add_nodes(plan.groups(0).nodes(0));
    refused(test::WithHeader(plan.SerializeAsString()), ErrorKind::kInvalidModel, "twice");
  }
  SECTION("a constant whose strides address past its data") {
    planfile::Plan plan = test::Payload(bytes);
    REQUIRE(plan.constants_size() > 0);
    auto* desc = plan.mutable_constants(0)->mutable_desc();
    desc->set_strides(0, desc->strides(0) * 1000);
    refused(test::WithHeader(plan.SerializeAsString()), ErrorKind::kInvalidModel, "constant '");
  }
  SECTION("a constant with less data than its descriptor") {
    planfile::Plan plan = test::Payload(bytes);
    auto* data = plan.mutable_constants(0)->mutable_data();
    data->resize(data->size() - 4);
    refused(test::WithHeader(plan.SerializeAsString()), ErrorKind::kInvalidModel, "bytes of data");
  }
  SECTION("a model that is not a model") {
    planfile::Plan plan = test::Payload(bytes);
    plan.set_model("garbage");
    refused(test::WithHeader(plan.SerializeAsString()), ErrorKind::kInvalidModel, "x.plan (its model)");
  }
}

TEST_CASE("plan files are read through a mapping of the file: missing, not regular, empty or damaged ones refused",
          "[plan_file]") {
  test::TempDir dir("plan_file_mapped");
  Graph graph = test::GraphFromText(test::kBasicBlock);
  const fs::path path = dir.path / "block.plan";
  WritePlanFile(path.string(), graph, test::FusePostdom(graph), CompileOptions{}, "block.onnx");
  auto refused = [](const fs::path& file, ErrorKind kind, const std::string& needle) {
    try {
      ReadPlanFile(file.string());
      FAIL("accepted: expected " << needle);
    } catch (const Error& e) {
      CHECK(e.kind() == kind);
      CHECK_THAT(e.what(), Catch::Contains(needle) && Catch::Contains(file.filename().string()));
    }
  };
  refused(dir.path / "missing.plan", ErrorKind::kIo, "cannot open");
  refused(dir.path, ErrorKind::kIo, "not a regular file");
  const fs::path empty = dir.path / "empty.plan";
  { std::ofstream(empty.string(), std::ios::binary); }
  refused(empty, ErrorKind::kInvalidModel, "not an onnx-fuse plan file");
  std::string bytes = test::FileContents(path);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
  const fs::path damaged = dir.path / "damaged.plan";
  std::ofstream(damaged.string(), std::ios::binary) << bytes;
  refused(damaged, ErrorKind::kInvalidModel, "corrupted");

  // The intact file loads and runs as the plan compiled from its model.
  const std::vector<Tensor> inputs = {test::TensorFrom(graph.value(graph.inputs()[0]).type.dims,
                                                       [](std::int64_t i) { return std::sin(0.1f * static_cast<float>(i)); })};
  LoadedPlan loaded = ReadPlanFile(path.string());
  ExecutablePlan direct = ExecutablePlan::Compile(graph, test::FusePostdom(graph), CompileOptions{});
  CHECK(loaded.executable->Run(inputs).at(0).data == direct.Run(inputs).at(0).data);
}

TEST_CASE("a depthwise convolution's implementation is chosen by timing, a plan replays the stored choice",
          "[plan_file]") {
  // On AVX-512, oneDNN 2.6 offers brdgmm_dw and jit_dw for the same
  // channels-last layouts here (jit_dw about 1.6x faster for this shape on
  // the AMD Zen CI machine); the build times both and keeps the faster.
  // Loading a plan must run what the plan stored, even the other one: rewrite
  // the stored choice.
  test::TempDir dir("plan_file");
  std::string weights = "{";
  for (int i = 0; i < 72 * 9; ++i) weights += (i ? ", " : "") + std::to_string(((i * 7) % 11 - 5) * 0.1);
  Graph graph = test::GraphFromText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,72,56,56] x, float[72,1,3,3] w = )" + weights + R"(}) => (float[1,72,56,56] y) {
      c = Conv <group = 72, pads = [1, 1, 1, 1]> (x, w)
      y = Relu (c)
    })");
  FusionPlan fusion = test::FusePostdom(graph);
  const fs::path path = dir.path / "dw.plan";
  WritePlanFile(path.string(), graph, fusion, CompileOptions{}, "dw.onnx");
  planfile::Plan plan = test::Payload(test::FileContents(path));
  int conv = -1;
  for (int i = 0; i < plan.schedule_size(); ++i)
    if (plan.schedule(i).kind() == "conv") conv = i;
  REQUIRE(conv >= 0);
  const std::string built = plan.schedule(conv).impl(), isa = built.substr(built.find(':'));
  INFO("built with " << built);
  REQUIRE((built.rfind("brdgmm_dw:", 0) == 0 || built.rfind("jit_dw:", 0) == 0));
  const std::string other = (built.rfind("jit_dw:", 0) == 0 ? "brdgmm_dw" : "jit_dw") + isa;
  plan.mutable_schedule(conv)->set_impl(other);
  const std::string altered = test::WithHeader(plan.SerializeAsString());

  LoadedPlan loaded = ParsePlanFile(altered.data(), altered.size(), "dw.plan");
  // oneDNN 2.6 has brdgmm_dw for AVX-512 only: elsewhere jit_dw is the one
  // implementation, the stored other one cannot be replayed, and the plan
  // runs on jit_dw, saying its schedule differs from the stored one.
  const bool both = CpuIsaName().rfind("avx512", 0) == 0;
  CHECK(loaded.info.same_schedule == both);
  const auto schedule = loaded.executable->Schedule();
  REQUIRE(static_cast<int>(schedule.size()) == plan.schedule_size());
  CHECK(schedule[static_cast<std::size_t>(conv)].impl == (both ? other : built));
  std::vector<Tensor> expected = ExecutablePlan::Compile(graph, fusion).Run(RandomInputs(graph));
  std::vector<Tensor> got = loaded.executable->Run(RandomInputs(*loaded.graph));
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].data.size() == expected[0].data.size());
  double max_diff = 0;
  for (std::size_t i = 0; i < got[0].data.size(); ++i)
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[0].data[i] - expected[0].data[i])));
  CHECK(max_diff <= 1e-5);
}
