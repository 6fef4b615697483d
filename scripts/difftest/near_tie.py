"""Whether a mismatch between two plans (fused and unfused, or ONNX Runtime
and one of ours) is an ArgMax or ArgMin deciding a near-tie that each plan
rounds its own way.

ArgMax over two computed values a few ulps apart picks whichever the plan's
summation order makes larger (seed 191302493: a Conv's two output channels
2.6e-7 apart, its fused and unfused plans 3e-7 apart; the index, cast to
float and added back, moves the output by 0.0625). Perturbing the inputs by
1e-6 need not flip the same row, so the perturbation rule can miss it.

Explained only when all three hold, so that a bug on either side of the
selection cannot hide here:
- upstream: the float input of every ArgMax/ArgMin agrees between the two
  sides within the tester's RTOL, at the graph's own inputs;
- the selection: where the plans' indices differ, each plan's index is an
  extreme of that plan's own row (its ArgMax is right for what it computed),
  and at least one index differs;
- downstream: at three other draws of the inputs, the plans agree on every
  output within RTOL."""
import os
import shutil

import numpy as np
import onnx
from onnx import numpy_helper

from .runner import RTOL, compare, draw, make_inputs, max_rel

SELECTIONS = ("ArgMax", "ArgMin")
OTHER_DRAWS = 3
# The two sides of each kind of mismatch: the reference, then the candidate.
SIDES = {"fused-vs-unfused": ("unfused", "fused"), "ort-vs-fused": ("ort", "fused"),
         "ort-vs-unfused": ("ort", "unfused")}


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _probe(model, nodes):
    """MODEL with each selection's input and index made outputs (after its
    own), typed by shape inference; None when one is left untyped."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inferred = onnx.shape_inference.infer_shapes(m)
    typed = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)
             + list(inferred.graph.input)}
    have = {o.name for o in m.graph.output}
    for node in nodes:
        for name in (node.input[0], node.output[0]):
            if name in have:
                continue
            v = typed.get(name)
            if v is None or not v.type.tensor_type.HasField("shape"):
                return None
            m.graph.output.append(v)
            have.add(name)
    return m


def _write(folder, model, inputs):
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    for i, vi in enumerate(model.graph.input):
        with open(os.path.join(folder, "input_%d.pb" % i), "wb") as fh:
            fh.write(numpy_helper.from_array(inputs[vi.name], vi.name).SerializeToString())
    return path


def _side(runner, side, model, inputs, folder, strategy, threads):
    """MODEL's outputs (a list, in its order) from SIDE at INPUTS, or None."""
    path = _write(folder, model, inputs)
    if side == "ort":
        got = runner.ort(path, inputs, onnx_fuse_nan=True)
        names = [o.name for o in model.graph.output]
        return [got[n] for n in names] if isinstance(got, dict) and all(n in got for n in names) else None
    out = os.path.join(folder, "out")
    os.makedirs(out)
    return runner.outputs(path, strategy, threads, side == "fused", folder, out)[1]


def _sides(runner, kind, model, inputs, folder, strategy, threads):
    """Both sides' outputs of MODEL at INPUTS (reference, candidate), or None."""
    got = [_side(runner, side, model, inputs, os.path.join(folder, side), strategy, threads) for side in SIDES[kind]]
    return None if any(g is None for g in got) else got


def _selection_agrees(node, x, index):
    """True when INDEX holds an extreme of X along the node's axis (with
    keepdims, as ArgMax writes it) at every position."""
    axis = _attr(node, "axis", 0) % x.ndim
    idx = index if _attr(node, "keepdims", 1) else np.expand_dims(index, axis)
    if idx.shape[axis] != 1 or (idx < 0).any() or (idx >= x.shape[axis]).any():
        return False
    picked = np.take_along_axis(x, idx.astype(np.int64), axis)
    extreme = (x.max if node.op_type == "ArgMax" else x.min)(axis=axis, keepdims=True)
    return bool(np.array_equal(picked, extreme))


def selection_near_tie(runner, b, failure):
    """True when FAILURE (between two plans, at the graph's own inputs) is a
    near-tie at an ArgMax/ArgMin, as above."""
    kind, (how, strategy, threads) = failure.get("kind"), failure["via"]
    if kind not in SIDES or how not in ("check", "ort") or failure.get("shape"):
        return False
    nodes = [n for n in b.model.graph.node if n.op_type in SELECTIONS and not n.domain]
    probe = _probe(b.model, nodes) if nodes else None
    if probe is None:
        return False
    folder = os.path.join(b.folder, "near_tie")
    os.makedirs(folder, exist_ok=True)
    runs = _sides(runner, kind, probe, make_inputs(probe, folder), os.path.join(folder, "own"), strategy, threads)
    if runs is None:
        return False
    names = [o.name for o in probe.graph.output]
    ref, cand = (dict(zip(names, r)) for r in runs)
    flipped = False
    for node in nodes:
        x, index = node.input[0], node.output[0]
        if any(n not in ref or n not in cand for n in (x, index)):
            return False
        if cand[x].dtype != np.float32 or max_rel(ref[x], cand[x])[1] > RTOL:
            return False  # not a near-tie: the sides differ before the selection
        if np.array_equal(ref[index], cand[index]):
            continue
        if not (_selection_agrees(node, ref[x], ref[index]) and _selection_agrees(node, cand[x], cand[index])):
            return False  # an index that is no extreme of its side's own values: a bug in the selection
        flipped = True
    if not flipped:
        return False
    outputs = [o.name for o in b.model.graph.output]
    for t in range(OTHER_DRAWS):
        other = {}
        for i, vi in enumerate(b.model.graph.input):
            dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            other[vi.name] = draw(1000 * (t + 1) + i + 1, int(np.prod(dims)), vi.type.tensor_type.elem_type).reshape(dims)
        runs = _sides(runner, kind, b.model, other, os.path.join(folder, "draw%d" % t), strategy, threads)
        if runs is None or compare(runs[0], runs[1], outputs, kind, "near-tie draw %d" % t) is not None:
            return False
    return True
