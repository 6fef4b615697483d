#include "ir/fused_domain.h"

#include <map>
#include <set>
#include <string>

#include "ir/node_label.h"

namespace onnxfuse {

// Every call of a fused-domain op names a function of the model and sets only
// attributes it declares, with the types its body expects; every
// ref_attr_name in a body is declared. A call may leave a declared attribute
// unset: the body node then lacks it too and takes the operator's default
// (ONNX IR "Functions", ref_attr_name; ONNX Runtime's inliner does the same).
// Generated functions always set them; pattern calls omit what the matched
// node omitted.
void CheckFunctionCalls(const onnx::ModelProto& model, ErrorKind kind, const std::string& prefix) {
  auto Check = [&](bool ok, const std::string& message) {
    if (!ok) throw Error(kind, prefix + message);
  };
  std::map<std::string, std::map<std::string, int>> declared;  // function -> attribute -> type (0 unused)
  for (const auto& f : model.functions()) {
    if (f.domain() != kFusedDomain) continue;
    auto& attributes = declared[f.name()];
    for (const auto& name : f.attribute()) attributes[name] = 0;
    for (const auto& node : f.node())
      for (const auto& a : node.attribute()) {
        if (a.ref_attr_name().empty()) continue;
        Check(attributes.count(a.ref_attr_name()) > 0,
              "function " + f.name() + " references undeclared attribute '" + a.ref_attr_name() + "'");
        attributes[a.ref_attr_name()] = static_cast<int>(a.type());
      }
  }
  for (const auto& node : model.graph().node()) {
    if (node.domain() != kFusedDomain) continue;
    const std::string where = "fused " + NodeLabel(node);
    auto f = declared.find(node.op_type());
    Check(f != declared.end(), where + " calls no function of the model");
    std::set<std::string> set;
    for (const auto& a : node.attribute()) {
      auto it = f->second.find(a.name());
      Check(it != f->second.end(), where + " sets undeclared attribute '" + a.name() + "'");
      Check(it->second == 0 || it->second == static_cast<int>(a.type()),
            where + " sets attribute '" + a.name() + "' with the wrong type");
      set.insert(a.name());
    }
  }
}

}  // namespace onnxfuse
