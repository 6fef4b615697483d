"""Draws of the op steps of `run` (recurrent.py, sampling.py,
indexing.py, normalize.py, arith.py, shaping.py, control_flow.py).

add_ops inserts 1-3 of them into 60% of the recipes, from an RNG of its own
(as generator.add_typed does): the float and typed steps of graph SEED stay
the ones they were, and the new steps sit inside random chains, in fork
branches, and inside If branches and Loop/Scan bodies, whose sub-steps are
ordinary chain ops and, now and then, another of these steps.
"""
import random

from .generator import W, _branch_lists, chain_op, step

# Steps whose result keeps the incoming dims: what If, Loop and Scan bodies may hold.
SAME_DIMS = ("cumsum", "fmod", "hardmax", "lp_norm", "mvn", "lrn", "one_hot", "scatter_nd", "scatter_el",
             "gather_nd", "arg", "expand", "range", "cos", "trilu", "nonzero", "unique")


def op_step(r, rank, depth=0, same_dims=False):
    k = W(r, [("rnn", 6), ("resize", 3), ("grid_sample", 2), ("maxpool_idx", 2), ("scatter_nd", 2),
              ("scatter_el", 2), ("one_hot", 2), ("gather_el", 2), ("gather_nd", 2), ("sort", 2), ("arg", 2),
              ("cumsum", 2), ("trilu", 1), ("fmod", 1), ("pow_rt", 2), ("einsum_x", 2), ("hardmax", 1),
              ("lrn", 1), ("lp_norm", 1), ("mvn", 1), ("tile", 1), ("expand", 2), ("range", 1), ("cos", 1),
              ("nonzero", 2), ("unique", 2),
              ("if", 4 if depth < 1 else 0), ("loop", 3 if depth < 1 else 0), ("scan", 2 if depth < 1 else 0)])
    if same_dims and k not in SAME_DIMS:
        k = r.choice(SAME_DIMS)
    axis = r.choice([0, 1, -1, -1, 2])
    if k == "rnn":
        cell = W(r, [("LSTM", 3), ("GRU", 3), ("RNN", 2)])
        return step(r, k, cell=cell, dir=W(r, [("forward", 2), ("reverse", 1), ("bidirectional", 2)]),
                    hidden=r.choice([1, 3, 8, 16, 32]), init=int(r.random() < 0.5), bias=int(r.random() < 0.6),
                    seqlens=int(r.random() < 0.2), layout=int(r.random() < 0.1), lbr=int(r.random() < 0.5),
                    act=W(r, [("Tanh", 3), ("Relu", 1), ("Sigmoid", 1)]),
                    pick=W(r, [("Y", 3), ("Yflat", 2), ("Yh", 2), ("Yc", 1)]), tout=int(r.random() < 0.3))
    if k == "resize":
        return step(r, k, mode=r.choice(["nearest", "linear"]), sc=r.randrange(6), aniso=int(r.random() < 0.3),
                    sizes=int(r.random() < 0.3), nm=r.choice(["round_prefer_floor", "round_prefer_ceil", "floor",
                                                             "ceil"]),
                    ct=r.choice(["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]))
    if k == "grid_sample":
        return step(r, k, ho=r.choice([1, 3, 5, 8]), wo=r.choice([2, 4, 7]), rt=int(r.random() < 0.4),
                    mode=r.choice(["bilinear", "bilinear", "nearest"]), padm=r.choice(["zeros", "border", "reflection"]),
                    ac=int(r.random() < 0.5))
    if k == "maxpool_idx":
        return step(r, k, k=r.choice([2, 3]), stride=r.choice([1, 2]), pad=r.choice([0, 0, 1]),
                    ceil=int(r.random() < 0.3), order=int(r.random() < 0.3))
    if k == "scatter_nd":
        return step(r, k, kd=r.choice([1, 1, 2]), m=r.choice([1, 2, 3]), rt=int(r.random() < 0.4),
                    red=W(r, [("none", 3), ("add", 1), ("mul", 1)]))
    if k == "scatter_el":
        return step(r, k, axis=axis, k=r.choice([1, 2, 3]), neg=int(r.random() < 0.3), rt=int(r.random() < 0.4),
                    red=W(r, [("none", 3), ("add", 1), ("mul", 1)]))
    if k == "one_hot":
        return step(r, k, axis=axis, src=r.choice(["argmax", "input"]), argf=r.choice(["ArgMax", "ArgMin"]),
                    neg=int(r.random() < 0.3), itype=r.choice(["int64", "int32"]), off=r.choice([0.0, -0.5]),
                    dtype=r.choice(["int64", "int64", "float", "int32"]))
    if k == "gather_el":
        return step(r, k, axis=axis, full=int(r.random() < 0.6), neg=int(r.random() < 0.3))
    if k == "gather_nd":
        return step(r, k, form=r.choice(["rows", "pairs", "batch"]), rt=int(r.random() < 0.4))
    if k == "sort":
        return step(r, k, axis=axis, largest=r.choice([1, 0]), full=int(r.random() < 0.7))
    if k == "arg":
        return step(r, k, axis=axis, f=r.choice(["ArgMax", "ArgMin"]), keepdims=r.choice([1, 0]),
                    last=int(r.random() < 0.3))
    if k == "cumsum":
        return step(r, k, axis=axis, exclusive=int(r.random() < 0.4), reverse=int(r.random() < 0.4),
                    pos=r.choice([1, 0]), atype=r.choice(["int64", "int32"]))
    if k == "trilu":
        return step(r, k, upper=r.choice([0, 1]), diag=r.choice([None, 0, 1, -1, 2]))
    if k == "fmod":
        return step(r, k, form=r.choice(["scalar", "chan", "last"]))
    if k == "pow_rt":
        return step(r, k, src=r.choice(["input", "self"]), form=r.choice(["full", "scalar", "chan", "last"]),
                    swap=int(r.random() < 0.3))
    if k == "einsum_x":
        return step(r, k, form=r.choice(["square", "sum", "perm", "diag", "outer", "bilinear"]), n=r.choice([2, 3]))
    if k == "hardmax":
        return step(r, k, axis=axis, w=r.choice([0.5, 1.0]))
    if k == "lrn":
        return step(r, k, size=r.choice([1, 3, 5]), alpha=r.choice([1e-4, 0.01, 0.5]), beta=r.choice([0.75, 0.5]),
                    bias=r.choice([1.0, 2.0]))
    if k == "lp_norm":
        return step(r, k, axis=axis, p=r.choice([1, 2]), sign=int(r.random() < 0.5))
    if k == "mvn":
        return step(r, k, axes=r.choice(["spatial", "nchw", "last", "chan"]))
    if k == "tile":
        return step(r, k, axis=axis, times=r.choice([2, 3]), two=int(r.random() < 0.3))
    if k == "expand":
        return step(r, k, axis=axis, shape_of=int(r.random() < 0.5), lead=int(r.random() < 0.3),
                    sub=int(r.random() < 0.3))
    if k == "range":
        return step(r, k, int=int(r.random() < 0.5), shape_of=int(r.random() < 0.5),
                    start=r.choice([-0.5, 0.0, 1.0]), delta=r.choice([0.25, -0.125, 0.5]))
    if k == "nonzero":
        return step(r, k, t=r.choice([0.0, 0.5, 2.0]))
    if k == "unique":
        return step(r, k, sorted=int(r.random() < 0.5))
    if k == "cos":
        return step(r, k, int=int(r.random() < 0.3), shape_of=int(r.random() < 0.5), value=r.choice([0.5, -1.0, 2.0]))
    body = [sub_steps(r, rank, depth + 1)]
    if k == "if":
        return step(r, k, cond=W(r, [("const", 2), ("input", 2), ("computed", 1)]), value=r.choice([0, 1]),
                    t=r.choice([0.0, 0.25, 0.5]), grow=int(r.random() < 0.4),
                    branches=body + [sub_steps(r, rank, depth + 1)])
    if k == "loop":
        return step(r, k, trips=r.choice([1, 2, 3, 4]), rt_trips=int(r.random() < 0.3), outer=int(r.random() < 0.4),
                    iter=int(r.random() < 0.5),
                    scan=int(r.random() < 0.4), ret_scan=int(r.random() < 0.3), cin=int(r.random() < 0.5),
                    branches=body)
    return step(r, "scan", axis=r.choice([0, 1, -1]), reverse=int(r.random() < 0.4), init=int(r.random() < 0.5),
                tout=int(r.random() < 0.4), branches=body)


def sub_steps(r, rank, depth):
    """An If branch or loop body: 0-3 chain ops, sometimes one of the steps above."""
    out = [chain_op(r, rank) for _ in range(W(r, [(0, 1), (1, 3), (2, 3), (3, 1)]))]
    if r.random() < 0.3:
        out.insert(r.randrange(len(out) + 1), op_step(r, rank, depth, same_dims=True))
    return [s for s in out if s["op"] != "output"]


def add_ops(recipe, seed):
    r = random.Random(seed * 7477 + 29)
    if r.random() < 0.4:
        return recipe
    rank = len(recipe["input"])
    branches = list(_branch_lists(recipe["steps"]))
    for _ in range(W(r, [(1, 5), (2, 3), (3, 2)])):
        st = op_step(r, rank)
        target = r.choice(branches) if branches and r.random() < 0.2 else recipe["steps"]
        target.insert(r.randrange(len(target) + 1), st)
    return recipe
