"""The command line: a campaign for SECONDS from SEED, one graph (--one), or
the replay of saved cases (--replay). See scripts/difftest.sh."""
import argparse
import collections
import os
import shutil
import signal
import sys
import tempfile
import time

from . import cases, quantized, renderer, typed
from .generator import make_recipe
from .runner import ROOT, Runner, ToolMissing, key, require_tools
from .shrinker import Shrinker
from .trial import config, trial


def find_binary(arg):
    path = arg or os.environ.get("ONNXFUSE_BIN") or os.path.join(ROOT, "build", "onnx-fuse")
    path = os.path.join(ROOT, path) if not os.path.isabs(path) else path
    # Others rebuild the binary while campaigns run: wait for it to come back.
    for _ in range(120):
        if os.access(path, os.X_OK):
            return path
        time.sleep(1)
    sys.exit("difftest: no onnx-fuse binary at %s (set ONNXFUSE_BIN or --bin)" % path)


class Campaign:
    def __init__(self, args, binary):
        self.args, self.bin = args, binary
        self.runner = Runner(binary, os.path.join(ROOT, "scripts", "ort"))
        self.work = tempfile.mkdtemp(prefix="difftest-")
        self.tried = self.ort_runs = self.fuse_runs = self.quantized = self.dynamic = 0
        self.census = collections.Counter()     # quantized structures in graphs checked (quantized.census)
        self.explained = collections.Counter()  # mismatches explained, by rule (trial.keep_real)
        self.session_runs = self.session_shapes = 0
        self.refused, self.ops = collections.Counter(), collections.Counter()
        self.typed, self.input_types = collections.Counter(), collections.Counter()
        self.refusal_example = {}
        self.patterns, self.groups = collections.Counter(), collections.Counter()
        self.failures, self.invalid, self.notes = [], [], collections.Counter()
        self.slow = []  # (seed, [step, ...]) of graphs whose fused plan has a slow step: not clean
        self.known = cases.known_signatures(args.cases)
        # The ops of typed steps this build runs: the others are not drawn (typed.py).
        self.gated = typed.probe(binary)

    def one(self, seed, cfg=None, shrink=True):
        recipe = make_recipe(seed)
        cfg = cfg or config(seed, self.args.ort_every, self.args.fuse_every, self.args.session_every)
        folder = os.path.join(self.work, "g")
        shutil.rmtree(folder, ignore_errors=True)
        res = trial(self.runner, recipe, cfg, folder)
        self.tried += 1
        self.explained.update(res.get("explained", {}))
        self.ops.update(res["ops"])
        self.typed.update(cases.describe_typed(recipe))
        if "built" in res:
            self.input_types.update(i.type.tensor_type.elem_type for i in res["built"].model.graph.input)
        for op, msg in res["refused"]:
            self.refused[op] += 1
            self.refusal_example.setdefault(op, "seed %d: %s" % (seed, msg.splitlines()[-1][:200] if msg else ""))
        if res["invalid"]:
            self.invalid.append(seed)
            print("INVALID seed %d (generator bug): %s" % (seed, res["invalid"][:300]), flush=True)
        if res["note"]:
            self.notes[res["note"][:80]] += 1
        if res.get("slow"):
            steps = sorted(res["slow"])
            self.slow.append((seed, steps))
            print("SLOW seed %d: %d step(s) on a slow implementation: %s" % (seed, len(steps), "; ".join(steps[:3])),
                  flush=True)
        if "built" in res and not (res["refused"] or res["invalid"]):
            self.census.update(quantized.census(res["built"].model))
        if res.get("quantized"):
            self.quantized += 1
        elif not (res["refused"] or res["invalid"]):
            self.dynamic += bool(res.get("dynamic"))
            self.ort_runs += cfg["ort"] or bool(res.get("dynamic"))
            self.fuse_runs += cfg["fuse"]
            self.session_runs += res["session_shapes"] > 0
            self.session_shapes += res["session_shapes"]
        if res["report"]:
            for p in res["report"].get("patterns", []):
                m = p.get("matches", 0)
                self.patterns[p["pattern"]] += m if isinstance(m, int) else len(m)
            for grp in res["report"].get("groups", []):
                self.groups[grp.get("function", "?")] += 1
        if res["failures"]:
            if self.args.keep:
                dst = os.path.join(self.args.keep, "seed-%d" % seed)
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(folder, dst)
            self.handle_failure(seed, recipe, res, shrink)
        return res

    def handle_failure(self, seed, recipe, res, shrink):
        f = res["failures"][0]
        kinds = sorted({k[0] for k in map(key, res["failures"])})
        # max_rel is None when no figure compares (a shape or type mismatch, NaN against a number).
        what = ("%s max_rel %.2e" % (f["output"], f["max_rel"])) if f.get("max_rel") is not None \
            else "%s %s" % (f.get("output", ""), f.get("message", "")[:120])
        line = "FAIL seed %d [%s %s t%d] %s: %s" % (seed, f["via"][0], f["via"][1], f["via"][2],
                                                   "+".join(kinds), what)
        entry = {"seed": seed, "failure": f, "path": None}
        self.failures.append(entry)
        if not shrink:
            print(line, flush=True)
            return
        known = next((self.known[x] for x in cases.signatures(f, None) if x in self.known), None)
        if known:     # an internal error already saved (same message): no need to shrink
            print("%s, duplicate of %s" % (line, os.path.relpath(known)), flush=True)
            entry["path"] = known
            return
        t0 = time.time()
        sh = Shrinker(self.runner, f, os.path.join(self.work, "shrink"), self.args.shrink_budget)
        small, sf = sh.shrink(recipe)
        secs = time.time() - t0
        _, g = renderer.render(small)
        sigs = cases.signatures(sf, g)
        entry["graph"] = cases.describe(small)
        dup = next((self.known[x] for x in sigs if x in self.known), None)
        if dup:
            entry["path"] = dup
            print("%s -> %d ops, duplicate of %s" % (line, len(g.nodes), os.path.relpath(dup)), flush=True)
            return
        if self.args.no_save:
            print("%s -> %d ops (%s) [%d tries, %.0f s]" % (line, len(g.nodes), renderer.signature(g),
                                                            sh.tries, secs), flush=True)
            return
        path = cases.save(self.args.cases, small, sf, seed, g, secs)
        self.known.update((x, path) for x in sigs)
        entry["path"] = path
        print("%s -> %d ops: %s" % (line, len(g.nodes), os.path.relpath(path)), flush=True)

    def run(self, seconds, seed):
        start = time.time()
        i = 0
        # A campaign stopped from outside (SIGTERM, SIGINT) still prints its summary.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        try:
            while time.time() - start < seconds:
                self.one(seed + i, shrink=not self.args.no_shrink)
                i += 1
        except (KeyboardInterrupt, SystemExit):
            print("stopped from outside after %d graphs" % self.tried)
        except ToolMissing as e:     # a failure of the campaign, with the seed it stopped at
            self.failures.append({"seed": seed + i, "failure": {"kind": "tool-missing"}, "path": None})
            print("FAIL seed %d: %s" % (seed + i, e), flush=True)
        finally:
            self.summary(time.time() - start)
            sys.stdout.flush()

    def summary(self, secs):
        def top(counter, n=60):
            return ", ".join("%s %d" % kv for kv in counter.most_common(n)) or "none"
        print("graphs tried: %d in %.0f s (%.0f/min); ORT checks %d, fuse-path checks %d, session checks %d "
              "(%d shapes, each in passes and in one pass)"
              % (self.tried, secs, self.tried * 60 / max(secs, 1e-9), self.ort_runs, self.fuse_runs,
                 self.session_runs, self.session_shapes))
        print("quantized graphs (QDQ): %d, checked by run --check alone (float arithmetic without fake quantization, "
              "each quantized activation in steps); not compared with ONNX Runtime" % self.quantized)
        print("dynamically quantized graphs: %d, each compared with ONNX Runtime (and fuse-path and session checks "
              "as drawn) at %g relative" % (self.dynamic, quantized.RTOL_DYNAMIC))
        print("quantized structures in graphs checked: " + top(self.census))
        print("refusals: %d (%s)" % (sum(self.refused.values()), top(self.refused)))
        left = sorted(set(typed.GATED) - set(self.gated))
        print("typed steps' optional ops drawn: %s%s" % (", ".join(self.gated) or "none",
                                                        "; not drawn (refused by this build): " + ", ".join(left)
                                                        if left else ""))
        for op, example in sorted(self.refusal_example.items()):
            print("  %s refused, e.g. %s" % (op, example))
        for rule, n in self.explained.most_common():
            print("mismatches explained by the graph's conditioning (%s): %d" % (rule, n))
        if self.invalid:
            print("invalid models (generator bugs): %d (seeds %s)" % (len(self.invalid), self.invalid[:10]))
        for note, n in self.notes.items():
            print("note: %s (%d graphs)" % (note, n))
        kinds = collections.Counter(step.split(" (")[0] for _, steps in self.slow for step in steps)
        print("graphs whose fused plan has a slow step: %d%s" % (
            len(self.slow), " (%s; seeds %s)" % (top(kinds), ", ".join(str(sd) for sd, _ in self.slow[:10]))
            if self.slow else ""))
        saved = sorted({e["path"] for e in self.failures if e["path"]})
        print("failures found: %d graphs; cases: %s" % (len(self.failures), ", ".join(
            os.path.relpath(p) for p in saved) or "none"))
        print("ops covered: " + top(self.ops, 200))
        print("typed steps drawn: " + top(self.typed))
        names = {1: "float", 2: "uint8", 3: "int8", 6: "int32", 7: "int64", 9: "bool", 10: "float16", 11: "double"}
        print("graph inputs by type: " + ", ".join("%s %d" % (names.get(t, t), n)
                                                  for t, n in self.input_types.most_common()))
        print("patterns covered (%d fuse-path graphs): %s" % (self.fuse_runs, top(+self.patterns)))
        print("fused groups seen: %d kinds: %s" % (len(self.groups), top(self.groups, 25)))

    def close(self):
        self.runner.close()
        shutil.rmtree(self.work, ignore_errors=True)


def main(argv=None):
    p = argparse.ArgumentParser(prog="difftest.sh", description="random-graph differential tester for onnx-fuse")
    p.add_argument("seconds", nargs="?", type=float, help="campaign budget")
    p.add_argument("seed", nargs="?", type=int, default=1000, help="first seed (graph i uses SEED+i)")
    p.add_argument("--one", type=int, metavar="SEED", help="regenerate and run graph SEED (every check)")
    p.add_argument("--print", action="store_true", help="with --one: print the graph's ONNX text")
    p.add_argument("--replay", nargs="?", const=os.path.join(ROOT, "tests", "difftest", "cases"),
                   metavar="DIR|FILE", help="run saved cases (default tests/difftest/cases)")
    p.add_argument("--keep", metavar="DIR", help="keep failing models (unshrunk) in DIR/seed-N/")
    p.add_argument("--bin", help="onnx-fuse binary (default $ONNXFUSE_BIN, else build/onnx-fuse)")
    p.add_argument("--cases", default=os.path.join(ROOT, "tests", "difftest", "cases"),
                   help="where shrunk failures are saved")
    p.add_argument("--no-save", action="store_true", help="do not save cases")
    p.add_argument("--no-shrink", action="store_true")
    p.add_argument("--shrink-budget", type=float, default=60.0, help="seconds per failure")
    p.add_argument("--ort-every", type=int, default=4, help="1 in N graphs also runs in ORT (0: none)")
    p.add_argument("--fuse-every", type=int, default=3, help="1 in N graphs also goes through -o (0: none)")
    p.add_argument("--report-slow", action="store_true",
                   help="graphs whose fused plan has a slow step are printed and counted, but do not fail the "
                        "campaign (ctest difftest.campaign; difftest.no_slow_steps fails on them)")
    p.add_argument("--session-every", type=int, default=4,
                   help="1 in N graphs also runs through InferenceSession at batches 1, 3, 4 (0: none)")
    args = p.parse_args(argv)
    binary = find_binary(args.bin)
    try:
        require_tools(binary, os.path.join(ROOT, "scripts", "ort"))
    except ToolMissing as e:
        print("difftest: FAILED: %s" % e, flush=True)
        return 1
    if args.replay:
        return 1 if cases.replay(binary, os.path.join(ROOT, "scripts", "ort"), args.replay) else 0
    c = Campaign(args, binary)
    try:
        if args.one is not None:
            recipe = make_recipe(args.one)
            if args.print:
                print(renderer.render(recipe, ["seed %d: %s" % (args.one, cases.describe(recipe))])[0])
            cfg = dict(config(args.one), ort=True, fuse=True, session=True)
            res = c.one(args.one, cfg, shrink=not args.no_shrink)
            print("seed %d (%s): %d ops, %s" % (args.one, cfg["strategy"], len(res["ops"]),
                  "refused (%s)" % "; ".join(m for _, m in res["refused"]) if res["refused"] else
                  "FAILED" if res["failures"] else "invalid" if res["invalid"] else
                  "slow step(s): " + "; ".join(sorted(res["slow"])) if res["slow"] else "ok"))
            return 1 if res["failures"] or res["invalid"] or (res["slow"] and not args.report_slow) else 0
        if args.seconds is None:
            p.error("give SECONDS, --one SEED or --replay")
        c.run(args.seconds, args.seed)
        # A graph whose fused plan runs a slow step is not a failure of its
        # numbers, but a campaign with any is not clean.
        return 1 if c.failures or c.invalid or (c.slow and not args.report_slow) else 0
    finally:
        c.close()
