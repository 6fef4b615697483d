// Internal to the ONNX writer: the functions and call nodes of groups that a
// pattern matched (FusedGroup::call).
//
// The pattern's own FunctionProto is written, adapted in two ways only:
//  - its default-domain opset becomes the model's (the checker requires equal
//    opsets; the matcher judged attributes at the model's opset);
//  - a call that omits optional inputs (a Conv without bias matched by a
//    pattern written with B) gets a variant without those inputs, named
//    "<Pattern>_no_<Input>[_<Input>...]", whose body passes "" where the input
//    was read: ONNX 1.12's strict shape inference rejects a call with an empty
//    input the function declares.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "fuse/fusion_plan.h"
#include "ir/graph.h"

namespace onnxfuse::detail {

struct PatternCalls {
  std::vector<onnx::FunctionProto> functions;   ///< to add to the model, each once
  std::vector<std::string> function_of_group;   ///< per group id; "" for groups without a pattern call
};

/// Throws Error(kUnsupported) when the model already defines a different
/// function of the same name (an identical one, from an earlier run, is reused).
PatternCalls BuildPatternCalls(const Graph& graph, const FusionPlan& plan);

/// The call node of a pattern group: the variant's inputs in declared order,
/// the captured attributes, original member names in doc_string.
onnx::NodeProto PatternCallNode(const Graph& graph, const FusedGroup& group, const std::string& function,
                                const std::string& node_name);

}  // namespace onnxfuse::detail
