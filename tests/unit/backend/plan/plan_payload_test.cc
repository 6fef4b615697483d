// The plan payload parsed in place (src/backend/plan/plan_payload.cc): the
// model and each constant's data are views into the parsed bytes, every other
// field is parsed as protobuf parses it, and bytes that are not a Plan are
// refused.
#include <catch2/catch.hpp>

#include <string>

#include "backend/plan/plan_payload.h"
#include "onnxfuse/error.h"
#include "onnxfuse_plan.pb.h"

using namespace onnxfuse;
using namespace onnxfuse::planformat;

namespace {

planfile::Plan SmallPlan() {
  planfile::Plan plan;
  plan.set_producer("onnx-fuse test");
  plan.set_model("the model's bytes");
  plan.set_strategy("postdom");
  plan.add_groups()->add_nodes(3);
  for (const char* key : {"0:Conv:weights", "0:Conv:bias"}) {
    planfile::PackedConstant* c = plan.add_constants();
    c->set_key(key);
    c->mutable_desc()->add_dims(2);
    c->set_alignment(std::string(5, '\0'));
    c->set_data(std::string(key) + " data");
  }
  plan.add_schedule()->set_kind("conv");
  plan.set_arena_bytes(64);
  return plan;
}

bool Inside(std::string_view view, const std::string& bytes) {
  return view.data() >= bytes.data() && view.data() + view.size() <= bytes.data() + bytes.size();
}

}  // namespace

TEST_CASE("the model and the constants' data are views into the payload, the rest parsed", "[plan_file]") {
  const planfile::Plan plan = SmallPlan();
  const std::string bytes = plan.SerializeAsString();
  const PayloadView view = ParsePayloadInPlace(bytes.data(), bytes.size(), "x.plan");

  CHECK(view.model == "the model's bytes");
  CHECK(Inside(view.model, bytes));
  REQUIRE(view.constants.size() == 2);
  for (int i = 0; i < 2; ++i) {
    const PayloadConstant& c = view.constants[static_cast<std::size_t>(i)];
    CHECK(c.head.key() == plan.constants(i).key());
    CHECK(c.head.desc().dims_size() == 1);
    CHECK(c.head.data().empty());
    CHECK(c.data == plan.constants(i).data());
    CHECK(Inside(c.data, bytes));
  }
  // Every other field as protobuf parses it; the two large ones left out.
  planfile::Plan expected = plan;
  expected.clear_model();
  expected.clear_constants();
  CHECK(view.plan.SerializeAsString() == expected.SerializeAsString());
}

TEST_CASE("fields parse in any order, and a repeated model keeps its last occurrence", "[plan_file]") {
  planfile::Plan first, second;
  first.set_model("old model");
  first.add_constants()->set_key("a");
  second.set_producer("p");
  second.set_model("new model");
  second.add_constants()->set_key("b");
  // Concatenated messages merge (protobuf's rule): constants append, a bytes field's last value wins.
  const std::string bytes = first.SerializeAsString() + second.SerializeAsString();
  const PayloadView view = ParsePayloadInPlace(bytes.data(), bytes.size(), "x.plan");
  planfile::Plan merged;
  REQUIRE(merged.ParseFromString(bytes));
  CHECK(view.model == merged.model());
  REQUIRE(view.constants.size() == 2);
  CHECK(view.constants[0].head.key() == "a");
  CHECK(view.constants[1].head.key() == "b");
  CHECK(view.plan.producer() == "p");
}

TEST_CASE("bytes that are not a plan payload are refused, naming the file", "[plan_file]") {
  const std::string bytes = SmallPlan().SerializeAsString();
  auto refused = [](const std::string& data) {
    try {
      ParsePayloadInPlace(data.data(), data.size(), "x.plan");
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kInvalidModel);
      CHECK_THAT(e.what(), Catch::Contains("x.plan") && Catch::Contains("does not parse"));
    }
  };
  refused(bytes.substr(0, bytes.size() - 1));        // the last field cut short
  refused(bytes + '\0');                               // a zero tag
  refused(bytes + std::string("\x1a\x7f", 2));         // model: 127 bytes announced, none there
  // A constant whose own body is not a PackedConstant: a field-8 body of one bad tag.
  refused(std::string("\x42\x01\x00", 3));
  refused(std::string("\x0a\x02\xff\xfe", 4));  // producer (a proto3 string): not UTF-8
  CHECK_NOTHROW(ParsePayloadInPlace("", 0, "x.plan"));  // an empty message is a Plan
}
