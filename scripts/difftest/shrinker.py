"""Delta debugging on the recipe (not on the ONNX graph: every candidate the
shrinker builds renders to a valid graph, since the renderer skips steps that no
longer fit). Three passes, each kept only while the SAME kind of failure
persists (runner.key): drop steps and unwrap forks; shrink shapes (batch,
channels, spatial sizes, rank, output channels); simplify constants (full
tensor -> per-channel -> scalar, values -> round numbers, no bias, no BN).
Bounded in time: a failure that is slow to shrink is saved as far as it got."""
import copy
import time

from .trial import reproduce

# step field -> simpler values to try, in order
SIMPLER = {
    "form": ["scalar", "one", "last", "chan"],
    "round": [1.0, 2.0, 0.5, -1.0],
    "bias": [False], "bn": [False], "share": [False], "first": [False], "swap": [0],
    "k": [1, 3], "stride": [1], "dil": [1], "pad": [0], "asym": [0], "opad": [0],
    "group": ["1"], "mult": [1], "transA": [0], "transB": [0], "c": ["none", "scalar"],
    "alpha": [1.0], "beta": [1.0], "out": [1, 2, 3, 4, 8], "parts": [2],
    "join": ["add", "outputs"], "exp": [2.0], "eps": [None], "keepdims": [1], "round_w": [1],
    # typed steps (typed.py)
    "logic": ["none"], "with_input": [0], "tout": [0], "reduce": [None], "cform": ["scalar"], "ops": [],
    "src": ["input", "mask"], "other": ["zero"], "itype": ["int64"], "idx": ["input", "clamp"],
    # the op steps of generator_ops.py
    "hidden": [1, 3], "dir": ["forward"], "init": [0], "seqlens": [0], "layout": [0], "lbr": [0], "act": ["Tanh"],
    "ceil": [0], "order": [0], "rt": [0], "red": ["none"], "neg": [0], "aniso": [0], "sizes": [0], "sc": [0],
    "exclusive": [0], "reverse": [0], "trips": [1, 2], "iter": [0], "outer": [0], "scan": [0], "cin": [0], "padm": ["zeros"], "diag": [None], "pick": ["Y"],
    "two": [0], "shape_of": [0], "lead": [0], "m": [1], "kd": [1],
    # quantized steps (quantized.py)
    "qw": [7], "wzcol": [0],     # and "order" 0 (above): the joint scale
}
# Simpler stand-ins for whole steps, tried in order: fewer distinct graphs for
# one bug (the signature dedups by op sequence), and cases that read by hand.
REPLACE = [{"op": "unary", "f": "Relu"}, {"op": "unary", "f": "Neg"}, {"op": "bin", "f": "Add", "form": "scalar"},
           {"op": "bin", "f": "Mul", "form": "scalar"}]
COMPOSITE = {"domain", "swish", "hswish", "gelu", "se", "ln_dec", "ln", "clip", "unary", "bin", "bin_in", "prelu",
             "mask", "intmix", "gather", "topk", "cast", "typed_in",
             "rnn", "resize", "grid_sample", "maxpool_idx", "scatter_nd", "scatter_el", "one_hot", "gather_el",
             "gather_nd", "sort", "arg", "cumsum", "trilu", "fmod", "pow_rt", "einsum_x", "hardmax", "lrn", "lp_norm",
             "mvn", "tile", "expand", "range", "cos", "if", "loop", "scan", "nonzero", "unique"}
FORM_ORDER = ["scalar", "one", "last", "chan", "row", "nobatch", "full", "both"]


def _lists(steps, path=()):
    """Every step list in the recipe (top level and fork branches), by path."""
    yield path
    for i, st in enumerate(steps):
        if "branches" in st:      # forks, If branches, Loop and Scan bodies
            for bi, br in enumerate(st["branches"]):
                yield from _lists(br, path + ((i, bi),))


def _get(recipe, path):
    steps = recipe["steps"]
    for i, bi in path:
        steps = steps[i]["branches"][bi]
    return steps


def _all_steps(steps):
    for st in steps:
        yield st
        for br in st.get("branches", []):
            yield from _all_steps(br)


def _step_count(recipe):
    return sum(1 for _ in _all_steps(recipe["steps"]))


def _step_at(recipe, idx):
    """The idx-th step in _all_steps' order: the same step in a deep copy of the recipe."""
    return list(_all_steps(recipe["steps"]))[idx]


def _simpler(field, cur):
    cands = SIMPLER.get(field, [])
    if field == "form":
        if cur not in FORM_ORDER:
            return []
        return [f for f in FORM_ORDER[:FORM_ORDER.index(cur)]]
    if field == "out":
        return [c for c in cands if cur is not None and c < cur]
    if field == "k":
        return [c for c in cands if c < cur]
    if field == "ops":      # one integer op fewer
        return [cur[:i] + cur[i + 1:] for i in range(len(cur or []))]
    if field in ("hidden", "trips", "m"):
        return [c for c in cands if cur is not None and c < cur]
    # Only values simpler than the current one (earlier in the list): two
    # values that both keep the failure would otherwise alternate forever.
    return [c for c in cands[:cands.index(cur)]] if cur in cands else list(cands)


class Shrinker:
    def __init__(self, runner, failure, folder, budget=60.0):
        self.runner, self.failure, self.folder = runner, failure, folder
        self.deadline = time.time() + budget
        self.tries = 0

    def test(self, cand):
        if time.time() > self.deadline:
            return False
        self.tries += 1
        f = reproduce(self.runner, cand, self.failure, self.folder)
        if f:
            self.last = f
        return f is not None

    def shrink(self, recipe):
        """Returns (smallest recipe that still fails, its failure)."""
        self.last = self.failure
        best = copy.deepcopy(recipe)
        changed = True
        while changed and time.time() < self.deadline:
            changed = False
            for fn in (self.drop_steps, self.unwrap_forks, self.replace_steps, self.shrink_shapes, self.simplify):
                new = fn(best)
                if new is not None:
                    best, changed = new, True
        return best, self.last

    def drop_steps(self, best):
        """ddmin-style: remove chunks of every step list, halving the chunk size."""
        improved = None
        for path in list(_lists(best["steps"])):
            try:
                n = len(_get(best, path))
            except (IndexError, KeyError):
                continue          # the list went away with an earlier removal
            size = max(1, n // 2)
            while size >= 1:
                i = 0
                while i < len(_get(best, path)):
                    cand = copy.deepcopy(best)
                    del _get(cand, path)[i:i + size]
                    if (path or _get(cand, path)) and self.test(cand):
                        best = improved = cand
                    else:
                        i += size
                size //= 2
        return improved

    def unwrap_forks(self, best):
        """A fork replaced by one of its branches' steps, inline."""
        improved = None
        for path in list(_lists(best["steps"])):
            i = 0
            while True:
                try:
                    steps = _get(best, path)
                except (IndexError, KeyError):
                    break
                if i >= len(steps):
                    break
                if steps[i].get("op") == "fork":
                    for bi in range(len(steps[i]["branches"]) if len(steps[i]["branches"]) > 2 else 0):
                        cand = copy.deepcopy(best)      # one branch fewer
                        del _get(cand, path)[i]["branches"][bi]
                        if self.test(cand):
                            best = improved = cand
                            break
                    for bi in range(len(_get(best, path)[i]["branches"])):
                        cand = copy.deepcopy(best)
                        cs = _get(cand, path)
                        cs[i:i + 1] = cs[i]["branches"][bi]
                        if self.test(cand):
                            best = improved = cand
                            break
                i += 1
        return improved

    def replace_steps(self, best):
        """A composite or unusual step replaced by Relu, Neg, Add or Mul of a scalar."""
        improved = None
        idx = -1
        # The count is taken again each time: a stand-in for a step with
        # branches or a body drops their steps (seed 30119xxx's shrink ran
        # past the end of the list).
        while idx + 1 < _step_count(best):
            idx += 1
            st = _step_at(best, idx)
            if st["op"] not in COMPOSITE:
                continue
            for rep in REPLACE:
                if all(st.get(k) == v for k, v in rep.items()):
                    break      # already this simple; later stand-ins are not simpler
                cand = copy.deepcopy(best)
                target = _step_at(cand, idx)
                seed = target.get("s", 0)
                target.clear()
                target.update(rep, s=seed)
                if self.test(cand):
                    best = improved = cand
                    break
        return improved

    def shrink_shapes(self, best):
        improved = None
        dims = best["input"]
        if len(dims) > 3:     # drop the last spatial axis (2-D conv -> 1-D conv)
            cand = copy.deepcopy(best)
            cand["input"] = dims[:-1]
            if self.test(cand):
                best = improved = cand
        for ax in range(len(best["input"])):
            for v in (1, 2, 3, 5):
                if v >= best["input"][ax]:
                    break
                cand = copy.deepcopy(best)
                cand["input"][ax] = v
                if self.test(cand):
                    best = improved = cand
                    break
        return improved

    def simplify(self, best):
        improved = None
        for idx in range(_step_count(best)):
            st = _step_at(best, idx)
            fields = [f for f in SIMPLER if f in st or (f == "round" and st.get("op") == "bin")
                      or (f == "round_w" and st.get("op") in ("conv", "convT", "gemm", "matmul"))]
            for field in fields:
                for v in _simpler(field, st.get(field)):
                    cand = copy.deepcopy(best)
                    _step_at(cand, idx)[field] = v
                    if self.test(cand):
                        best = improved = cand
                        break
        return improved
