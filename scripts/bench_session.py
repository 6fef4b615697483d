#!/usr/bin/python3
"""Throughput of the Python API against ONNX Runtime.

    scripts/bench.sh --session [--rounds 5] [--iterations 20] [--threads "1 2"]
                     [--batches "1 8 32"] [--out FILE] [MODEL...]

(scripts/bench.sh --session runs this file.) MODEL: names under models/
(default resnet50 mobilenet_v2 efficientnet_b0). Each model is copied with its
batch made symbolic ("N" on the first dim of every input and output, its
value_info dropped) so that one file serves every batch: `onnxfuse.
InferenceSession` compiles a schedule per batch on first use; ONNX Runtime
(npm onnxruntime-node, `compare.js --time --dim N=B`) takes the same file.
A last row times one Relu on [1, 16]: the overhead of one `run` call.

Each measurement is its own process (3 warm-up runs, then --iterations timed
`run` calls; the median). Every round runs every model x batch x thread count
x variant once, the two variants in a rotated order, so that the slow phases
of a shared machine hit both alike. The table gives the medians over rounds
with their (min-max), the time per image (ms / batch) and the ratio onnxfuse /
ORT with the range of the per-round ratios; the target is <= 1.0x everywhere.

Our side runs through the Python module (`import onnxfuse`, found on
PYTHONPATH; by default build/python, the build tree's module). ORT's side
runs through Node.js, the only ONNX Runtime this machine installs: its time
per call includes Node's binding, ours Python's.

    scripts/bench.sh --session --cold [--rounds 5] [MODEL...]

times a cold start instead: whole processes, from their start to
the first output written, one inference at 1 thread on the model's
test_data_set_0 input: ONNX Runtime from model.onnx (`scripts/ort/infer.js`,
Node.js start-up included), `onnx-fuse run model.plan` (a plan written by
`onnx-fuse MODEL.onnx -o model.plan` first, not timed) and `onnx-fuse run
model.onnx`, rotated each round (default model resnet50; target: the plan at
<= 0.5x ORT's time).

    scripts/bench_session.py --measure MODEL.onnx [--dim N=8] [--threads 1] [--iterations 20]

times one model in this process and prints one JSON line (median_ms, min_ms,
max_ms, first_run_ms: the first call, compile included).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = ["resnet50", "mobilenet_v2", "efficientnet_b0"]
NUMPY_TYPES = {"tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
               "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int8)": "int8",
               "tensor(uint8)": "uint8", "tensor(bool)": "bool"}


def measure(args):
    """One process: load, warm up, time; print one JSON line."""
    import numpy as np
    import onnxfuse
    dims = dict(parse_dim(d) for d in args.dim)
    session = onnxfuse.InferenceSession(args.model, threads=args.threads)
    rng = np.random.default_rng(0)
    feeds = {}
    for meta in session.get_inputs():
        shape = [d if isinstance(d, int) else dims.get(d, 1) for d in meta.shape]
        feeds[meta.name] = (rng.random(shape) * 2 - 1).astype(NUMPY_TYPES[meta.type])
    start = time.perf_counter()
    session.run(None, feeds)
    first_ms = (time.perf_counter() - start) * 1e3
    for _ in range(2):
        session.run(None, feeds)
    ms = []
    for _ in range(args.iterations):
        start = time.perf_counter()
        session.run(None, feeds)
        ms.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms),
                      "first_run_ms": first_ms}))


def parse_dim(text):
    name, _, size = text.partition("=")
    if not name or not size.isdigit() or int(size) < 1:
        raise SystemExit(f"bench_session: --dim takes NAME=SIZE, got {text!r}")
    return name, int(size)


def symbolic_batch_copy(model, folder):
    """models/MODEL/model.onnx with the first dim of its inputs and outputs named N."""
    import onnx
    m = onnx.load(os.path.join(ROOT, "models", model, "model.onnx"))
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.shape.dim[0].dim_param = "N"
    del m.graph.value_info[:]
    path = os.path.join(folder, f"{model}.onnx")
    onnx.save(m, path)
    return path


def tiny_relu(folder):
    """One Relu on [N, 16], run at N = 1: the cost of a call, not of its work."""
    import onnx
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16])])
    path = os.path.join(folder, "relu_1x16.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def last_line(cmd, env, timeout):
    """(the last non-empty line CMD prints, error): one measuring process;
    the error names a timeout, or the exit status and the last line of stderr."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    if p.returncode != 0 or not lines:
        err = [l for l in p.stderr.splitlines() if l.strip()]
        return None, f"exit {p.returncode}: {(err or ['?'])[-1][:300]}"
    return lines[-1], None


def print_table(lines, errors, out):
    """Prints the Markdown LINES, then the failed runs ERRORS, and writes the
    same to OUT when given."""
    if errors:
        lines = lines + ["", "### Failed runs", ""] + [f"- {e}" for e in errors]
    table = "\n".join(lines)
    print(table)
    if out:
        with open(out, "w") as f:
            f.write(table + "\n")


def run_variant(variant, path, batch, threads, iterations, env):
    """(median_ms, error) of one process."""
    if variant == "ort":
        cmd = ["node", os.path.join(ROOT, "scripts/ort/compare.js"), "--time", path, "--dim", f"N={batch}",
               "--threads", str(threads), "--iterations", str(iterations)]
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--measure", path, "--dim", f"N={batch}",
               "--threads", str(threads), "--iterations", str(iterations)]
    line, error = last_line(cmd, env, 900)
    if error:
        return None, error
    if variant == "ort":
        words = line.split()
        return float(words[words.index("median") + 1]), None
    return json.loads(line)["median_ms"], None


def cold_start(args):
    """Whole-process times to a first output: ORT from the .onnx, run from a plan and from the .onnx."""
    binary = os.path.join(ROOT, "build", "onnx-fuse")
    folder = tempfile.mkdtemp(prefix="bench_cold.")
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = ["## Cold start: process start to first output, 1 thread", "",
             f"Started {started}; load average at start {' '.join(open('/proc/loadavg').read().split()[:3])}; "
             f"{args.rounds} rounds. Command: scripts/bench.sh --session --cold --rounds {args.rounds}.", "",
             "| model | ORT from .onnx s | run from .plan s | run from .onnx s | plan/ORT |", "|---|---|---|---|---|"]
    for model in args.models or ["resnet50"]:
        onnx_path = os.path.join(ROOT, "models", model, "model.onnx")
        plan = os.path.join(folder, f"{model}.plan")
        subprocess.run([binary, onnx_path, "-o", plan], check=True, capture_output=True)
        data = os.path.join(ROOT, "models", model, "test_data_set_0")
        cmds = {"ort": lambda d: ["node", os.path.join(ROOT, "scripts/ort/infer.js"), onnx_path, d, "--threads", "1"],
                "plan": lambda d: [binary, "run", plan, "--inputs", d, "--outputs", d + "/out", "--iterations", "1",
                                   "--warmup", "0", "--threads", "1"],
                "onnx": lambda d: [binary, "run", onnx_path, "--inputs", d, "--outputs", d + "/out", "--iterations", "1",
                                   "--warmup", "0", "--threads", "1"]}
        times = {k: {} for k in cmds}
        for rnd in range(1, args.rounds + 1):
            order = list(cmds)
            order = order[rnd % 3:] + order[:rnd % 3]
            for k in order:
                d = os.path.join(folder, f"{model}-{k}-{rnd}")
                os.makedirs(d + "/out")
                shutil.copy(os.path.join(data, "input_0.pb"), d)
                start = time.perf_counter()
                p = subprocess.run(cmds[k](d), capture_output=True, text=True)
                secs = time.perf_counter() - start
                if p.returncode == 0:
                    times[k][rnd] = secs
                print(f"bench_session --cold: round {rnd} {model} {k}: "
                      f"{f'{secs:.3f} s' if p.returncode == 0 else 'exit %d' % p.returncode}", file=sys.stderr)
        ort, plan_t = times["ort"], times["plan"]
        per_round = [plan_t[r] / ort[r] for r in plan_t if r in ort]
        ratio = "–" if not per_round else (f"{statistics.median(plan_t.values()) / statistics.median(ort.values()):.2f}"
                                           f" ({min(per_round):.2f}–{max(per_round):.2f})")
        lines.append(f"| {model} | {spread(list(ort.values()))} | {spread(list(plan_t.values()))} "
                     f"| {spread(list(times['onnx'].values()))} | {ratio} |")
    shutil.rmtree(folder, ignore_errors=True)
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


def spread(values):
    if not values:
        return "fail"
    text = f"{statistics.median(values):.3f}"
    return text + (f" ({min(values):.3f}–{max(values):.3f})" if len(values) > 1 else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--measure", metavar="MODEL")
    ap.add_argument("--dim", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--threads", default="1 2")
    ap.add_argument("--batches", default="1 8 32")
    ap.add_argument("--out")
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    if args.measure:
        args.model = args.measure
        args.threads = int(args.threads)
        return measure(args)
    if args.cold:
        return cold_start(args)

    env = dict(os.environ)
    env.setdefault("PYTHONPATH", os.path.join(ROOT, "build", "python"))
    threads = [int(t) for t in args.threads.split()]
    batches = [int(b) for b in args.batches.split()]
    folder = tempfile.mkdtemp(prefix="bench_session.")
    cases = [(m, symbolic_batch_copy(m, folder), b) for m in (args.models or DEFAULT_MODELS) for b in batches]
    cases.append(("relu 1x16 (per-call overhead)", tiny_relu(folder), 1))
    variants = ["ort", "onnxfuse"]
    times, errors = {}, []
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_start = open("/proc/loadavg").read().split()[:3]
    for rnd in range(1, args.rounds + 1):
        for k, (name, path, batch) in enumerate(cases):
            iterations = args.iterations * 50 if batch == 1 and name.startswith("relu") else args.iterations
            for t in threads:
                for j in range(2):
                    variant = variants[(j + rnd + k) % 2]
                    ms, err = run_variant(variant, path, batch, t, iterations, env)
                    key = (name, batch, t)
                    if err:
                        errors.append(f"{name} batch {batch} t{t} {variant} round {rnd}: {err}")
                    else:
                        times.setdefault(key, {}).setdefault(variant, {})[rnd] = ms
                    print(f"bench_session: round {rnd}/{args.rounds} {name} b{batch} t{t} {variant}: "
                          f"{err or f'{ms:.3f} ms'}", file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    lines = ["## onnxfuse Python API vs ONNX Runtime: time per image", "",
             f"Started {started}; {os.cpu_count()} cores; load average at start {' '.join(load_start)}, "
             f"at end {' '.join(open('/proc/loadavg').read().split()[:3])}. {args.rounds} rounds x "
             f"{args.iterations} timed runs per process (x50 for the Relu). Command: scripts/bench.sh --session "
             f"--rounds {args.rounds} --iterations {args.iterations} --threads \"{args.threads}\" "
             f"--batches \"{args.batches}\".", "",
             "| model | batch | threads | ORT ms/image | onnxfuse ms/image | onnxfuse/ORT |", "|---|---|---|---|---|---|"]
    over = []
    for name, _, batch in cases:
        for t in threads:
            v = times.get((name, batch, t), {})
            ort, ours = v.get("ort", {}), v.get("onnxfuse", {})
            per_round = [ours[r] / ort[r] for r in ours if r in ort]
            ratio = "–"
            if ort and ours:
                x = statistics.median(ours.values()) / statistics.median(ort.values())
                ratio = f"{x:.2f}" + (f" ({min(per_round):.2f}–{max(per_round):.2f})" if len(per_round) > 1 else "")
                if x > 1.0:
                    over.append(f"{name} b{batch} t{t} {x:.2f}")
            lines.append(f"| {name} | {batch} | {t} | {spread([x / batch for x in ort.values()])} "
                         f"| {spread([x / batch for x in ours.values()])} | {ratio} |")
    lines += ["", f"- onnxfuse ≤ 1.0× ORT everywhere: {'**met**' if not over and not errors else '**NOT met**'}"
              + (" — over: " + ", ".join(over) if over else "")]
    print_table(lines, errors, args.out)


if __name__ == "__main__":
    main()
