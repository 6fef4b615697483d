"""Seed -> recipe. All randomness of a graph comes from its seed (random.Random
for the structure, each step's "s" for its constant values), so graph SEED
regenerates alone: `difftest.sh --one SEED`.

A recipe is 1-3 segments; a segment is an optional view or pooling step, an
anchor (the op a fused group starts from) and a chain of 1-8 ops after it, with
forks, residuals and intermediate outputs mixed in. Weights aim at what the
backend lowers differently when fused: eltwise/binary post-ops (several of the
same algorithm), broadcast operands in every form and order, views in front of
fused ops, and the library's patterns.

Typed steps (typed.py: comparisons, masks, Where, Cast, integer arithmetic,
Gather with run-time indices, ArgMax/TopK, graph inputs of other types) are
inserted afterwards by add_typed, from an RNG of their own: the float steps of
graph SEED are the ones it had before typed steps existed, and half the
graphs have no typed step at all.
"""
import random

CHANNELS = [1, 3, 8, 16, 17, 24, 32]
SPATIAL = [1, 3, 5, 7, 9, 12, 13]
UNARY = ["Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Exp", "Abs", "Neg", "Softplus",
         "HardSigmoid", "HardSwish", "Erf", "Softsign", "Selu", "Celu"]
BINARY = ["Add", "Sub", "Mul", "Div", "Pow"]
FORMS = ["scalar", "one", "chan", "last", "full", "nobatch", "row"]


def W(r, table):
    """Weighted choice from [(item, weight), ...]."""
    items, weights = zip(*table)
    return r.choices(items, weights)[0]


def input_shape(r):
    rank = W(r, [(2, 2), (3, 2), (4, 6), (5, 1)])
    n = W(r, [(1, 3), (2, 4), (3, 2)])
    c = r.choice(CHANNELS)
    if rank == 2:
        return [n, r.choice([8, 16, 17, 32, 64])]
    if rank == 5:
        return [n, r.choice([1, 3, 8, 16])] + [r.choice([3, 5, 7]) for _ in range(3)]
    sp = r.choice(SPATIAL[1:])
    dims = [sp, sp if r.random() < 0.6 else r.choice(SPATIAL)] if rank == 4 else [r.choice(SPATIAL[1:] + [16, 24])]
    return [n, c] + dims


def step(r, op, **kw):
    kw["op"] = op
    kw["s"] = r.randrange(1 << 30)
    return kw


def anchor(r, rank):
    k = W(r, [("conv", 8 if rank >= 3 else 0), ("convT", 2 if rank >= 3 else 0),
              ("gemm", 4 if rank == 2 else 1), ("matmul", 3), ("bn", 2), ("binact", 2), ("einsum", 2)])
    if k == "einsum":
        return [step(r, "einsum", form=r.choice(["mm", "mmT", "outT", "self", "t", "sum"]), out=r.choice([8, 16, 17]))]
    if k == "conv":
        return [conv_step(r)]
    if k == "convT":
        return [step(r, "convT", out=r.choice(CHANNELS[1:]), k=r.choice([1, 2, 3]),
                     stride=r.choice([1, 2]), pad=r.choice([0, 0, 1]), bias=r.random() < 0.6,
                     bn=r.random() < 0.3, group=r.choice(["1", "1", "dw"]), opad=r.choice([0, 0, 1]),
                     rtw=r.random() < 0.2, rtb=r.random() < 0.2)]
    if k == "gemm":
        return [step(r, "gemm", out=r.choice([8, 16, 17, 32]), transB=r.randrange(2),
                     transA=int(r.random() < 0.15), c=r.choice(["none", "vec", "vec", "one", "full", "col", "scalar"]),
                     alpha=r.choice([1.0, 1.0, 0.5]), beta=r.choice([1.0, 1.0, 2.0]),
                     rtw=r.random() < 0.3, rtc=r.random() < 0.3)]
    if k == "matmul":
        if r.random() < 0.2:
            return [step(r, "matmul", act=1)]
        return [step(r, "matmul", out=r.choice([8, 16, 17, 24]), form=r.choice(["2d", "batched", "bcast", "vec"]),
                     bias=r.random() < 0.5, bias_first=r.random() < 0.5, rt=r.random() < 0.3)]
    if k == "bn":
        return [step(r, "bn", eps=r.choice([None, 1e-3]))]
    # A chain started by a binary op on an activation: x op f(x).
    return [fork_step(r, [[], [unary_step(r)]], r.choice(["add", "mul", "sub"]))]


def conv_step(r, **over):
    kw = dict(out=r.choice(CHANNELS), k=W(r, [(1, 4), (3, 5), (5, 1)]), stride=W(r, [(1, 4), (2, 2)]),
              pad=r.choice([0, 1, 1]), asym=int(r.random() < 0.1), dil=W(r, [(1, 5), (2, 1)]),
              group=W(r, [("1", 6), ("dw", 3), ("g", 1)]), mult=r.choice([1, 1, 2]),
              bias=r.random() < 0.6, bn=r.random() < 0.35, rtw=r.random() < 0.12, rtb=r.random() < 0.12)
    kw.update(over)
    return step(r, "conv", **kw)


def unary_step(r):
    f = r.choice(UNARY)
    kw = {}
    if f in ("LeakyRelu", "Elu", "Celu") and r.random() < 0.7:
        kw["alpha"] = r.choice([0.01, 0.1, 0.2, 1.5])
    if f == "HardSigmoid" and r.random() < 0.6:
        kw["alpha"], kw["beta"] = r.choice([(1 / 6, 0.5), (0.2, 0.5), (0.25, 0.4)])
    return step(r, "unary", f=f, **kw)


def bin_step(r, f=None, form=None):
    f = f or W(r, [("Add", 4), ("Sub", 2), ("Mul", 4), ("Div", 2), ("Pow", 1), ("Max", 1), ("Min", 1)])
    # "both": the constant and v both broadcast (no operand of the output's dims).
    kw = dict(f=f, form=form or r.choice(FORMS + ["both"]), first=r.random() < 0.3, share=r.random() < 0.15)
    if f == "Pow":
        # first: a constant base, the exponent computed at run time (base^x, x bounded).
        kw["exp"] = r.choice([2.0, 3.0, 0.5, 1.5])
        kw["form"] = r.choice(["scalar", "one"]) if not kw["first"] else kw["form"]
    return step(r, "bin", **kw)


def chain_op(r, rank):
    k = W(r, [("unary", 10), ("bin", 12), ("clip", 2), ("domain", 2), ("swish", 2), ("hswish", 2),
              ("gelu", 1), ("output", 1), ("prelu", 1), ("bin_in", 2)])
    if k == "bin_in":
        return step(r, k, f=r.choice(["Add", "Add", "Mul", "Mul", "Sub", "Div"]), first=r.random() < 0.3,
                    form=r.choice(["full", "chan", "scalar", "one", "last", "nobatch", "row"]))
    if k == "prelu":
        return step(r, k, form=r.choice(["chan", "chan", "one", "full"]))
    if k == "unary":
        return unary_step(r)
    if k == "bin":
        return bin_step(r)
    if k == "clip":
        lo, hi = r.choice([(0.0, 6.0), (-0.5, 0.5), (0.0, 1.0), (None, 0.8), (-0.3, None)])
        return step(r, "clip", min=lo, max=hi)
    if k == "domain":
        return step(r, "domain", f=r.choice(["Sqrt", "Log", "Reciprocal"]))
    if k in ("swish", "hswish", "gelu"):
        return step(r, k, swap=int(r.random() < 0.3))
    return step(r, "output")


def mid_op(r, rank):
    """Structure between chains: views, pooling, normalization, SE blocks."""
    k = W(r, [("reshape", 2), ("flatten", 1), ("transpose", 2), ("unsqueeze", 1), ("squeeze", 1),
              ("slice", 2), ("split", 1), ("pool", 3 if rank >= 3 else 0), ("softmax", 1),
              ("reduce", 1), ("ln_dec", 1), ("ln", 1), ("se", 2 if rank == 4 else 0), ("pad", 1),
              ("inorm", 1 if rank >= 3 else 0), ("identity", 1)])
    if k == "pad":
        return step(r, k, before=r.choice([0, 1, 2]), after=r.choice([0, 1]), value=r.choice([None, 0.5]))
    if k == "inorm":
        return step(r, k)
    if k == "identity":
        return step(r, k, f=r.choice(["Identity", "Dropout"]))
    if k == "reshape":
        return step(r, k, mode=r.choice(["flat2", "merge", "split", "unmerge"]))
    if k == "flatten":
        return step(r, k, axis=r.choice([1, 1, 2]))
    if k == "transpose":
        return step(r, k, mode=r.choice(["last2", "nhwc", "nchw", "rand"]))
    if k == "unsqueeze":
        return step(r, k, axis=r.choice([0, 1, 2, 4]))
    if k == "squeeze":
        return step(r, k, last=r.randrange(2))
    if k == "slice":
        return step(r, k, axis=r.choice([1, 2, -1]), step=r.choice([1, 1, 2, 3, -1, -2]),
                    start=r.choice([0.0, 0.0, 0.2]), end=r.choice([1.0, 1.0, 0.8]))
    if k == "split":
        return step(r, k, axis=r.choice([1, -1]), parts=r.choice([2, 2, 3]), uneven=r.randrange(2),
                    join=r.choice(["concat", "outputs"]))
    if k == "pool":
        f = W(r, [("MaxPool", 3), ("AveragePool", 2), ("GlobalAveragePool", 2)])
        return step(r, k, f=f, k=r.choice([2, 3]), stride=r.choice([1, 2]), pad=r.choice([0, 0, 1]),
                    cip=r.randrange(2))
    if k == "softmax":
        return step(r, k, axis=r.choice([-1, 1]), f=r.choice(["Softmax", "Softmax", "LogSoftmax"]))
    if k == "reduce":
        return step(r, k, spatial=r.randrange(2), keepdims=r.choice([1, 1, 0]))
    if k == "ln_dec":
        return step(r, k, posaxis=r.randrange(2), eps=r.choice([1e-5, 1e-6, 1e-3]))
    if k == "ln":
        return step(r, k, two=int(r.random() < 0.2), bias=r.random() < 0.8)
    return step(r, "se", act=r.choice(["Relu", "Relu", "swish", "HardSwish"]),
                gate=r.choice(["Sigmoid", "Sigmoid", "HardSigmoid"]))


def fork_step(r, branches, join):
    return {"op": "fork", "branches": branches, "join": join, "axis": r.choice([1, 1, -1])}


def branch(r, rank, depth):
    """A short sub-chain for a fork branch: mostly shape-preserving."""
    n = W(r, [(0, 2), (1, 4), (2, 3), (3, 1)])
    out = []
    for _ in range(n):
        k = W(r, [("chain", 6), ("conv", 2 if rank >= 3 else 0), ("fork", 1 if depth < 1 else 0),
                  ("reduce", 1)])
        if k == "reduce":     # a branch that broadcasts back at the join
            out.append(step(r, "pool", f="GlobalAveragePool") if rank >= 3 and r.random() < 0.5 else
                       step(r, "reduce", spatial=r.randrange(2), keepdims=1))
        elif k == "conv":
            out.append(conv_step(r, k=r.choice([1, 3]), stride=1, dil=1, asym=0, pad=None,
                                 group=r.choice(["1", "dw"]), mult=1,
                                 out=None if r.random() < 0.7 else r.choice(CHANNELS)))
            out[-1]["pad"] = out[-1]["k"] // 2
        elif k == "fork":
            out.append(fork_step(r, [[], branch(r, rank, depth + 1)], "add"))
        else:
            out.append(chain_op(r, rank))
    return out


def chain(r, rank, n):
    out = []
    for _ in range(n):
        k = W(r, [("op", 10), ("fork", 2), ("residual", 2), ("mid", 2)])
        if k == "op":
            out.append(chain_op(r, rank))
        elif k == "mid":      # a view or pooling inside a chain: fused groups around views
            out.append(mid_op(r, rank))
        elif k == "residual":
            out.append(fork_step(r, [[], branch(r, rank, 0)], r.choice(["add", "add", "mul", "sub", "div"])))
        else:
            nb = r.choice([2, 2, 3])
            join = W(r, [("add", 3), ("mul", 1), ("sub", 1), ("div", 1), ("concat", 3), ("outputs", 1),
                         ("sum", 1), ("max", 1)])
            out.append(fork_step(r, [branch(r, rank, 0) for _ in range(nb)], join))
    return out


def pattern_block(r):
    """Literal shapes of the pattern library, so patterns match often."""
    k = r.choice(["pwdw", "conv_bn_act", "residual", "mul_add", "linear"])
    if k == "linear":     # MatMulAddGelu, MatMulAddAdd (a residual Linear)
        if r.random() < 0.5:
            return [step(r, "matmul", out=r.choice([8, 16, 17]), bias=True, bias_first=r.randrange(2)),
                    step(r, "gelu", swap=r.randrange(2))]
        return [fork_step(r, [[], [step(r, "matmul", out=None, bias=True, bias_first=r.randrange(2))]], "add")]
    if k == "pwdw":
        act = r.choice(["Relu", "clip", "hswish", "swish", "HardSwish"])
        def a():
            return step(r, "clip", min=0.0, max=6.0) if act == "clip" else (
                step(r, act) if act in ("hswish", "swish") else step(r, "unary", f=act))
        return [conv_step(r, k=1, stride=1, group="1", bn=True, dil=1, asym=0, pad=0), a(),
                conv_step(r, k=3, stride=r.choice([1, 2]), group="dw", mult=1, bn=True, dil=1, asym=0, pad=1), a()]
    if k == "conv_bn_act":
        return [conv_step(r, bn=True), r.choice([unary_step(r), step(r, "swish"), step(r, "hswish"),
                                                 step(r, "unary", f="HardSwish"), step(r, "clip", min=0.0, max=6.0)])]
    if k == "residual":     # ConvBnAddRelu, ConvBnAdd, ConvAddRelu
        body = [conv_step(r, k=3, pad=1, stride=1, dil=1, asym=0, group="1", out=None, bn=r.random() < 0.7)]
        body[0]["same"] = 1
        return [fork_step(r, [[], body], "add")] + ([step(r, "unary", f="Relu")] if r.random() < 0.7 else [])
    # Conv -> Mul(const) -> Add(const): two post-ops of the same algorithm.
    return [conv_step(r), bin_step(r, "Mul"), bin_step(r, "Add")]


def typed_step(r):
    """One typed step (typed.py); its constants come from its "s"."""
    k = W(r, [("mask", 5), ("intmix", 5), ("gather", 3), ("topk", 2), ("cast", 3), ("typed_in", 3)])
    if k == "mask":
        return step(r, k, cmp=r.choice(["Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Equal"]),
                    form=r.choice(["scalar", "scalar", "chan", "last"]),
                    logic=W(r, [("none", 3), ("Not", 1), ("And", 1), ("Or", 1), ("Xor", 1)]),
                    cmp2=r.choice(["Less", "Greater", "GreaterOrEqual"]), with_input=int(r.random() < 0.3),
                    bform=r.choice(["full", "chan", "scalar", "last"]), other=r.choice(["const", "neg", "zero", "half"]),
                    swap=int(r.random() < 0.3), tout=int(r.random() < 0.3))
    if k == "intmix":
        ops = [W(r, [("Add", 3), ("Sub", 2), ("Mul", 2), ("Div", 2), ("Neg", 1), ("Abs", 1), ("Min", 1),
                     ("Max", 1), ("Mod", 1), ("Equal", 1), ("Cast", 1)]) for _ in range(W(r, [(0, 1), (1, 3), (2, 3), (3, 2)]))]
        return step(r, k, itype=r.choice(["int64", "int64", "int32"]),
                    src=W(r, [("input", 3), ("mask", 2), ("cast", 2), ("argmax", 2)]),
                    argf=r.choice(["ArgMax", "ArgMin"]), form=r.choice(FORMS), ops=ops,
                    cform=r.choice(["scalar", "one", "last", "full"]),
                    reduce=W(r, [(None, 3), ("ReduceSum", 1), ("ReduceMax", 1)]),
                    restore=r.choice(["expand", "tile", "none"]), back=W(r, [("add", 3), ("where", 1)]),
                    tout=int(r.random() < 0.4))
    if k == "gather":
        return step(r, k, axis=r.choice([1, -1, -1, 2, 0]),
                    idx=W(r, [("input", 3), ("neg", 1), ("flip", 1), ("clamp", 2), ("bool", 1), ("i32", 1),
                              ("elements", 2)]))
    if k == "topk":
        return step(r, k, k=r.choice([1, 2, 3, 5]), largest=r.choice([1, 1, 0]), tout=int(r.random() < 0.5))
    if k == "cast":
        return step(r, k, to=W(r, [("float16", 3), ("double", 2), ("int32", 2), ("int64", 2), ("bool", 1)]),
                    tout=int(r.random() < 0.4))
    return step(r, "typed_in", itype=W(r, [("float16", 2), ("double", 2), ("int64", 2), ("int32", 2), ("bool", 3),
                                           ("int8", 1), ("uint8", 1)]),
                form=r.choice(FORMS), join=r.choice(["add", "mul"]))


def _branch_lists(steps):
    for st in steps:
        if st.get("op") == "fork":
            for b in st["branches"]:
                yield b
                yield from _branch_lists(b)


def add_typed(recipe, seed):
    """Inserts 1-4 typed steps into half the recipes: mostly into the main
    chain, some into fork branches; a cast step half the time first, where the
    value is still the exact input."""
    r = random.Random(seed * 104729 + 23)
    if r.random() < 0.5:
        return recipe
    branches = list(_branch_lists(recipe["steps"]))
    for _ in range(W(r, [(1, 4), (2, 3), (3, 2), (4, 1)])):
        st = typed_step(r)
        target = r.choice(branches) if branches and r.random() < 0.25 else recipe["steps"]
        pos = 0 if st["op"] == "cast" and r.random() < 0.5 else r.randrange(len(target) + 1)
        target.insert(pos, st)
    return recipe


def inverted_residual_recipe(seed):
    """For one seed in 25: a chain of one to three inverted residual blocks
    (anchors.inverted_residual; one in three with squeeze-and-excitation) on a map of 24 to 64 pixels a side, their
    expanded tensors mostly larger than a core's L2 (the size at which the
    backend runs a block depth-first, backend/lower/fused/inverted_residual.h),
    then a short chain; None for the others. Its own RNG: the other recipes of
    every seed are as they were."""
    r = random.Random(seed * 7919 + 41)
    if r.random() >= 0.04:
        return None
    side = r.choice([24, 33, 40, 48, 56, 64])
    dims = [1, r.choice([8, 16, 17, 24, 32]), side, r.choice([side, side, side - 3])]
    act = r.choice(["Relu", "clip", "HardSwish", "hsig", "swish"])
    steps = []
    for _ in range(W(r, [(1, 3), (2, 2), (3, 1)])):
        stride = W(r, [(1, 3), (2, 1)])
        steps.append(step(r, "ir", e=r.choice([48, 96, 144, 192, 200, 240]), k=W(r, [(3, 4), (5, 1)]), stride=stride,
                          res=r.random() < 0.7, out=r.choice([16, 24, 31, 40]), act=act, bias=r.random() < 0.3,
                          se=W(r, [(None, 4), ("Sigmoid", 1), ("HardSigmoid", 1)])))
    steps += chain(r, 4, W(r, [(0, 2), (1, 2), (2, 1)]))
    return {"seed": seed, "input": dims, "steps": steps}


def make_recipe(seed):
    r = random.Random(seed)
    dims = input_shape(r)
    steps = []
    for _ in range(W(r, [(1, 4), (2, 4), (3, 2)])):
        rank = len(dims)  # the rank at generation time; rendering adapts anyway
        if r.random() < 0.5:
            steps.append(mid_op(r, rank))
        if r.random() < 0.25 and rank == 4:
            steps += pattern_block(r)
        else:
            steps += anchor(r, rank)
        steps += chain(r, rank, W(r, [(1, 3), (2, 3), (3, 2), (4, 2), (6, 1), (8, 1)]))
        if r.random() < 0.2:
            steps.append(step(r, "output"))
    from .generator_ops import add_ops      # it draws with this module's helpers
    from .quantized import add_quantized
    recipe = add_typed({"seed": seed, "input": dims, "steps": steps}, seed)
    # A quantized recipe gets no op steps: those make shapes follow values, and a model
    # run in stages is checked at 1e-4 relative, without the quantization rule (cli.md).
    return inverted_residual_recipe(seed) or add_quantized(recipe, seed) or add_ops(recipe, seed)
