// SaveModelAtomically with external data (a low threshold stands in for 2 GB),
// and a write that fails part-way (RLIMIT_FSIZE stands in for a full disk).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "onnxfuse/error.h"
#include "load/loader.h"
#include "write/onnx_writer.h"
#include "temp_dir.h"
#include "test_models.h"

using namespace onnxfuse;
namespace fs = std::filesystem;

namespace {

using test::FileContents;

// Conv + Add with a 16 KB weight, a 4 KB one, a 64-byte one and a Constant node.
onnx::ModelProto ModelWithWeights() {
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,64,4,4] x) => (float[1,64,4,4] y) {
      c = Conv (x, w)
      k = Constant <value = float {2.0}> ()
      m = Mul (c, k)
      a = Add (m, big)
      y = Add (a, small)
    })");
  auto add = [&](const std::string& name, std::vector<std::int64_t> dims) {
    auto* t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    std::int64_t n = 1;
    for (auto d : dims) {
      t->add_dims(d);
      n *= d;
    }
    std::vector<float> values(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 97) * 0.25f - 3.0f;
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  };
  add("w", {64, 64, 1, 1});  // 16 KB: page-aligned
  add("big", {1, 64, 4, 4});  // 4 KB
  add("small", {1, 64, 1, 1});  // 256 bytes: stays inline
  return model;
}

std::map<std::string, std::string> ExternalEntries(const onnx::TensorProto& t) {
  std::map<std::string, std::string> entries;
  for (const auto& e : t.external_data()) entries[e.key()] = e.value();
  return entries;
}

}  // namespace

TEST_CASE("a model over the inline limit is written with its large initializers as external data", "[save_model]") {
  test::TempDir dir("save");
  const auto model = ModelWithWeights();
  const std::string path = (dir.path / "out.onnx").string();
  SaveOptions options;
  options.inline_limit = 4096;  // stands in for protobuf's 2 GB
  SaveModelAtomically(model, path, options);
  CHECK(dir.Entries() == std::vector<std::string>{"out.onnx", "out.onnx.data"});

  onnx::ModelProto written;
  REQUIRE(written.ParseFromString(FileContents(path)));
  CHECK(written.graph().node_size() == model.graph().node_size());
  CHECK(written.ByteSizeLong() < 4096);
  const std::string data = FileContents(dir.path / "out.onnx.data");
  std::int64_t end = 0;
  for (int i = 0; i < written.graph().initializer_size(); ++i) {
    const auto& t = written.graph().initializer(i);
    const auto& original = model.graph().initializer(i);
    INFO(t.name());
    CHECK(t.name() == original.name());
    CHECK(std::vector<std::int64_t>(t.dims().begin(), t.dims().end()) ==
          std::vector<std::int64_t>(original.dims().begin(), original.dims().end()));
    if (t.name() == "small") {  // under min_external_bytes: inline
      CHECK(t.data_location() == onnx::TensorProto::DEFAULT);
      CHECK(t.raw_data() == original.raw_data());
      continue;
    }
    REQUIRE(t.data_location() == onnx::TensorProto::EXTERNAL);
    CHECK_FALSE(t.has_raw_data());
    auto entries = ExternalEntries(t);
    CHECK(entries["location"] == "out.onnx.data");
    const std::int64_t offset = std::stoll(entries["offset"]), length = std::stoll(entries["length"]);
    CHECK(length == static_cast<std::int64_t>(original.raw_data().size()));
    CHECK(offset % (length >= 65536 ? 4096 : 64) == 0);
    CHECK(offset >= end);
    CHECK(data.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(length)) == original.raw_data());
    end = offset + length;
  }
  CHECK(static_cast<std::int64_t>(data.size()) == end);

  // It loads back (the loader reads the data file) with the same weights.
  Graph loaded = LoadModel(path);
  for (const auto& original : model.graph().initializer()) {
    const auto* t = loaded.ConstantTensor(*loaded.FindValue(original.name()));
    REQUIRE(t != nullptr);
    CHECK(t->raw_data() == original.raw_data());
  }
}

TEST_CASE("a model under the inline limit is one file", "[save_model]") {
  test::TempDir dir("save");
  const auto model = ModelWithWeights();
  SaveModelAtomically(model, (dir.path / "out.onnx").string());
  CHECK(dir.Entries() == std::vector<std::string>{"out.onnx"});
  CHECK(FileContents(dir.path / "out.onnx") == model.SerializeAsString());
}

TEST_CASE("a model over the limit with no initializer large enough to move stays one file", "[save_model]") {
  test::TempDir dir("save");
  SaveOptions options;
  options.inline_limit = 1024;
  options.min_external_bytes = 1 << 30;
  const auto model = ModelWithWeights();
  SaveModelAtomically(model, (dir.path / "out.onnx").string(), options);
  CHECK(dir.Entries() == std::vector<std::string>{"out.onnx"});
  CHECK(FileContents(dir.path / "out.onnx") == model.SerializeAsString());
}

TEST_CASE("a write cut short (file size limit, as on a full disk) leaves the previous files and no temporary",
          "[save_model]") {
  test::TempDir dir("save");
  const auto model = ModelWithWeights();
  const std::string path = (dir.path / "out.onnx").string();
  { std::ofstream(path) << "previous model"; }
  { std::ofstream(path + ".data") << "previous data"; }

  // Writes past 8 KB fail with EFBIG instead of killing the process with SIGXFSZ.
  struct rlimit old_limit {};
  ::getrlimit(RLIMIT_FSIZE, &old_limit);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = old_limit;
  limit.rlim_cur = 8192;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
  std::string message;
  ErrorKind kind = ErrorKind::kInternal;
  for (std::uint64_t inline_limit : {kProtobufMessageLimit, std::uint64_t{4096}}) {
    SaveOptions options;
    options.inline_limit = inline_limit;
    options.min_external_bytes = 1024;
    try {
      SaveModelAtomically(model, path, options);
    } catch (const Error& e) {
      message = e.what();
      kind = e.kind();
    }
    INFO(message);
    CHECK(kind == ErrorKind::kIo);
    CHECK_THAT(message, Catch::Contains("out.onnx") && Catch::Contains("File too large"));
    CHECK(FileContents(path) == "previous model");
    CHECK(FileContents(path + ".data") == "previous data");
    CHECK(dir.Entries() == std::vector<std::string>{"out.onnx", "out.onnx.data"});
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);
}

TEST_CASE("SaveModelAtomically replaces a file and leaves it intact on failure", "[save_model]") {
  test::TempDir temp("atomic");
  const fs::path dir = temp.path;
  const std::string path = (dir / "model.onnx").string();
  auto model = test::ParseModel(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[4] a) => (float[4] y) { y = Relu (a) })");
  { std::ofstream(path) << "old"; }
  ::chmod(path.c_str(), 0640);
  SaveModelAtomically(model, path);
  CHECK(FileContents(path) == model.SerializeAsString());
  CHECK((fs::status(path).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write |
                                                             fs::perms::group_read));
  CHECK(temp.Entries() == std::vector<std::string>{"model.onnx"});

  SECTION("the target is a directory") {
    const fs::path target = dir / "sub";
    fs::create_directories(target);
    { std::ofstream(target / "keep") << "keep"; }
    try {
      SaveModelAtomically(model, target.string());
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kIo);
      CHECK(std::string(e.what()).rfind(target.string() + ": ", 0) == 0);
    }
    CHECK(FileContents(target / "keep") == "keep");
    CHECK(temp.Entries().size() == 2);  // model.onnx and sub: no temporary file left
  }
  SECTION("the directory does not exist") {
    CHECK_THROWS_AS(SaveModelAtomically(model, (dir / "missing" / "m.onnx").string()), Error);
  }
  SECTION("the parent is a file, not a directory") {
    { std::ofstream(path) << "old"; }
    CHECK_THROWS_AS(SaveModelAtomically(model, (dir / "model.onnx" / "m.onnx").string()), Error);
    CHECK(FileContents(path) == "old");
    CHECK(temp.Entries() == std::vector<std::string>{"model.onnx"});
  }
}
