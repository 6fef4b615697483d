#!/usr/bin/python3
"""Run-time shapes: one session serving calls whose input shapes change,
the Python API against ONNX Runtime.

    scripts/bench.sh --dynamic [--rounds 3] [--threads "1 2"] [--out FILE] [WORKLOAD ...]

(scripts/bench.sh --dynamic runs this file.) The models come from
scripts/export_dynamic.py (models/dynamic/NAME/model.onnx) and, for the
detectors, scripts/export_zoo.py (models/zoo/NAME/model.onnx). WORKLOAD
(default: all five):

    encoder   bert_encoder, 40 requests of random lengths 8..128 (seed 2026),
              random input_ids, attention_mask with the last length // 8
              positions 0: nearly every request is a sequence length the
              session has not seen.
    encoder-dynamic
              the same requests to bert_encoder-dynamic, the encoder in ONNX
              Runtime's quantize_dynamic form (scripts/export_quantized.py).
    decoder   gpt2_decoder_step, 64 tokens after a 16-token cache: the first
              call takes a random cache (past 16), every later one the
              previous call's present_* as its past_* (past 17, 18, ..., 79);
              the token ids are fixed random ids (fed, not sampled, so both
              runtimes see the same sequence).
    ssdlite, fasterrcnn
              torchvision's SSDlite320 and Faster R-CNN
              (mobilenet_v3_large_320_fpn), 10 images each: the export's
              test image, then 9 images of uniform noise. Their
              shapes follow values (NonZero, TopK, NonMaxSuppression, an If
              decided at run time): onnxfuse runs them in stages. Outputs
              are compared as sets of detections (zoo_check.compare_detections).

A variant is one process that runs the whole workload: onnxfuse
(`onnxfuse.InferenceSession(model, threads=T)`, this file with --measure;
`import onnxfuse` found on PYTHONPATH, by default build/python) or ONNX
Runtime (npm onnxruntime-node, graph optimizations "all",
scripts/ort/sequence.js). A process per variant per round keeps each one's
memory its own. Every round runs every workload x thread count x variant
once, the two variants in a rotated order, so that slow phases of a shared
machine hit both alike. No warm-up: the workload starts cold, as a server
does.

Table, per workload and thread count (medians over rounds, with (min-max)):
total s: session creation plus every call (Python's and Node's start-up and
module imports excluded); ms/call: the median call, first calls at a new
shape included; peak RSS MB: the process's VmHWM at the end, and after
the semicolon (median) its growth over the RSS before the session was
created (the interpreter and its modules excluded); ratios onnxfuse / ORT. From
onnxfuse's session.stats(): compiles (schedules made, with the number of
distinct input shapes among them: more compiles than shapes means the shape
cache, default 8 schedules, evicted one that was needed again) and the median
load_ms and compile_ms per schedule (read after every call, so schedules
the shape cache evicted count too). max rel: the largest difference of any
output of any call from ORT's in the same round (max|a - b| / max|ORT| per
tensor, compare.js's measure); a line whose max rel is above 1e-3, or
whose run failed, is marked FAIL.

    scripts/bench_dynamic.py --measure WORKLOAD_DIR [--threads 1] [--dump DIR]

runs one workload through onnxfuse in this process and prints one JSON line,
as scripts/ort/sequence.js does for ONNX Runtime (that file's header gives
the workload's format).

Exit status: 0 the table was printed and every line is within 1e-3 of ORT;
1 some line failed; 2 bad usage or missing models.
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

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_session import last_line, print_table  # noqa: E402
from zoo_check import compare_detections, max_rel  # noqa: E402  (compare.js's measure)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQUENCE_JS = os.path.join(ROOT, "scripts", "ort", "sequence.js")
SEED = 2026
VOCAB = 1000
RTOL = 1e-3
# The dynamically quantized encoder: an activation within float rounding of a
# half step rounds to the other integer in DynamicQuantizeLinear, and such a
# step carries on as far as the quantization's own error does. Its bound is
# the smallest effect of the quantization on ONNX Runtime's own output over
# the encoder's lengths 8-128 (float model against quantized one, max rel
# 7e-3; tests/e2e/dynamic_shapes.py checks each call against its own).
RTOL_QUANTIZED = 7e-3
LAYERS, HEADS, HEAD_DIM = 4, 4, 64
ENCODER_REQUESTS, ENCODER_LENGTHS = 40, (8, 128)
DECODER_PAST, DECODER_TOKENS = 16, 64
DETECTOR_IMAGES = 10
# Workload -> its model, under models/.
WORKLOADS = {"encoder": "dynamic/bert_encoder", "encoder-dynamic": "dynamic/bert_encoder-dynamic",
             "decoder": "dynamic/gpt2_decoder_step",
             "ssdlite": "zoo/ssdlite320_mobilenet_v3_large", "fasterrcnn": "zoo/fasterrcnn_mobilenet_v3_large_320_fpn"}
DETECTORS = ("ssdlite", "fasterrcnn")
DTYPES = {"float32": np.float32, "int64": np.int64}


# --- workloads -------------------------------------------------------------------


def write_workload(folder, model, calls, feedback):
    """FOLDER/workload.json and one .bin per given input (sequence.js's format)."""
    os.makedirs(folder, exist_ok=True)
    specs = []
    for n, inputs in enumerate(calls):
        spec = {}
        for name, array in inputs.items():
            file = f"call_{n}_{name}.bin"
            np.ascontiguousarray(array).tofile(os.path.join(folder, file))
            spec[name] = {"file": file, "dims": list(array.shape), "type": array.dtype.name}
        specs.append({"inputs": spec})
    with open(os.path.join(folder, "workload.json"), "w") as f:
        json.dump({"model": model, "feedback": feedback, "calls": specs}, f)


def encoder_workload(folder, model):
    rng = np.random.default_rng(SEED)
    calls = []
    for length in rng.integers(ENCODER_LENGTHS[0], ENCODER_LENGTHS[1] + 1, ENCODER_REQUESTS):
        mask = np.ones((1, length), np.int64)
        mask[:, length - length // 8:] = 0
        calls.append({"input_ids": rng.integers(0, VOCAB, (1, length)).astype(np.int64), "attention_mask": mask})
    write_workload(folder, model, calls, {})
    return sorted({int(c["input_ids"].shape[1]) for c in calls})


def decoder_workload(folder, model):
    rng = np.random.default_rng(SEED + 1)
    cache = [f"{kind}_{n}" for n in range(LAYERS) for kind in ("key", "value")]
    first = {"input_ids": rng.integers(0, VOCAB, (1, 1)).astype(np.int64)}
    for c in cache:
        first[f"past_{c}"] = rng.standard_normal((1, HEADS, DECODER_PAST, HEAD_DIM)).astype(np.float32)
    calls = [first] + [{"input_ids": rng.integers(0, VOCAB, (1, 1)).astype(np.int64)}
                       for _ in range(DECODER_TOKENS - 1)]
    write_workload(folder, model, calls, {f"present_{c}": f"past_{c}" for c in cache})
    return list(range(DECODER_PAST, DECODER_PAST + DECODER_TOKENS))


def detector_workload(folder, model):
    """The export's test image, then uniform noise images: other boxes and
    other numbers of them at every call. (Blends of the two are avoided: on
    them these random-weight detectors are chaotic, ORT, our fused and our
    unfused plans each giving other boxes.)"""
    from onnx import load_tensor, numpy_helper
    image = numpy_helper.to_array(load_tensor(os.path.join(os.path.dirname(model), "test_data_set_0", "input_0.pb")))
    rng = np.random.default_rng(SEED + 2)
    calls = [{"image": image.astype(np.float32)}]
    calls += [{"image": rng.random(image.shape, dtype=np.float32)} for _ in range(DETECTOR_IMAGES - 1)]
    write_workload(folder, model, calls, {})
    return [image.shape]


# --- one process -----------------------------------------------------------------


def proc_status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def measure(args):
    """One process: the workload through onnxfuse; prints one JSON line."""
    import onnxfuse
    folder = args.measure
    with open(os.path.join(folder, "workload.json")) as f:
        workload = json.load(f)
    given = [{name: np.fromfile(os.path.join(folder, s["file"]), DTYPES[s["type"]]).reshape(s["dims"])
              for name, s in call["inputs"].items()} for call in workload["calls"]]
    schedules = {}  # (signature, load_ms, compile_ms): every schedule made, evicted or not

    def note_schedules(session):
        stats = session.stats()
        for shape in stats["shapes"]:
            signature = tuple(sorted((k, tuple(v)) for k, v in shape["input_shapes"].items()))
            schedules[(signature, shape["load_ms"], shape["compile_ms"])] = (shape["load_ms"], shape["compile_ms"])
        return stats

    rss_before = proc_status("VmRSS")
    start = time.perf_counter()
    session = onnxfuse.InferenceSession(workload["model"], threads=args.threads)
    create_ms = (time.perf_counter() - start) * 1e3
    note_schedules(session)
    names = [o.name for o in session.get_outputs()]
    call_ms, shapes, carried = [], [], {}
    for n, inputs in enumerate(given):
        feed = {**carried, **inputs}
        start = time.perf_counter()
        outputs = session.run(None, feed)
        call_ms.append((time.perf_counter() - start) * 1e3)
        note_schedules(session)
        shapes.append({name: list(o.shape) for name, o in zip(names, outputs)})
        if args.dump:
            for name, o in zip(names, outputs):
                o.tofile(os.path.join(args.dump, f"call_{n}_{name}.bin"))
        by_name = dict(zip(names, outputs))
        carried = {inp: by_name[out] for out, inp in workload["feedback"].items()}
    stats = note_schedules(session)
    print(json.dumps({
        "create_ms": create_ms, "call_ms": call_ms, "rss_before_kb": rss_before,
        "peak_rss_kb": proc_status("VmHWM"), "rss_kb": proc_status("VmRSS"), "shapes": shapes,
        "compiles": stats["compiles"], "cache_hits": stats["cache_hits"], "evictions": stats["evictions"],
        "staged_runs": stats["staged_runs"], "stages_compiled": stats["stages_compiled"],
        "distinct_shapes": len({signature for signature, _, _ in schedules}),
        "load_ms": [v[0] for v in schedules.values()], "compile_ms": [v[1] for v in schedules.values()],
    }))


def run_variant(variant, folder, threads, dump, env):
    """(result dict, error) of one process."""
    if variant == "ort":
        cmd = ["node", SEQUENCE_JS, folder, "--threads", str(threads), "--dump", dump]
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--measure", folder, "--threads", str(threads),
               "--dump", dump]
    line, error = last_line(cmd, env, 1800)
    return (None, error) if error else (json.loads(line), None)


def read_detections(folder, n, shapes):
    """Call n's boxes (float32), labels (int64) and scores (float32) as dumped."""
    types = {"boxes": np.float32, "labels": np.int64, "scores": np.float32}
    return [np.fromfile(os.path.join(folder, f"call_{n}_{name}.bin"), types[name]).reshape(shapes[name])
            for name in ("boxes", "labels", "scores")]


def compare_dumps(ours, ort, ort_dir, our_dir):
    """(worst max rel over every output of every call, problem or None). A
    detector's outputs are compared as sets of detections
    (zoo_check.compare_detections): the order of near-tied scores, and which
    of them survives a top-k cut, follow the last bits of the scores."""
    if len(ours["shapes"]) != len(ort["shapes"]):
        return None, f"{len(ours['shapes'])} calls, ORT {len(ort['shapes'])}"
    worst = 0.0
    for n, (mine, theirs) in enumerate(zip(ours["shapes"], ort["shapes"])):
        if sorted(theirs) == ["boxes", "labels", "scores"]:
            rel, problem = compare_detections(read_detections(ort_dir, n, theirs), read_detections(our_dir, n, mine),
                                              RTOL)
            if problem:
                return None, f"call {n}: {problem}"
            worst = max(worst, rel)
            continue
        for name, dims in theirs.items():
            if mine.get(name) != dims:
                return None, f"call {n} output {name}: shape {mine.get(name)}, ORT {dims}"
            file = f"call_{n}_{name}.bin"
            a = np.fromfile(os.path.join(ort_dir, file), np.float32).reshape(dims)
            b = np.fromfile(os.path.join(our_dir, file), np.float32).reshape(dims)
            rel = max_rel(a, b)
            if rel is None:
                return None, f"call {n} output {name}: cannot compare"
            worst = max(worst, rel)
    return worst, None


# --- the table -------------------------------------------------------------------


def spread(values, fmt):
    if not values:
        return "fail"
    text = fmt.format(statistics.median(values))
    return text + (f" ({fmt.format(min(values))}–{fmt.format(max(values))})" if len(values) > 1 else "")


def ratio(ours, ort):
    """median(ours) / median(ort), with the per-round ratios' range."""
    rounds = [r for r in ours if r in ort]
    if not rounds:
        return "–"
    x = statistics.median(ours[r] for r in rounds) / statistics.median(ort[r] for r in rounds)
    per = [ours[r] / ort[r] for r in rounds]
    return f"{x:.1f}" + (f" ({min(per):.1f}–{max(per):.1f})" if len(per) > 1 else "")


def summarize(result):
    return {"total_s": (result["create_ms"] + sum(result["call_ms"])) / 1e3,
            "call_ms": statistics.median(result["call_ms"]),
            "peak_mb": result["peak_rss_kb"] / 1024,
            "growth_mb": (result["peak_rss_kb"] - result["rss_before_kb"]) / 1024}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--measure", metavar="WORKLOAD_DIR")
    ap.add_argument("--dump")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1 2")
    ap.add_argument("--out")
    ap.add_argument("workloads", nargs="*")
    args = ap.parse_args()
    if args.measure:
        args.threads = int(args.threads)
        return measure(args)

    unknown = [w for w in args.workloads if w not in WORKLOADS]
    if unknown or args.rounds < 1:
        ap.error(f"unknown workload(s): {' '.join(unknown)} (known: {' '.join(WORKLOADS)})" if unknown
                 else "--rounds takes a positive integer")
    try:
        threads = [int(t) for t in args.threads.split()]
    except ValueError:
        threads = []
    if not threads or min(threads) < 1:
        ap.error(f"bad --threads {args.threads!r}")
    workloads = args.workloads or list(WORKLOADS)
    models = {w: os.path.join(ROOT, "models", WORKLOADS[w], "model.onnx") for w in workloads}
    missing = [m for m in models.values() if not os.path.exists(m)]
    if missing:
        print(f"bench_dynamic: no {', '.join(missing)} (run /usr/bin/python3 scripts/export_dynamic.py, scripts/export_quantized.py, "
              "scripts/export_zoo.py ssdlite320_mobilenet_v3_large fasterrcnn_mobilenet_v3_large_320_fpn)",
              file=sys.stderr)
        return 2
    if not os.path.isdir(os.path.join(ROOT, "scripts", "ort", "node_modules", "onnxruntime-node")):
        print("bench_dynamic: onnxruntime-node missing (scripts/setup.sh)", file=sys.stderr)
        return 2

    env = dict(os.environ)
    env.setdefault("PYTHONPATH", os.path.join(ROOT, "build", "python"))
    work = tempfile.mkdtemp(prefix="bench_dynamic.")
    lengths = {}
    for w in workloads:
        make = (encoder_workload if w.startswith("encoder") else decoder_workload if w == "decoder"
                else detector_workload)
        lengths[w] = make(os.path.join(work, w), models[w])
    variants = ["ort", "onnxfuse"]
    results, rels, errors = {}, {}, []
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_start = open("/proc/loadavg").read().split()[:3]
    t0 = time.time()
    try:
        for rnd in range(1, args.rounds + 1):
            for k, w in enumerate(workloads):
                for t in threads:
                    got = {}
                    for j in range(2):
                        variant = variants[(j + rnd + k) % 2]
                        dump = os.path.join(work, f"dump-{variant}")
                        shutil.rmtree(dump, ignore_errors=True)
                        os.makedirs(dump)
                        result, err = run_variant(variant, os.path.join(work, w), t, dump, env)
                        if err:
                            errors.append(f"{w} t{t} {variant} round {rnd}: {err}")
                            shown = err
                        else:
                            got[variant] = result
                            results.setdefault((w, t, variant), {})[rnd] = result
                            s = summarize(result)
                            shown = f"total {s['total_s']:.2f} s, median {s['call_ms']:.2f} ms/call, peak RSS {s['peak_mb']:.0f} MB"
                        print(f"bench_dynamic: [{time.time() - t0:.0f}s] round {rnd}/{args.rounds} {w} t{t} "
                              f"{variant}: {shown}", file=sys.stderr, flush=True)
                    if len(got) == 2:
                        worst, problem = compare_dumps(got["onnxfuse"], got["ort"], os.path.join(work, "dump-ort"),
                                                       os.path.join(work, "dump-onnxfuse"))
                        if problem:
                            errors.append(f"{w} t{t} round {rnd}: outputs differ from ORT: {problem}")
                        else:
                            rels.setdefault((w, t), []).append(worst)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    describe = {
        "encoder": f"bert_encoder, {ENCODER_REQUESTS} requests, lengths {ENCODER_LENGTHS[0]}–{ENCODER_LENGTHS[1]} "
                   f"({len(lengths.get('encoder', []))} distinct)",
        "encoder-dynamic": f"bert_encoder dynamically quantized (scripts/export_quantized.py), the encoder's "
                           f"requests ({len(lengths.get('encoder-dynamic', []))} distinct lengths)",
        "decoder": f"gpt2_decoder_step, {DECODER_TOKENS} tokens, past {DECODER_PAST}–{DECODER_PAST + DECODER_TOKENS - 1}",
        **{d: f"{os.path.basename(WORKLOADS[d])}, {DETECTOR_IMAGES} images 320x320 (run in stages)" for d in DETECTORS},
    }
    command = (f"scripts/bench.sh --dynamic --rounds {args.rounds} --threads \"{args.threads}\""
               + (" " + " ".join(args.workloads) if args.workloads else ""))
    lines = ["## Run-time shapes: onnxfuse Python API vs ONNX Runtime", "",
             f"Started {started}, took {(time.time() - t0) / 60:.1f} min; {os.cpu_count()} cores; load average at start "
             f"{' '.join(load_start)}, at end {' '.join(open('/proc/loadavg').read().split()[:3])}. "
             f"{args.rounds} round{'s' if args.rounds > 1 else ''}, one process per variant per round. Command: {command}.", "",
             "Workloads: " + "; ".join(f"{w}: {describe[w]}" for w in workloads) + ".", "",
             "| workload | threads | ORT total s | onnxfuse total s | total ratio | ORT ms/call | onnxfuse ms/call "
             "| ms/call ratio | ORT peak RSS MB; growth | onnxfuse peak RSS MB; growth | compiles / shapes | median load_ms "
             "| median compile_ms | max rel vs ORT | status |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    failed = False
    for w in workloads:
        for t in threads:
            ort, ours = results.get((w, t, "ort"), {}), results.get((w, t, "onnxfuse"), {})
            so = {r: summarize(x) for r, x in ort.items()}
            sf = {r: summarize(x) for r, x in ours.items()}
            col = lambda s, key, fmt: spread([x[key] for x in s.values()], fmt)  # noqa: E731
            rel = rels.get((w, t), [])
            rtol = RTOL_QUANTIZED if w.endswith("-dynamic") else RTOL
            line_failed = (not rel or max(rel) > rtol or len(rel) < args.rounds
                           or any(e.startswith(f"{w} t{t} ") for e in errors))
            failed |= line_failed
            compiles = spread([x["compiles"] for x in ours.values()], "{:.0f}") + (
                f" / {max(x['distinct_shapes'] for x in ours.values())}" if ours else "")
            if ours and all(x.get("staged_runs") for x in ours.values()):  # stages (after any schedules)
                stages = spread([x["stages_compiled"] for x in ours.values()], "{:.0f}") + " stages"
                made = [x["compiles"] for x in ours.values()]
                compiles = stages if not any(made) else spread(made, "{:.0f}") + " + " + stages
            load_ms = spread([statistics.median(x["load_ms"]) for x in ours.values() if x["load_ms"]], "{:.1f}")
            compile_ms = spread([statistics.median(x["compile_ms"]) for x in ours.values() if x["compile_ms"]], "{:.1f}")
            if not any(x["load_ms"] for x in ours.values()):  # no schedule made: stages only
                load_ms = compile_ms = "–"
            memory = lambda s: (f"{spread([x['peak_mb'] for x in s.values()], '{:.0f}')}; "  # noqa: E731
                                f"+{statistics.median(x['growth_mb'] for x in s.values()):.0f}") if s else "fail"
            lines.append(
                f"| {w} | {t} | {col(so, 'total_s', '{:.2f}')} | {col(sf, 'total_s', '{:.2f}')} "
                f"| {ratio({r: x['total_s'] for r, x in sf.items()}, {r: x['total_s'] for r, x in so.items()})} "
                f"| {col(so, 'call_ms', '{:.2f}')} | {col(sf, 'call_ms', '{:.2f}')} "
                f"| {ratio({r: x['call_ms'] for r, x in sf.items()}, {r: x['call_ms'] for r, x in so.items()})} "
                f"| {memory(so)} | {memory(sf)} | {compiles} | {load_ms} | {compile_ms} "
                f"| {f'{max(rel):.1e}' if rel else '–'} | {'FAIL' if line_failed else 'ok'} |")
    lines += ["", "total s: session creation + every call; ms/call: median call (first calls at new shapes "
              "included); growth: peak RSS minus the RSS before the session was created; compiles / shapes: "
              "schedules onnxfuse made / distinct input shapes among them (more compiles than shapes: the "
              "shape cache evicted a schedule that was needed again), or for a model run in stages the stages "
              "it compiled (after the schedules of its first shapes, for a KV cache); load_ms, compile_ms: "
              "session.stats() per schedule made; max rel: worst output of any call "
              f"against ORT's in the same round (FAIL above {RTOL:g}, {RTOL_QUANTIZED:g} for a dynamically quantized "
              f"model)."]
    print_table(lines, errors, args.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
