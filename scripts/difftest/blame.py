"""Whose rounding a mismatch against ONNX Runtime is.

Every float value of the main graph is made an output, and our unfused plan
and ONNX Runtime run the copy at the inputs the mismatch happened at. A
mismatch is *born* at a node whose output differs between the two by more
than BIRTH times what its inputs do (and by more than FLOOR): the node where
one side rounds far off, not where a difference from upstream is carried on.
A node of an op that only carries a difference on (CARRIERS: Sub, Mod, ...)
is no birth when each side computes it right from its own inputs, however
much it magnifies what they differ by (a Sub whose operands nearly cancel).
Values after a Loop are typed as _typed says.

When every birth is at an op with a float64 reference here (EXACT) and, at
each, ONNX Runtime's output is at least BIRTH times further from the float64
recomputation from its own inputs than ours is from the recomputation from
ours, the mismatch is ONNX Runtime's rounding (seed 71291585: an
InstanceNormalization of instances that are constant up to a few ulps; ONNX
Runtime's mean, summed in float, is off by part of the spread that epsilon
1e-5 then magnifies 300 times; seed 121292869: a Selu of values near -1e-4,
whose exp(x) - 1 ONNX Runtime computes with a relative error of 5e-4). Nothing is explained at an op without a
reference, where ours is not the closer, or when our unfused plan does not
show the mismatch itself."""
import os
import shutil

import numpy as np
import onnx
from onnx import numpy_helper

from .runner import max_rel

BIRTH = 10.0
FLOOR = 1e-6


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _instance_norm(node, x, scale, bias):
    axes = tuple(range(2, x.ndim))
    mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    shape = [1, -1] + [1] * (x.ndim - 2)
    return (x - mean) / np.sqrt(var + _attr(node, "epsilon", 1e-5)) * scale.reshape(shape) + bias.reshape(shape)


def _layer_norm(node, x, scale, bias=None):
    axis = _attr(node, "axis", -1) % x.ndim
    axes = tuple(range(axis, x.ndim))
    mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + _attr(node, "epsilon", 1e-5)) * scale
    return y if bias is None else y + bias


def _global_average_pool(node, x):
    return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)


def _reduce_mean(node, x, axes=None):
    axes = _attr(node, "axes", None) if axes is None else list(axes)
    axes = tuple(range(x.ndim)) if not axes else tuple(int(a) % x.ndim for a in axes)
    return x.mean(axis=axes, keepdims=bool(_attr(node, "keepdims", 1)))


def _elu(node, x):
    alpha = _attr(node, "alpha", 1.0)
    return np.where(x < 0, alpha * np.expm1(x), x)


def _selu(node, x):
    alpha, gamma = _attr(node, "alpha", 1.67326319217681884765625), _attr(node, "gamma", 1.05070102214813232421875)
    return gamma * np.where(x <= 0, alpha * np.expm1(x), x)


def _celu(node, x):
    alpha = _attr(node, "alpha", 1.0)
    return np.maximum(x, 0) + np.minimum(0, alpha * np.expm1(x / alpha))


# The ops recomputed in float64: sums over many elements, where the float
# summation order of a runtime shows most; and exp(x) - 1 near 0 (Elu, Selu,
# Celu, as ONNX Operators.md defines them), which a runtime computing
# exp(x) in float and subtracting 1 loses to cancellation.
# Ops that only carry a difference on, each side computing them right from
# its own inputs, however much they magnify it: a Sub whose operands nearly
# cancel (seed 211300722: x - Celu(x) for x near 0, where ORT's Celu is off
# by 3e-4 relative and the difference is then 100% of the result), a Mod that
# wraps. Recomputed in float64 from each side's own inputs; within FLOOR on
# both sides, such a node is no birth. Anything else there is.
def _mod(node, a, b):
    return np.fmod(a, b) if _attr(node, "fmod", 0) else np.mod(a, b)


CARRIERS = {"Add": lambda node, a, b: a + b, "Sub": lambda node, a, b: a - b, "Mul": lambda node, a, b: a * b,
            "Div": lambda node, a, b: a / b, "Neg": lambda node, a: -a, "Abs": lambda node, a: np.abs(a),
            "Mod": _mod}

EXACT = {"InstanceNormalization": _instance_norm, "LayerNormalization": _layer_norm,
         "GlobalAveragePool": _global_average_pool, "ReduceMean": _reduce_mean,
         "Elu": _elu, "Selu": _selu, "Celu": _celu}


def _typed(m):
    """Shape inference's value types of M's main graph, by name. ONNX 1.12
    leaves a Loop's outputs without a shape, and so everything after it (seed
    211300722: a Celu after a Loop, whose birth then showed at a Mod
    further on): each loop-carried output is given its initial value's type
    in M (value_info) and inference runs again."""
    def infer():
        inferred = onnx.shape_inference.infer_shapes(m)
        return {v.name: v for v in list(inferred.graph.input) + list(inferred.graph.value_info)
                + list(inferred.graph.output)}
    typed = infer()
    added = False
    for node in m.graph.node:
        if node.op_type != "Loop" or node.domain:
            continue
        for k, out in enumerate(node.output[:max(len(node.input) - 2, 0)]):
            initial = typed.get(node.input[2 + k])
            shaped = out in typed and typed[out].type.tensor_type.HasField("shape")
            if out and not shaped and initial is not None and initial.type.tensor_type.HasField("shape"):
                vi = onnx.ValueInfoProto()
                vi.CopyFrom(initial)
                vi.name = out
                m.graph.value_info.append(vi)
                added = True
    return infer() if added else typed


def _exposed(model):
    """A copy of MODEL with every float value of its main graph that shape
    inference types (_typed) as an output (after the model's own), and their names."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    typed = _typed(m)
    have = {o.name for o in m.graph.output}
    names = []
    for node in m.graph.node:
        for out in node.output:
            v = typed.get(out)
            if (not out or out in have or v is None or v.type.tensor_type.elem_type != onnx.TensorProto.FLOAT
                    or not v.type.tensor_type.HasField("shape")):
                continue
            m.graph.output.append(v)
            have.add(out)
            names.append(out)
    return m, names


def ort_rounding(runner, b, failure, model, inputs, strategy):
    """True when the mismatch FAILURE (of output failure["output"], against
    ONNX Runtime) is ONNX Runtime's rounding at the nodes it is born at, as
    above. MODEL at its INPUTS ({name: array}) is where it happened: the
    graph's own, or a session check's shape."""
    exposed, names = _exposed(model)
    folder = os.path.join(b.folder, "blame")
    for d in (folder, folder + "_out"):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    path = os.path.join(folder, "model.onnx")
    onnx.save(exposed, path)
    for i, vi in enumerate(exposed.graph.input):
        if vi.name in inputs:
            with open(os.path.join(folder, "input_%d.pb" % i), "wb") as fh:
                fh.write(numpy_helper.from_array(inputs[vi.name], vi.name).SerializeToString())
    _, arrays = runner.outputs(path, strategy, 1, False, folder, folder + "_out")
    theirs = runner.ort(path, inputs, onnx_fuse_nan=True)
    all_outputs = [o.name for o in exposed.graph.output]
    if arrays is None or len(arrays) != len(all_outputs) or not isinstance(theirs, dict):
        return False
    ours = dict(zip(all_outputs, arrays))
    if failure["output"] not in ours or failure["output"] not in theirs:
        return False
    if max_rel(theirs[failure["output"]], ours[failure["output"]])[1] < failure["max_rel"] / 2:
        return False  # our unfused plan does not show the mismatch: nothing to attribute
    constants = {t.name: numpy_helper.to_array(t) for t in exposed.graph.initializer}
    apart = {}  # value name -> mismatch between the two sides
    births = 0
    for node in exposed.graph.node:
        outs = [o for o in node.output if o in ours and o in theirs]
        if not outs:
            continue
        carried = max([apart.get(i, 0.0) for i in node.input if i] + [0.0])
        for o in outs:
            apart[o] = max_rel(theirs[o], ours[o])[1]
        born = [o for o in outs if apart[o] > max(FLOOR, BIRTH * carried)]
        if not born:
            continue
        exact = EXACT.get(node.op_type) if not node.domain else None
        carrier = CARRIERS.get(node.op_type) if not node.domain else None
        if (exact is None and carrier is None) or len(node.output) != 1:
            return False

        def side(values):
            args = []
            for i in node.input:
                if not i:
                    args.append(None)
                elif i in values:
                    args.append(np.asarray(values[i], np.float64))
                elif i in constants:
                    args.append(constants[i].astype(np.float64))
                elif i in inputs:
                    args.append(np.asarray(inputs[i], np.float64))
                else:
                    return None
            return args

        mine, peer = side(ours), side(theirs)
        if mine is None or peer is None:
            return False
        o = node.output[0]
        reference = exact or carrier
        ours_off = max_rel(reference(node, *mine), ours[o])[1]
        theirs_off = max_rel(reference(node, *peer), theirs[o])[1]
        if carrier is not None:
            if ours_off <= FLOOR and theirs_off <= FLOOR:
                continue  # each side right from its own inputs: their difference, carried and magnified
            return False
        births += 1
        if not theirs_off >= BIRTH * max(ours_off, FLOOR / BIRTH):
            return False
    return births > 0
