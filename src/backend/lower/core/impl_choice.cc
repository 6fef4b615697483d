// Choosing among oneDNN's implementations of one primitive by a preference
// measured once per CPU family, limited to candidates that read and write the
// same layouts (the choice changes no other step of the plan). A choice timed
// at each build would be faster by a few percent on some shapes, but two
// builds of one model could then run different kernels and differ in the last
// bits of their outputs.
#include "backend/lower/core/impl_choice.h"

#include <algorithm>
#include <vector>

namespace onnxfuse::backend {

namespace {

// An owned copy of the implementation `pd` currently holds.
dnnl::primitive_desc Clone(const dnnl::primitive_desc_base& pd) {
  dnnl_primitive_desc_t copy = nullptr;
  dnnl::error::wrap_c_api(dnnl_primitive_desc_clone(&copy, pd.get()), "could not clone a primitive descriptor");
  return dnnl::primitive_desc(copy);
}

}  // namespace

dnnl::primitive_desc ChooseImpl(Builder& b, const dnnl::primitive_desc& pd, const std::string& kind,
                                 const std::string& key, const std::string& preferred) {
  // Every implementation of the same operation and attributes, oneDNN's order.
  const_dnnl_op_desc_t op_desc = nullptr;
  dnnl::error::wrap_c_api(dnnl_primitive_desc_query(pd.get(), dnnl_query_op_d, 0, &op_desc), "op desc");
  dnnl::primitive_attr attr = pd.get_primitive_attr();
  dnnl::primitive_desc all(op_desc, &attr, b.engine, nullptr);
  // Candidates for the same ISA as oneDNN's choice ("brdgmm_dw:avx512_core"
  // -> "jit_dw:avx512_core"): kernels for older ISAs are slower.
  const std::string first = pd.impl_info_str(), isa = first.substr(first.rfind(':') + 1);
  std::vector<dnnl::primitive_desc> candidates;
  do {
    const std::string impl = all.impl_info_str();
    if (all.src_desc() == pd.src_desc() && all.dst_desc() == pd.dst_desc() && !IsSlowImpl(kind, impl) &&
        impl.substr(impl.rfind(':') + 1) == isa)
      candidates.push_back(Clone(all));
  } while (all.next_impl());

  auto named = [&](auto matches) {
    return std::find_if(candidates.begin(), candidates.end(),
                        [&](const dnnl::primitive_desc& c) { return matches(c.impl_info_str()); });
  };
  if (const std::string* stored = b.StoredImpl(key)) {
    auto it = named([&](const std::string& impl) { return impl == *stored; });
    if (it != candidates.end()) return *it;
  }
  auto it = named([&](const std::string& impl) { return impl.substr(0, impl.find(':')) == preferred; });
  return it != candidates.end() ? *it : Clone(pd);
}

}  // namespace onnxfuse::backend
