// The error kinds and their exit codes (onnxfuse/error.h), and Check.
#include <catch2/catch.hpp>

#include "onnxfuse/error.h"

using namespace onnxfuse;

TEST_CASE("each error kind exits with its documented code", "[error]") {
  CHECK(Error(ErrorKind::kUsage, "m").exit_code() == 2);
  CHECK(Error(ErrorKind::kInvalidModel, "m").exit_code() == 3);
  CHECK(Error(ErrorKind::kUnsupported, "m").exit_code() == 4);
  CHECK(Error(ErrorKind::kIo, "m").exit_code() == 5);
  CHECK(Error(ErrorKind::kVerification, "m").exit_code() == 6);
  CHECK(Error(ErrorKind::kInternal, "m").exit_code() == 70);
  Error e(ErrorKind::kIo, "model.onnx: cannot open");
  CHECK(e.kind() == ErrorKind::kIo);
  CHECK(std::string(e.what()) == "model.onnx: cannot open");
}

TEST_CASE("Check passes a true condition and reports a false one as an internal error", "[error]") {
  CHECK_NOTHROW(Check(true, "never shown"));
  try {
    Check(false, "groups are convex");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInternal);
    CHECK(e.exit_code() == 70);
    CHECK(std::string(e.what()) == "internal error: groups are convex");
  }
}
