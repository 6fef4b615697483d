"""The graph under construction while a recipe is rendered: values with their
shapes and rough magnitudes, nodes, initializers, and text output.

A value carries `mag` (a typical |x|) and `lo` (a known lower bound when the
value is known positive, else None). They are estimates, not proofs: they only
steer the renderer into keeping Exp/Pow inputs bounded and Sqrt/Log/Div inputs
away from zero, so that float reassociation in fused kernels stays far below
the 1e-4 tolerance and a mismatch means a bug, not rounding.
"""
import math

import numpy as np


class Skip(Exception):
    """A step that does not apply to the current value (wrong rank, too small):
    the renderer rolls back its nodes and goes on. This is what keeps every
    recipe valid after the shrinker drops or shrinks parts of it."""


class V:
    """A value: `dtype` is its ONNX element type in the text syntax (float,
    int64, int32, bool, float16, double); steps pass float values from one to
    the next, typed values live inside typed steps (typed.py) or leave as graph
    outputs. `exact` marks a float value every plan computes bit for bit alike
    (the input through views, Relu, Abs, Neg, MaxPool): only such values are
    rounded to float16 or truncated to integers, where a one-ulp difference
    between plans would flip the result."""
    __slots__ = ("name", "dims", "mag", "lo", "dtype", "exact")

    def __init__(self, name, dims, mag=1.0, lo=None, dtype="float", exact=False):
        self.name, self.dims, self.mag, self.lo = name, list(dims), float(mag), lo
        self.dtype, self.exact = dtype, exact

    @property
    def rank(self):
        return len(self.dims)


def fmt(x):
    """A float literal the ONNX parser reads as a float (9 significant digits)."""
    s = "%.9g" % float(x)
    if s in ("nan", "inf", "-inf"):
        raise ValueError("non-finite constant")
    return s if any(c in s for c in ".en") else s + ".0"


class Raw(str):
    """An attribute value written as is: a subgraph (If, Loop, Scan bodies)."""


class Graph:
    def __init__(self):
        self.inputs = []      # text of graph inputs (the activation)
        self.inits = []       # text of initializers, written in the input list
        self.nodes = []       # (op_type, text)
        self.outputs = []     # V
        self.count = 0
        self.shared = {}      # constant shape -> name, for shared constants
        self.opset = 13

    def fresh(self, prefix="v"):
        self.count += 1
        return "%s%d" % (prefix, self.count)

    def mark(self):
        return (len(self.nodes), len(self.inits), len(self.outputs), dict(self.shared), self.opset, len(self.inputs))

    def rollback(self, m):
        n, i, o, shared, opset, ni = m
        del self.nodes[n:], self.inits[i:], self.outputs[o:], self.inputs[ni:]
        self.shared, self.opset = shared, opset

    def const(self, arr, prefix="c", dtype="float"):
        arr = np.asarray(arr)
        name = self.fresh(prefix)
        shape = "" if arr.ndim == 0 else "[%s]" % ",".join(str(d) for d in arr.shape)
        if dtype in ("float", "float16", "double"):
            vals = ",".join(fmt(v) for v in arr.reshape(-1))
        else:
            vals = ",".join(str(int(v)) for v in arr.reshape(-1))
        self.inits.append("%s%s %s = {%s}" % (dtype, shape, name, vals))
        return name

    def ints(self, values):
        return self.const(np.array(values, dtype=np.int64), "k", "int64")

    def node(self, op, ins, attrs=None, nout=1):
        outs = [self.fresh() for _ in range(nout)]
        a = ""
        if attrs:
            parts = []
            for k, v in attrs.items():
                if isinstance(v, Raw):
                    parts.append("%s = %s" % (k, v))
                elif isinstance(v, float):
                    parts.append("%s = %s" % (k, fmt(v)))
                elif isinstance(v, str):
                    parts.append('%s = "%s"' % (k, v))
                elif isinstance(v, (list, tuple)) and v and isinstance(v[0], str):
                    parts.append("%s = [%s]" % (k, ", ".join('"%s"' % x for x in v)))
                elif isinstance(v, (list, tuple)) and v and isinstance(v[0], float):
                    parts.append("%s = [%s]" % (k, ", ".join(fmt(x) for x in v)))
                elif isinstance(v, (list, tuple)):
                    parts.append("%s = [%s]" % (k, ", ".join(str(int(x)) for x in v)))
                else:
                    parts.append("%s = %d" % (k, int(v)))
            a = " <%s>" % ", ".join(parts)
        self.nodes.append((op, "  %s = %s%s (%s)" % (", ".join(outs), op, a, ", ".join(ins))))
        return outs if nout > 1 else outs[0]

    def text(self, header=()):
        outs = []
        seen = {"x"}      # the graph input is never listed as an output
        for v in self.outputs:
            if v.name not in seen:
                seen.add(v.name)
                # a scalar has no brackets ("float[]" would leave the shape unknown)
                outs.append("%s%s %s" % (v.dtype, "[%s]" % ",".join(map(str, v.dims)) if v.dims else "", v.name))
        lines = ["# " + h for h in header]
        lines.append('<ir_version: 8, opset_import: ["" : %d]>' % self.opset)
        ins = ",\n    ".join(self.inputs + self.inits)
        lines.append("difftest (%s)\n  => (%s) {" % (ins, ", ".join(outs)))
        lines += [t for _, t in self.nodes]
        lines.append("}")
        return "\n".join(lines) + "\n"

    def op_types(self):
        return [op for op, _ in self.nodes]


def weights(rng, shape, fan_in):
    # Uniform with variance 1/fan_in: activations keep their magnitude layer to layer.
    return rng.uniform(-1, 1, size=shape) * math.sqrt(3.0 / max(1, fan_in))


def broadcast_ok(a, b):
    for x, y in zip(reversed(a), reversed(b)):
        if x != y and x != 1 and y != 1:
            return False
    return True


def broadcast(a, b):
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    return [max(x, y) for x, y in zip(a, b)]
