// Which OpenMP runtime serves the process (CMakeLists.txt, ONNXFUSE_LLVM_OPENMP):
// oneDNN's parallel regions bind to GOMP_parallel in the global symbol scope.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <string>

TEST_CASE("the OpenMP runtime the build links ahead of libdnnl serves oneDNN's parallel regions", "[openmp]") {
  void* entry = dlsym(RTLD_DEFAULT, "GOMP_parallel");
  REQUIRE(entry != nullptr);
  Dl_info info{};
  REQUIRE(dladdr(entry, &info) != 0);
  const std::string library = info.dli_fname ? info.dli_fname : "";
  INFO("GOMP_parallel comes from " << library);
  CHECK(library.find(std::string("/") + ONNXFUSE_OPENMP_LIBRARY + ".so") != std::string::npos);
}
