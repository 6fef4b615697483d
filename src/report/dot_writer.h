// Pictures of a FusionPlan: the graph as Graphviz DOT text, and SVG through `dot`.
//
// The picture is for a person who wants to see at a glance what fused:
//   - layout top to bottom; each op node a rounded box "OpType (W,B)\nname":
//     the constant inputs it reads (initializers, Constant-node outputs) are
//     not drawn but named in parentheses by the operator schema's input names
//     ("(4 const)" when that would be long); the node name is shortened
//     (PyTorch's "/layer1/layer1.0/conv1/Conv" -> "layer1.0/conv1"; the full
//     name is the SVG tooltip);
//   - Constant nodes are not drawn (they are data, like initializers);
//   - graph inputs and outputs are ellipses "name\n[shape]";
//   - every fused group (2+ nodes) is a cluster filled with a pastel colour
//     picked from a fixed palette by a stable hash (FNV-1a, then
//     MurmurHash3's finalizer) of its function name without the writer's
//     "_<n>" clash suffix, so one kind of group has one colour in every
//     picture (the top six kinds of each of the 11 torchvision models get
//     distinct colours but one pair); the cluster label, in bold, is the
//     function name and the fuser's rule;
//   - single-node groups are plain white boxes, kOpaque nodes grey;
//   - an edge whose tensor lives only inside one group (a fused kernel never
//     stores it) is dashed and grey; every other edge is solid and, when it
//     leaves a group, labelled with the tensor's shape ("[1,64,56,56]").
// Attributes are kept few (no HTML labels, no ports) so `dot` lays out ~1000
// nodes (ViT-B/16) in seconds.
//
// DOT ids are generated ("n<node id>", "in<value id>", "out<value id>",
// "cluster_g<group id>"); user text appears only in quoted labels and
// tooltips, escaped for DOT (backslash, quote, newline; other control bytes
// and invalid UTF-8 become '?').
#pragma once

#include <string>
#include <vector>

#include "fuse/fusion_plan.h"
#include "ir/graph.h"

namespace onnxfuse {

/// Graphviz text of the graph with each fused group (2+ nodes) as a coloured
/// cluster labelled by its function/pattern name and rule. `function_of_group`
/// is FusedModel::function_of_group (may be empty or shorter than the group
/// list); a group without a name there is named by its PatternCall's function,
/// else by its members' op types as the ONNX writer would name it.
/// Throws Error(kInternal) when the plan does not cover the graph's nodes.
std::string ToDot(const Graph& graph, const FusionPlan& plan, const std::vector<std::string>& function_of_group);

/// Runs `dot -Tsvg` on the text and writes the SVG to `path` atomically
/// (WriteFileAtomically: on failure the target is left as it was). `dot` is
/// looked up in PATH. Throws Error(kUnsupported, "<path>: Graphviz 'dot' is not
/// installed") when dot is missing, Error(kIo, "<path>: ...") naming dot's exit
/// status and first error line when it fails, or when the file cannot be written.
void RenderSvg(const std::string& dot_text, const std::string& path);

}  // namespace onnxfuse
