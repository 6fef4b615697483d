// Choosing among oneDNN's implementations of one primitive by timing them on
// this CPU at build time: empirical selection of a kernel variant for the exact
// shapes of the model, as TVM's AutoTVM and oneDNN's own benchdnn do it, limited
// here to candidates that read and write the same layouts (the choice changes
// no other step of the plan).
#include "backend/lower/core/impl_choice.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include <spdlog/spdlog.h>


namespace onnxfuse::backend {

namespace {

constexpr int kTimedRounds = 7;
// A later candidate must beat oneDNN's first choice by this factor: timing
// noise alone then rarely changes the plan from one build to the next.
constexpr double kMargin = 0.95;

// One candidate, ready to run on scratch buffers of its argument layouts
// (`arg_keys`, DNNL_ARG_*) filled with a small constant, so that no denormal
// or NaN skews the timing.
struct Timed {
  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args;
  std::vector<double> ms;
};

Timed Prepare(Builder& b, const dnnl::primitive_desc& pd, const std::vector<int>& arg_keys) {
  Timed t;
  auto scratch = [&](const dnnl::memory::desc& md) {
    dnnl::memory m(md, b.engine);
    auto* p = static_cast<float*>(m.get_data_handle());
    std::fill(p, p + md.get_size() / sizeof(float), 0.25f);
    return m;
  };
  for (int key : arg_keys) {
    dnnl::memory::desc md = pd.query_md(dnnl::query::exec_arg_md, key);
    if (!md.is_zero()) t.args[key] = scratch(md);
  }
  if (pd.scratchpad_desc().get_size() > 0) t.args[DNNL_ARG_SCRATCHPAD] = scratch(pd.scratchpad_desc());
  t.prim = dnnl::primitive(pd.get());
  t.prim.execute(b.stream, t.args);  // warm-up: first-touch of the buffers, caches
  b.stream.wait();
  return t;
}

// Median of `ms`, in ms.
double Median(std::vector<double> ms) {
  std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

// The median time of one execution of each candidate, in ms, timed in
// interleaved rounds (each candidate once per round): a burst of load from
// elsewhere on the machine slows every candidate of its round alike instead
// of making one look slow. A candidate over twice the first one's time after
// a round drops out (far slower: no need to time it further).
std::vector<double> TimeInterleaved(Builder& b, const std::vector<dnnl::primitive_desc>& candidates,
                                    const std::vector<int>& arg_keys) {
  std::vector<Timed> timed;
  for (const auto& pd : candidates) timed.push_back(Prepare(b, pd, arg_keys));
  std::vector<bool> dropped(timed.size(), false);
  for (int round = 0; round < kTimedRounds; ++round) {
    for (std::size_t i = 0; i < timed.size(); ++i) {
      if (dropped[i]) continue;
      auto start = std::chrono::steady_clock::now();
      timed[i].prim.execute(b.stream, timed[i].args);
      b.stream.wait();
      timed[i].ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    for (std::size_t i = 1; i < timed.size(); ++i)
      dropped[i] = dropped[i] || Median(timed[i].ms) > 2 * Median(timed[0].ms);
  }
  std::vector<double> medians;
  for (const Timed& t : timed) medians.push_back(Median(t.ms));
  return medians;
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
  const std::vector<double> ms = TimeInterleaved(b, candidates, arg_keys);
  std::size_t best = 0;
  double best_ms = ms[0] * kMargin;
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    spdlog::debug("{} [{}]: '{}' {:.4f} ms, '{}' {:.4f} ms", kind, key, candidates[0].impl_info_str(), ms[0],
                  candidates[i].impl_info_str(), ms[i]);
    if (ms[i] < best_ms) best = i, best_ms = ms[i];
  }
  return candidates[best];
}

}  // namespace onnxfuse::backend
