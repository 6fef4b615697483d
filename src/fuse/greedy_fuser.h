// The greedy residual-aware fuser (`--strategy greedy`).
//
// Source: shared/seeds/004 (greedy sequential fusion with residual awareness).
// Walks nodes in topological order; from each node not yet in a group it
// extends a chain through single consumers until a boundary: a fork (an output
// read by several nodes or by the graph), a join (a node with several
// non-constant inputs), a significant shape change (FuserOptions::greedy_shape_ratio),
// an opaque op, or the group-size limit.
//
// Before (a ResNet basic block; x is also read by the Add):
//
//   x ─┬─► Conv ─► BN ─► Relu ─► Conv ─► BN ─► Add ─► Relu ─► y
//      └──────────────────────────────────────►┘
//
// After: [Conv BN Relu Conv BN] [Add Relu]; the chain stops before Add (a join).
//
// Definitions. A chain starts at a node T0 not yet in a group; its current tail
// is T. It grows to the successor S while every test below passes; the first
// test that fails ends the chain and records one Rejection {node = T,
// target = S (or kNoNode when there is no single successor), reason, detail}:
//   1. "graph_output": an output of T is a graph output and T has consumers.
//      (A graph output nobody reads ends the chain without a rejection.)
//   2. "fork": T's outputs are read by more than one node in total. No
//      consumer at all ends the chain without a rejection. Otherwise S is the
//      one consumer.
//   3. "join": S has more than one distinct non-constant input value.
//      Constants are Graph::IsConstant values (initializers, Constant-node
//      outputs); omitted optional inputs do not count. Conv(x, W, B) with
//      initializer W, B is not a join; Add(a, b) of two activations is.
//      (S already in another group is reported as "join" too; with the test
//      above it cannot happen, since S's only non-constant input is T's.)
//   4. "opaque": S is kOpaque (ClassifyNode).
//   5. "shape_change": S's first output has at least greedy_shape_ratio times
//      more or fewer elements than the value S reads from T, when both counts
//      are known and positive. MaxPool 112x112 -> 56x56 (4x) and
//      GlobalAveragePool 7x7 -> 1x1 end a chain; a same-shape Conv does not.
//   6. "group_size_limit": the chain already has max_group_size nodes.
// An opaque node is never extended and never extended into: it is a group of
// its own. Every opaque node except `Constant` (a value, not computation) is
// named in exactly one "opaque" rejection: as the target of the chain that
// stopped before it, or else by itself {node = it, target = kNoNode}.
//
// Groups are convex: inside a chain every edge is the tail's only use and every
// non-head member has no other non-constant input, so a path can only enter a
// chain at its head. Linear time and iterative: O(nodes + uses).
#pragma once

#include "fuse/fusion_plan.h"

namespace onnxfuse {

/// Partitions `graph` into chains (see above). Groups of two or more nodes get
/// rule "greedy.chain"; the plan's strategy is "greedy". Throws Error(kUsage)
/// when options.max_group_size < 1.
FusionPlan FuseGreedy(const Graph& graph, const FuserOptions& options);

}  // namespace onnxfuse
