// Choosing among oneDNN's implementations of a primitive
// (src/backend/lower/core/impl_choice.cc, ChooseImpl): the choice keeps the
// primitive's layouts, its instruction set and no slow kernel, takes the
// preferred one when it is a candidate, and is the same every time; replaying a
// plan file, the stored implementation is taken when it is one of the candidates.
// A depthwise convolution on channels-last data has two on AVX-512 in oneDNN
// 2.6 (brdgmm_dw, jit_dw), one on AVX2 (jit_dw). The plan file's side of the
// replay: plan/plan_file_read_test.cc.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "backend/lower/core/impl_choice.h"
#include "test_models.h"

using namespace onnxfuse;
using dnnl::memory;

namespace {

const char* const kKey = "conv:dw";

// A 3x3 depthwise convolution of 64 channels at 28x28, pads 1, channels-last
// in and out, weights in the layout oneDNN picks.
dnnl::convolution_forward::desc DepthwiseDesc() {
  const memory::dims x = {1, 64, 28, 28}, w = {64, 1, 1, 3, 3};
  const memory::desc src(x, memory::data_type::f32, memory::format_tag::nhwc);
  const memory::desc weights(w, memory::data_type::f32, memory::format_tag::any);
  return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                         weights, src, {1, 1}, {1, 1}, {1, 1});
}

// The instruction set an implementation name ends with: "jit_dw:avx512_core" -> "avx512_core".
std::string IsaOf(const std::string& impl) { return impl.substr(impl.rfind(':') + 1); }

// oneDNN's implementations of `desc` that keep the layouts and instruction
// set of its first choice and are not slow (backend/lower/core/builder.h,
// IsSlowImpl), each once (oneDNN may list one more than once). oneDNN's iterator over them reads `desc` itself: it must
// outlive the iteration (a primitive_desc returned from a function where its
// desc was local finds no next implementation).
std::vector<std::string> Candidates(const backend::Builder& b, const dnnl::convolution_forward::desc& desc) {
  std::vector<std::string> names;
  const dnnl::convolution_forward::primitive_desc first(desc, b.Attr(), b.engine);
  dnnl::convolution_forward::primitive_desc all(desc, b.Attr(), b.engine);
  do {
    const std::string impl = all.impl_info_str();
    if (all.src_desc() == first.src_desc() && all.dst_desc() == first.dst_desc() && !backend::IsSlowImpl("conv", impl) &&
        IsaOf(impl) == IsaOf(first.impl_info_str()) && std::find(names.begin(), names.end(), impl) == names.end())
      names.push_back(impl);
  } while (all.next_impl());
  return names;
}

}  // namespace

TEST_CASE("ChooseImpl keeps the primitive's layouts and takes the preferred implementation", "[impl_choice]") {
  const Graph graph = test::GraphFromText(test::kBasicBlock);  // any graph: the choice reads none of it
  backend::Builder b(graph, true, dnnl::engine(dnnl::engine::kind::cpu, 0));
  const auto desc = DepthwiseDesc();
  const dnnl::convolution_forward::primitive_desc pd(desc, b.Attr(), b.engine);
  const std::vector<std::string> candidates = Candidates(b, desc);
  INFO("oneDNN's first choice " << pd.impl_info_str() << ", " << candidates.size() << " candidates");
  REQUIRE_FALSE(candidates.empty());
  for (const std::string& preferred : candidates) {
    const std::string prefix = preferred.substr(0, preferred.find(':'));  // "jit_dw:avx2" -> "jit_dw"
    const dnnl::primitive_desc chosen = backend::ChooseImpl(b, pd, "conv", kKey, prefix);
    INFO("preferred " << prefix << ", chosen " << chosen.impl_info_str());
    CHECK(chosen.impl_info_str() == preferred);
    CHECK(chosen.query_md(dnnl::query::src_md) == pd.src_desc());
    CHECK(chosen.query_md(dnnl::query::dst_md) == pd.dst_desc());
  }
  // No candidate of that name: oneDNN's first choice.
  CHECK(backend::ChooseImpl(b, pd, "conv", kKey, "no_such_kernel").impl_info_str() == pd.impl_info_str());
  CHECK(b.steps.empty());  // nothing is emitted
}

TEST_CASE("replaying a plan, ChooseImpl takes the stored implementation when it is a candidate", "[impl_choice]") {
  const Graph graph = test::GraphFromText(test::kBasicBlock);
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const auto desc = DepthwiseDesc();
  const std::vector<std::string> candidates = Candidates(backend::Builder(graph, true, engine), desc);
  INFO(candidates.size() << " candidates");
  // What ChooseImpl takes when replaying a plan that stored `stored`.
  auto replayed = [&](const std::string& stored) {
    backend::PackedConstants replay;
    replay.replay = true;
    replay.implementations[kKey] = stored;
    backend::Builder b(graph, true, engine, &replay);
    const dnnl::convolution_forward::primitive_desc pd(desc, b.Attr(), b.engine);
    return backend::ChooseImpl(b, pd, "conv", kKey, "jit_dw").impl_info_str();
  };
  for (const std::string& stored : candidates) {
    INFO("stored " << stored);
    CHECK(replayed(stored) == stored);
  }
  // A stored name that is no candidate here (a slow kernel, another CPU's) is not taken.
  for (const std::string stored : {"ref:any", "jit_dw:no_such_isa"}) {
    INFO("stored " << stored);
    const std::string impl = replayed(stored);
    CHECK(std::find(candidates.begin(), candidates.end(), impl) != candidates.end());
  }
}
