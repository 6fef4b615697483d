#!/usr/bin/env python3
"""Fusion decided once: the fuse job's report and the executed steps agree.

    fusion_agreement.py ONNX_FUSE MODEL_DIR WORK_DIR

With --strategy pattern, fuses MODEL_DIR/model.onnx (the JSON report) and runs
it (`run --json`, whose steps name the group that emitted them and its
library pattern), then checks:
  - every group the report names with a pattern (rule "pattern:<name>") is
    executed by at least one step, and every step of it carries that pattern;
    a pattern with a kernel of its own (Gelu, LayerNormalization, the SE*;
    MatMulAddGelu's Gelu) runs it;
  - every step's group is a group of the report (a fused group, or a node left
    alone, which the report lists under not_fused), with that group's pattern
    or none; steps outside any group are only copies (reorders) of graph outputs.
The same holds for the model written as a plan file and run from it (the plan
file stores each group's pattern). First, the checker must reject tampered
copies of the run, so that it cannot pass by checking nothing.
"""
import copy
import json
import os
import subprocess
import sys

PREFIX = "pattern:"
# The step kind of the patterns the backend lowers by name with a kernel of
# their own (src/backend/lower/fused/pattern_lowerings.h). MatMulAddGelu's MatMul and
# Add run as a matmul step (or a split of it), its Gelu, named, as our kernel.
OWN_KERNEL = {"Gelu": "gelu", "LayerNormalization": "layer_norm", "SEReluSigmoid": "squeeze_excite",
              "SEReluHardSigmoid": "squeeze_excite", "SESiLUSigmoid": "squeeze_excite",
              "SESiLUHardSigmoid": "squeeze_excite", "MatMulAddGelu": "gelu"}


def run(cmd, out_path):
    with open(out_path, "w") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"FAIL {' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr}")


def disagreements(report, run_json):
    """The ways the run's steps and the report's groups disagree (empty: none)."""
    problems = []
    named = {}  # report group id -> pattern name, for groups a library pattern fused
    ids = set()
    for g in report["groups"]:
        ids.add(g["id"])
        if g["rule"].startswith(PREFIX):
            named[g["id"]] = g["rule"][len(PREFIX):]
    ids.update(entry["group"] for entry in report["not_fused"])
    steps = run_json["steps"]
    if not steps:
        problems.append("the run lists no steps")
    executed = {}
    for i, s in enumerate(steps):
        group, pattern = s["group"], s["pattern"]
        if group is None:
            if s["kind"] != "reorder" or pattern is not None:
                problems.append(f"step {i} ({s['kind']} {s['label']}) belongs to no group")
            continue
        if group not in ids:
            problems.append(f"step {i} ({s['kind']} {s['label']}) names group {group}, not a group of the report")
        if pattern != named.get(group):
            problems.append(f"step {i} ({s['kind']} {s['label']}) of group {group} says pattern {pattern}, "
                            f"the report {named.get(group)}")
        executed.setdefault(group, []).append(i)
    for group, pattern in sorted(named.items()):
        if group not in executed:
            problems.append(f"group {group} ({pattern}) of the report is executed by no step")
        elif pattern in OWN_KERNEL and all(steps[i]["kind"] != OWN_KERNEL[pattern] for i in executed[group]):
            problems.append(f"group {group} ({pattern}) runs no {OWN_KERNEL[pattern]} step")
    return problems


def self_test(report, run_json):
    """The checker rejects runs that disagree with the report."""
    steps = run_json["steps"]
    # A step of a pattern group when there is one (squeezenet has none), else any step of a group.
    candidates = [i for i, s in enumerate(steps) if s["pattern"] is not None and s["kind"] != "reorder"]
    candidates += [i for i, s in enumerate(steps) if s["group"] is not None and s["kind"] != "reorder"]
    if not candidates:
        sys.exit("FAIL the run executes no step of a fusion group: nothing to check")
    i = candidates[0]
    tampered = []
    t = copy.deepcopy(run_json)
    t["steps"][i]["pattern"] = "NotAPattern"
    tampered.append(("a step's pattern renamed", t))
    t = copy.deepcopy(run_json)
    t["steps"][i]["group"] = max(s["group"] or 0 for s in steps) + 1000
    tampered.append(("a step moved to an unknown group", t))
    t = copy.deepcopy(run_json)
    t["steps"][i]["group"] = None
    tampered.append(("a step without a group", t))
    if steps[i]["pattern"] is not None:
        t = copy.deepcopy(run_json)
        t["steps"] = [s for s in t["steps"] if s["group"] != steps[i]["group"]]
        tampered.append(("a pattern group's steps dropped", t))
    # Each pattern with a kernel of its own, its first group run as if op by op.
    for pattern, kind in sorted(OWN_KERNEL.items()):
        own = [s for s in steps if s["pattern"] == pattern and s["kind"] == kind]
        if not own:
            continue
        t = copy.deepcopy(run_json)
        for s in t["steps"]:
            if s["group"] == own[0]["group"] and s["kind"] == kind:
                s["kind"] = "eltwise"
        tampered.append((f"a {pattern} group without its {kind} step", t))
    for what, t in tampered:
        if not disagreements(report, t):
            sys.exit(f"FAIL self-test: the checker accepts a run with {what}")


def main():
    onnx_fuse, model_dir, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    model = os.path.join(model_dir, "model.onnx")
    name = os.path.basename(os.path.normpath(model_dir))
    report_path = os.path.join(work, "report.json")
    run([onnx_fuse, model, "--strategy", "pattern", "--report", report_path, "-q"], os.path.join(work, "fuse.log"))
    report = json.load(open(report_path))
    runs = {}
    run_path = os.path.join(work, "run.json")
    run([onnx_fuse, "run", model, "--strategy", "pattern", "--json", "--iterations", "1", "--warmup", "0"], run_path)
    runs["model"] = json.load(open(run_path))
    plan = os.path.join(work, "model.plan")
    run([onnx_fuse, model, "--strategy", "pattern", "-o", plan, "--no-verify", "-q"], os.path.join(work, "plan.log"))
    plan_run_path = os.path.join(work, "plan_run.json")
    run([onnx_fuse, "run", plan, "--json", "--iterations", "1", "--warmup", "0"], plan_run_path)
    runs["plan file"] = json.load(open(plan_run_path))

    self_test(report, runs["model"])
    failed = False
    for source, run_json in runs.items():
        problems = disagreements(report, run_json)
        for p in problems[:20]:
            print(f"FAIL {name} ({source}): {p}")
        failed |= bool(problems)
    named = sum(g["rule"].startswith(PREFIX) for g in report["groups"])
    steps = runs["model"]["steps"]
    print(f"{name}: {named} pattern groups, {len(steps)} steps "
          f"({sum(s['pattern'] is not None for s in steps)} of pattern groups); "
          f"model and plan file {'disagree' if failed else 'agree'} with the report")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
