// Choosing among oneDNN's implementations of one primitive by timing them on
// this CPU at build time: empirical selection of a kernel variant for the exact
// shapes of the model, as TVM's AutoTVM and oneDNN's own benchdnn do it, limited
// here to candidates that read and write the same layouts (the choice changes
// no other step of the plan).
#include <algorithm>
#include <chrono>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "lower.h"

namespace onnxfuse::backend {

namespace {

constexpr int kTimedRuns = 5;
// A later candidate must beat oneDNN's first choice by this factor: timing
// noise alone then rarely changes the plan from one build to the next.
constexpr double kMargin = 0.95;

// Median time of one execution of `pd`, in ms, on scratch buffers of its
// argument layouts (`arg_keys`, DNNL_ARG_*), filled with a small constant so
// that no denormal or NaN skews the timing.
// Stops after one run when that is over `give_up` ms (a candidate far slower than the best so far).
double TimeImpl(Builder& b, const dnnl::primitive_desc& pd, const std::vector<int>& arg_keys, double give_up) {
  std::unordered_map<int, dnnl::memory> args;
  auto scratch = [&](const dnnl::memory::desc& md) {
    dnnl::memory m(md, b.engine);
    auto* p = static_cast<float*>(m.get_data_handle());
    std::fill(p, p + md.get_size() / sizeof(float), 0.25f);
    return m;
  };
  for (int key : arg_keys) {
    dnnl::memory::desc md = pd.query_md(dnnl::query::exec_arg_md, key);
    if (!md.is_zero()) args[key] = scratch(md);
  }
  if (pd.scratchpad_desc().get_size() > 0) args[DNNL_ARG_SCRATCHPAD] = scratch(pd.scratchpad_desc());
  dnnl::primitive prim(pd.get());
  prim.execute(b.stream, args);  // warm-up: first-touch of the buffers, caches
  b.stream.wait();
  std::vector<double> ms;
  for (int i = 0; i < kTimedRuns; ++i) {
    auto start = std::chrono::steady_clock::now();
    prim.execute(b.stream, args);
    b.stream.wait();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (ms.back() > give_up) return ms.back();
  }
  std::nth_element(ms.begin(), ms.begin() + kTimedRuns / 2, ms.end());
  return ms[kTimedRuns / 2];
}

// An owned copy of the implementation `pd` currently holds.
dnnl::primitive_desc Clone(const dnnl::primitive_desc_base& pd) {
  dnnl_primitive_desc_t copy = nullptr;
  dnnl::error::wrap_c_api(dnnl_primitive_desc_clone(&copy, pd.get()), "could not clone a primitive descriptor");
  return dnnl::primitive_desc(copy);
}

}  // namespace

dnnl::primitive_desc ChooseImpl(Builder& b, const dnnl::primitive_desc& pd, const std::string& kind,
                                 const std::string& key, const std::vector<int>& arg_keys) {
  // Every implementation of the same operation and attributes, oneDNN's order.
  const_dnnl_op_desc_t op_desc = nullptr;
  dnnl::error::wrap_c_api(dnnl_primitive_desc_query(pd.get(), dnnl_query_op_d, 0, &op_desc), "op desc");
  dnnl::primitive_attr attr = pd.get_primitive_attr();
  dnnl::primitive_desc all(op_desc, &attr, b.engine, nullptr);
  // Candidates for the same ISA as oneDNN's choice ("brdgmm_dw:avx512_core"
  // -> "jit_dw:avx512_core"): kernels for older ISAs are not worth timing.
  const std::string first = pd.impl_info_str(), isa = first.substr(first.rfind(':') + 1);
  std::vector<dnnl::primitive_desc> candidates;
  do {
    const std::string impl = all.impl_info_str();
    bool seen = std::any_of(candidates.begin(), candidates.end(),
                            [&](const dnnl::primitive_desc& c) { return impl == c.impl_info_str(); });
    if (!seen && all.src_desc() == pd.src_desc() && all.dst_desc() == pd.dst_desc() && !IsSlowImpl(kind, impl) &&
        impl.substr(impl.rfind(':') + 1) == isa)
      candidates.push_back(Clone(all));
  } while (all.next_impl());
  if (candidates.size() < 2) return Clone(pd);

  const std::string* stored = b.StoredImpl(key);
  if (stored) {
    for (const auto& c : candidates)
      if (c.impl_info_str() == *stored) return c;
  }
  std::size_t best = 0;
  double best_ms = TimeImpl(b, candidates[0], arg_keys, 1e30) * kMargin;
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    double ms = TimeImpl(b, candidates[i], arg_keys, 2 * best_ms);
    spdlog::debug("{} [{}]: '{}' {:.4f} ms, '{}' {:.4f} ms", kind, key, candidates[best].impl_info_str(), best_ms,
                  candidates[i].impl_info_str(), ms);
    if (ms < best_ms) best = i, best_ms = ms;
  }
  return candidates[best];
}

}  // namespace onnxfuse::backend
