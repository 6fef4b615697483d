#!/usr/bin/python3
"""Turns scripts/bench.sh's raw results into a Markdown table and the issue's target verdicts.

    /usr/bin/python3 scripts/bench_table.py RAW.tsv

RAW.tsv has one line per process run, tab-separated:
    round  model  threads  variant(ort|unfused|fused|baseline)  exit_status  peak_rss_kb  last_stdout_line
For onnx-fuse the last stdout line is `run --json`'s JSON; for ORT it is compare.js --time's
"... median X ms  min Y  max Z (N runs)" line. Standard library only.
"""
import json
import os
import re
import statistics
import sys
from collections import defaultdict

GFLOP_RESNET50 = 8.2      # per inference
# fp32 per core, measured on the benchmarking machine by build/onnxfuse_peak_gflops
# (scripts/bench.sh passes it); the AVX-512 machine measured 234.
PEAK_GFLOPS_CORE = float(os.environ.get("PEAK_GFLOPS_CORE") or 234.0)
PEAK_ISA = os.environ.get("PEAK_ISA", "avx512")
# Memory read rate in GB/s at 1 thread and at all cores, measured likewise (read_gbps lines).
READ_GBPS = {int(t): float(g) for t, g in (pair.split(":") for pair in os.environ.get("READ_GBPS", "").split() if ":" in pair)}
# int8 per core, measured likewise where the CPU has AVX-512 VNNI; None elsewhere.
PEAK_INT8_GOPS_CORE = float(os.environ["PEAK_INT8_GOPS_CORE"]) if os.environ.get("PEAK_INT8_GOPS_CORE") else None
# Multiply-adds per inference at 224x224, torchvision's model documentation
# ("GFLOPS", which counts multiply-adds): the int8 table's operations are twice these.
GMAC = {"resnet18": 1.81, "resnet50": 4.09, "mobilenet_v2": 0.30, "efficientnet_b0": 0.39}
# The int8 targets: the quantized plan's time against our float plan's.
INT8_OF_FLOAT = {"resnet18": 0.4, "resnet50": 0.4, "mobilenet_v2": 0.6, "efficientnet_b0": 0.6}
INT8_OF_ORT = 0.7  # against ONNX Runtime's time on the same quantized model
QUANTIZED = re.compile(r"^(.*)-(qdq|qoperator)7?$")
MEMORY_BOUND = ("mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0")
FUSION_SPEEDUP_MODELS = ("mobilenet_v2", "efficientnet_b0")
ORT_LINE = re.compile(r"median ([0-9.]+) ms\s+min ([0-9.]+)\s+max ([0-9.]+)")


def load(path):
    """{(model, threads): {variant: [run, ...]}}, each run a dict or {'error': text}; model order kept."""
    runs = defaultdict(lambda: defaultdict(list))
    order = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t", 6)
            if len(parts) < 7:
                continue
            rnd, model, threads, variant, status, rss, last = parts
            key = (model, int(threads))
            if key not in order:
                order.append(key)
            run = {"round": int(rnd)}
            try:
                if status == "124":
                    raise ValueError("timed out (scripts/bench.sh kills a run after 900 s)")
                if status != "0":
                    raise ValueError(f"exit status {status}: {last[:120]}")
                if variant == "ort":
                    m = ORT_LINE.search(last)
                    if not m:
                        raise ValueError(f"unparsed ORT output: {last[:120]}")
                    run.update(median_ms=float(m.group(1)), min_ms=float(m.group(2)))
                else:
                    run.update(json.loads(last))
                run["rss_kb"] = int(rss) if rss.isdigit() else None
            except ValueError as e:
                run = {"round": int(rnd), "error": str(e)}
            runs[key][variant].append(run)
    return order, runs


def ok_runs(runs):
    return [r for r in runs if "error" not in r]


def median_of(runs, field):
    vals = [r[field] for r in ok_runs(runs) if r.get(field) is not None]
    return statistics.median(vals) if vals else None


def spread(runs, field="median_ms"):
    """'median (min–max)' of the per-round medians, or the first error."""
    good = ok_runs(runs)
    if not good:
        return "fail" if runs else "–"
    vals = [r[field] for r in good]
    text = f"{statistics.median(vals):.1f}"
    if len(vals) > 1:
        text += f" ({min(vals):.1f}–{max(vals):.1f})"
    if len(good) < len(runs):
        text += f" [{len(runs) - len(good)} failed]"
    return text


def paired_ratio(num_runs, den_runs):
    """Ratio of the medians, and the range of per-round ratios (the runs of a round are adjacent in time)."""
    num, den = median_of(num_runs, "median_ms"), median_of(den_runs, "median_ms")
    if num is None or den is None:
        return None, "–"
    by_round = {r["round"]: r["median_ms"] for r in ok_runs(den_runs)}
    per_round = [r["median_ms"] / by_round[r["round"]] for r in ok_runs(num_runs) if r["round"] in by_round]
    text = f"{num / den:.2f}"
    if len(per_round) > 1:
        text += f" ({min(per_round):.2f}–{max(per_round):.2f})"
    return num / den, text


def mb(nbytes):
    return f"{nbytes / 1e6:.1f}"


def main():
    order, runs = load(sys.argv[1])
    out = []
    out.append("| model | threads | ORT ms | unfused ms | fused ms | fused/ORT | fused speed-up over unfused "
               "| kernels fused (unfused) | reorders fused | arena / intermediates MB | peak RSS MB fused / ORT |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = {}
    errors = []
    for key in order:
        model, threads = key
        v = runs[key]
        ort, unf, fus = v.get("ort", []), v.get("unfused", []), v.get("fused", [])
        for variant, rs in (("ort", ort), ("unfused", unf), ("fused", fus)):
            errors += [f"{model} t{threads} {variant} round {r['round']}: {r['error']}" for r in rs if "error" in r]
        ratio, ratio_text = paired_ratio(fus, ort)
        speedup, speedup_text = paired_ratio(unf, fus)
        last_fused = (ok_runs(fus) or [{}])[-1]
        last_unfused = (ok_runs(unf) or [{}])[-1]
        kernels = f"{last_fused.get('kernels', '–')} ({last_unfused.get('kernels', '–')})"
        reorders = str(last_fused.get("reorders", "–"))
        arena, inter = last_fused.get("peak_activation_bytes"), last_fused.get("intermediate_bytes_total")
        arena_text = f"{mb(arena)} / {mb(inter)} ({100 * arena / inter:.0f}%)" if arena is not None and inter else "–"
        rss_f, rss_o = median_of(fus, "rss_kb"), median_of(ort, "rss_kb")
        rss_text = f"{rss_f / 1024:.0f} / {rss_o / 1024:.0f}" if rss_f and rss_o else "–"
        slow = sorted({f"{st['kind']} [{st['label']}] {st['impl']}" for r in ok_runs(fus) for st in r.get("slow_steps", [])})
        rows[key] = dict(ratio=ratio, speedup=speedup, fused_ms=median_of(fus, "median_ms"), slow=slow,
                         measured_slow=any("slow_steps" in r for r in ok_runs(fus)),
                         fused_min_ms=min((r["min_ms"] for r in ok_runs(fus)), default=None),
                         arena=arena, inter=inter, rss_f=rss_f, rss_o=rss_o)
        out.append(f"| {model} | {threads} | {spread(ort)} | {spread(unf)} | {spread(fus)} | {ratio_text} "
                   f"| {speedup_text} | {kernels} | {reorders} | {arena_text} | {rss_text} |")
    out.append("")
    out.append("Times: median over the rounds of each process's median latency, (min–max) of those round medians. "
               "Ratios: ratio of those medians, (min–max) of the per-round ratios. Peak RSS: GNU time %M of the "
               "whole process (ORT's includes Node.js itself), median over rounds. Arena = `peak_activation_bytes`, "
               "intermediates = `intermediate_bytes_total` of the fused plan.")
    if any(runs[key].get("baseline") for key in order):
        out.append("")
        out += before_after(order, runs, errors)
    out += roofline_table(order, runs)
    out += int8_table(order, runs)
    out.append("")
    out.append("### Targets")
    out.append("")
    out += targets(rows)
    out.append("")
    out.append("### Targets of the zoo")
    out.append("")
    out += zoo_targets(rows)
    if errors:
        out.append("")
        out.append("### Failed runs")
        out.append("")
        out += [f"- {e}" for e in errors]
    print("\n".join(out))


def int8_table(order, runs):
    """Each quantized model (NAME-qdq, ...) against NAME's float plan measured in the same run, with the
    int8 targets; nothing when no such pair was measured."""
    pairs = [(key, (m.group(1), key[1])) for key in order for m in [QUANTIZED.match(key[0])] if m]
    pairs = [(q, f) for q, f in pairs if f in runs]
    if not pairs:
        return []
    peak = f"{PEAK_INT8_GOPS_CORE:.0f} GOPS per core (vpdpbusd)" if PEAK_INT8_GOPS_CORE else "not measured (no VNNI)"
    out = ["", "### int8 against float", "",
           f"The quantized plan against the float plan of its model (`fused` of both) and ONNX Runtime on the "
           f"quantized model; GOPS: twice torchvision's multiply-adds per inference over the int8 median; "
           f"peak int8: {peak}, times the threads.", "",
           "| model | threads | int8 ms | float ms | int8/float | ORT int8 ms | int8/ORT int8 | int8 GOPS | % of int8 peak |",
           "|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for (qkey, fkey) in pairs:
        q, f = runs[qkey], runs[fkey]
        of_float, of_float_text = paired_ratio(q.get("fused", []), f.get("fused", []))
        of_ort, of_ort_text = paired_ratio(q.get("fused", []), q.get("ort", []))
        ms = median_of(q.get("fused", []), "median_ms")
        base = fkey[0]
        gops = 2 * GMAC[base] / (ms / 1000) if ms and base in GMAC else None
        pct = 100 * gops / (PEAK_INT8_GOPS_CORE * qkey[1]) if gops and PEAK_INT8_GOPS_CORE else None
        out.append(f"| {qkey[0]} | {qkey[1]} | {spread(q.get('fused', []))} | {spread(f.get('fused', []))} "
                   f"| {of_float_text} | {spread(q.get('ort', []))} | {of_ort_text} "
                   f"| {f'{gops:.0f}' if gops else '–'} | {f'{pct:.0f}%' if pct else '–'} |")
        if base in INT8_OF_FLOAT:
            met = of_float is not None and of_float <= INT8_OF_FLOAT[base]
            verdicts.append(f"- {qkey[0]} t{qkey[1]}: int8 ≤ {INT8_OF_FLOAT[base]}× float: {verdict(met)} — "
                            f"{of_float_text}; ≤ {INT8_OF_ORT}× ORT int8: "
                            f"{verdict(of_ort is not None and of_ort <= INT8_OF_ORT)} — {of_ort_text}")
    return out + [""] + verdicts


def roofline_table(order, runs):
    """Each float model's fused time against its roofline bound (S. Williams et al., CACM 2009): the larger of
    its arithmetic (`run --json`'s flops) at the FMA peak of `threads` cores and its bytes (bytes_moved: every
    step's operands once) at the memory read rate of `threads` threads, both measured by onnxfuse_peak_gflops."""
    rows = []
    for key in order:
        model, threads = key
        fus = ok_runs(runs[key].get("fused", []))
        if not fus or QUANTIZED.match(model) or "flops" not in fus[-1] or threads not in READ_GBPS:
            continue
        flops, nbytes = fus[-1]["flops"], fus[-1]["bytes_moved"]
        compute = flops / (PEAK_GFLOPS_CORE * threads) / 1e6
        memory = nbytes / READ_GBPS[threads] / 1e6
        bound, fused = max(compute, memory), median_of(fus, "median_ms")
        rows.append(f"| {model} | {threads} | {flops / 1e9:.2f} | {nbytes / 1e6:.0f} | {compute:.2f} | {memory:.2f} "
                    f"| {bound:.2f} | {fused:.2f} | {fused / bound:.2f} |")
    if not rows:
        return []
    rates = ", ".join(f"{g:.0f} GB/s at {t} thread{'s' if t > 1 else ''}" for t, g in sorted(READ_GBPS.items()))
    return ["", "### Roofline", "",
            f"Ceilings measured by `build/onnxfuse_peak_gflops`: {PEAK_GFLOPS_CORE:.0f} GFLOPS per core ({PEAK_ISA} FMA), "
            f"memory read {rates}. Bound = max(compute, memory); a plan whose operands stay in cache can beat "
            "the memory ceiling.", "",
            "| model | threads | GFLOP | MB moved | compute bound ms | memory bound ms | roofline bound ms | fused ms "
            "| fused / bound |",
            "|---|---|---|---|---|---|---|---|---|"] + rows


def before_after(order, runs, errors):
    """The fused plan against the --baseline binary's, per model and thread count:
    a change's "no model slower" check. Slower means a paired ratio above 1.05
    (the spread of two runs of one binary on this shared machine is about that)."""
    lines = ["### Before / after (--baseline)", "",
             "| model | threads | baseline fused ms | fused ms | fused/baseline | kernels baseline → now |",
             "|---|---|---|---|---|---|"]
    slower = []
    for key in order:
        model, threads = key
        base, fus = runs[key].get("baseline", []), runs[key].get("fused", [])
        errors += [f"{model} t{threads} baseline round {r['round']}: {r['error']}" for r in base if "error" in r]
        ratio, ratio_text = paired_ratio(fus, base)
        if ratio is not None and ratio > 1.05:
            slower.append(f"{model} t{threads} {ratio:.2f}")
        kb = (ok_runs(base) or [{}])[-1].get("kernels", "–")
        kf = (ok_runs(fus) or [{}])[-1].get("kernels", "–")
        lines.append(f"| {model} | {threads} | {spread(base)} | {spread(fus)} | {ratio_text} | {kb} → {kf} |")
    lines += ["", f"- no model slower than the baseline (fused/baseline ≤ 1.05): {verdict(not slower)}"
              + (" — slower: " + ", ".join(slower) if slower else "")]
    return lines


def verdict(met):
    return "**met**" if met else "**NOT met**"


def targets(rows):
    lines = []
    models = {m for m, _ in rows}

    # 1. fused <= 1.0x ORT everywhere, <= 0.85x on the memory-bound nets.
    measured = {k: r["ratio"] for k, r in rows.items() if r["ratio"] is not None}
    if measured:
        misses = [f"{m} t{t} {x:.2f}" for (m, t), x in measured.items() if x > 1.0]
        worst = max(measured.items(), key=lambda kv: kv[1])
        unmeasured = [f"{m} t{t}" for k, r in rows.items() for (m, t) in [k] if r["ratio"] is None]
        text = (f"- fused ≤ 1.0× ORT on every model and thread count: {verdict(not misses and not unmeasured)} — "
                f"worst {worst[0][0]} t{worst[0][1]} {worst[1]:.2f}×; "
                f"{len(measured) - len(misses)}/{len(rows)} within")
        if misses:
            text += "; over: " + ", ".join(misses)
        if unmeasured:
            text += "; not measured: " + ", ".join(unmeasured)
        lines.append(text)
    elif rows:
        lines.append("- fused ≤ 1.0× ORT on every model and thread count: **NOT met** — no ratio measured (failed runs)")
    sub = {k: r["ratio"] for k, r in rows.items() if k[0] in MEMORY_BOUND}
    if sub:
        figures = ", ".join(f"{m} t{t} {x:.2f}×" if x is not None else f"{m} t{t} –" for (m, t), x in sorted(sub.items()))
        met = all(x is not None and x <= 0.85 for x in sub.values()) and set(MEMORY_BOUND) <= models
        lines.append(f"- fused ≤ 0.85× ORT on {', '.join(MEMORY_BOUND)}: {verdict(met)} — {figures}"
                     + ("" if set(MEMORY_BOUND) <= models else " (not all of them measured)"))
    else:
        lines.append(f"- fused ≤ 0.85× ORT on {', '.join(MEMORY_BOUND)}: not measured")

    # 2. resnet50, 1 thread: >= 85% of the peak per core (234 GFLOPS on the AVX-512 machine: 8.2 GFLOP in <= 41 ms).
    r = rows.get(("resnet50", 1))
    if r and r["fused_ms"]:
        gflops = GFLOP_RESNET50 / (r["fused_ms"] / 1000)
        pct = 100 * gflops / PEAK_GFLOPS_CORE
        best = GFLOP_RESNET50 / (r["fused_min_ms"] / 1000) if r["fused_min_ms"] else None
        lines.append(f"- resnet50 at 1 thread ≥ 85% of {PEAK_GFLOPS_CORE:.0f} GFLOPS/core ({PEAK_ISA} FMA peak measured) "
                     f"({GFLOP_RESNET50} GFLOP in ≤ {GFLOP_RESNET50 / (0.85 * PEAK_GFLOPS_CORE) * 1000:.0f} ms): "
                     f"{verdict(pct >= 85)} — median {r['fused_ms']:.1f} ms = {gflops:.0f} GFLOPS = {pct:.0f}% of peak"
                     + (f" (fastest single iteration {r['fused_min_ms']:.1f} ms = {best:.0f} GFLOPS = "
                        f"{100 * best / PEAK_GFLOPS_CORE:.0f}%)" if best else ""))
    else:
        lines.append("- resnet50 at 1 thread ≥ 85% of peak: not measured")

    # 3. fused >= 1.3x faster than --no-fuse on mobilenet_v2 and efficientnet_b0.
    sub = {k: r["speedup"] for k, r in rows.items() if k[0] in FUSION_SPEEDUP_MODELS}
    if sub:
        figures = ", ".join(f"{m} t{t} {x:.2f}×" if x is not None else f"{m} t{t} –" for (m, t), x in sorted(sub.items()))
        met = all(x is not None and x >= 1.3 for x in sub.values()) and set(FUSION_SPEEDUP_MODELS) <= models
        lines.append(f"- fused ≥ 1.3× faster than --no-fuse on {', '.join(FUSION_SPEEDUP_MODELS)}: {verdict(met)} — "
                     f"{figures}" + ("" if set(FUSION_SPEEDUP_MODELS) <= models else " (not all of them measured)"))
    else:
        lines.append(f"- fused ≥ 1.3× faster than --no-fuse on {', '.join(FUSION_SPEEDUP_MODELS)}: not measured")

    # 4. arena <= 40% of intermediates on resnet50.
    r = rows.get(("resnet50", 1)) or rows.get(("resnet50", 2))
    if r and r["arena"] is not None and r["inter"]:
        pct = 100 * r["arena"] / r["inter"]
        lines.append(f"- resnet50 activation arena ≤ 40% of the sum of intermediates: {verdict(pct <= 40)} — "
                     f"{mb(r['arena'])} MB / {mb(r['inter'])} MB = {pct:.0f}%")
    else:
        lines.append("- resnet50 activation arena ≤ 40% of the sum of intermediates: not measured")

    # 5. peak RSS of `run` below ORT's, per model and thread count.
    rss = {k: (r["rss_f"], r["rss_o"]) for k, r in rows.items() if r["rss_f"] and r["rss_o"]}
    if rss:
        misses = [f"{m} t{t} {f / 1024:.0f} vs {o / 1024:.0f} MB" for (m, t), (f, o) in rss.items() if f >= o]
        worst = max(rss.items(), key=lambda kv: kv[1][0] / kv[1][1])
        (wm, wt), (wf, wo) = worst
        text = (f"- peak RSS of `run` (fused) below ORT's node process for the same model: "
                f"{verdict(not misses and len(rss) == len(rows))} — {len(rss) - len(misses)}/{len(rows)} below; "
                f"highest ratio {wm} t{wt} {wf / 1024:.0f} vs {wo / 1024:.0f} MB ({wf / wo:.2f}×)")
        if misses:
            text += "; not below: " + ", ".join(misses)
        lines.append(text)
    else:
        lines.append("- peak RSS of `run` below ORT's: not measured")
    return lines


def zoo_targets(rows):
    """fused <= 1.0x ORT on every zoo model (models/zoo/...), <= 0.8x on
    the eleven, and no step of any fused plan on a slow implementation
    (`run --json`'s slow_steps: oneDNN's reference kernels, gemm convolutions)."""
    lines = []
    for name, limit, pick in (("zoo models", 1.0, lambda m: m.startswith("zoo/")),
                              ("the eleven", 0.8, lambda m: not m.startswith("zoo/"))):
        sub = {k: r["ratio"] for k, r in rows.items() if pick(k[0])}
        if not sub:
            lines.append(f"- fused ≤ {limit:.1f}× ORT on {name}: not measured")
            continue
        misses = [f"{m} t{t} {x:.2f}" if x is not None else f"{m} t{t} –" for (m, t), x in sub.items()
                  if x is None or x > limit]
        text = f"- fused ≤ {limit:.1f}× ORT on {name}: {verdict(not misses)} — {len(sub) - len(misses)}/{len(sub)} within"
        lines.append(text + ("; over or not measured: " + ", ".join(misses) if misses else ""))
    slow = [f"{m} t{t}: {s}" for (m, t), r in rows.items() for s in r["slow"]]
    unmeasured = [f"{m} t{t}" for (m, t), r in rows.items() if not r["measured_slow"]]
    lines.append(f"- no step on a slow implementation (ref, gemm convolution): {verdict(not slow and not unmeasured)}"
                 + (" — " + "; ".join(slow) if slow else "")
                 + ("; not measured (no successful fused run): " + ", ".join(unmeasured) if unmeasured else ""))
    return lines


if __name__ == "__main__":
    main()
