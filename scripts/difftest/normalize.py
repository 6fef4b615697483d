"""Rendering of normalization steps: LRN, LpNormalization,
MeanVarianceNormalization and Hardmax, each keeping the incoming dims.

LpNormalization divides by a norm that is 0 on an all-zero line (Relu can
make one): its input is moved away from 0 first (elementwise.positive).
MeanVarianceNormalization reduces only axes holding at least 4 elements
together: the variance of one or two values is rounding noise, normalized;
its input gets a ramp along those axes, so that no group is constant (ORT
gives NaN there, the spec 0).
Hardmax is a threshold (a near tie moves its 1): trial.keep_real judges.
"""
import numpy as np

from .elementwise import positive
from .graph import V, Skip


def lrn(g, st, v, rng):
    if v.rank != 4:
        raise Skip()
    attrs = {"size": st.get("size", 3), "alpha": st.get("alpha", 1e-4), "beta": st.get("beta", 0.75),
             "bias": st.get("bias", 1.0)}
    return V(g.node("LRN", [v.name], attrs), v.dims, v.mag)


def lp_norm(g, st, v, rng):
    if not v.rank:
        raise Skip()
    axis = st.get("axis", -1) % v.rank
    x = positive(g, v, rng) if v.lo is None or v.lo <= 0 else v
    if st.get("sign"):     # both signs, |x| >= 0.25 still
        x = V(g.node("Mul", [x.name, g.const(rng.choice([-1.0, 1.0], v.dims[-1:]))]), x.dims, x.mag)
    y = g.node("LpNormalization", [x.name], {"axis": axis, "p": st.get("p", 2)})
    return V(y, v.dims, 1.0)


def mvn(g, st, v, rng):
    if v.rank < 2:
        raise Skip()
    axes = {"spatial": list(range(2, v.rank)), "nchw": [0] + list(range(2, v.rank)),
            "last": [v.rank - 1], "chan": [1]}[st.get("axes", "spatial")]
    if not axes or int(np.prod([v.dims[a] for a in axes])) < 4:
        raise Skip()
    # A ramp along the reduced axes first, so that no group is constant: on a
    # constant group ONNX's function body gives 0 (its 1e-9 keeps the division
    # finite), as onnx-fuse does, and ORT 1.30's kernel NaN (seed 30112920: a
    # row of a MatMul zeroed by Where).
    shape = [v.dims[a] if a in axes else 1 for a in range(v.rank)]
    ramp = g.const(np.linspace(0.25, 1.0, int(np.prod(shape))).reshape(shape))
    y = g.node("MeanVarianceNormalization", [g.node("Add", [v.name, ramp])], {"axes": axes})
    return V(y, v.dims, 4.0)


def hardmax(g, st, v, rng):
    if not v.rank:
        raise Skip()
    axis = st.get("axis", -1) % v.rank
    h = g.node("Hardmax", [v.name], {"axis": axis})
    y = g.node("Add", [v.name, g.node("Mul", [h, g.const(np.array(st.get("w", 0.5)))])])
    return V(y, v.dims, v.mag + 0.5)


RENDER = {"lrn": lrn, "lp_norm": lp_norm, "mvn": mvn, "hardmax": hardmax}
