#!/usr/bin/python3
"""The detectors through onnxfuse.InferenceSession against ONNX Runtime:
torchvision's SSDlite320 and Faster R-CNN (mobilenet_v3_large_320_fpn) as
scripts/export_zoo.py exports them (random weights), whose shapes follow
values (NonZero, TopK, NonMaxSuppression, an If decided at run time), so
the session runs them in stages (src/session/staged_model.h).

    tests/e2e/detectors.py ONNX_FUSE ZOO_DIR WORK_DIR

Each detector, from its model and from its plan file (ONNX_FUSE MODEL -o
WORK_DIR/NAME.plan: the prepared model, to run in stages), in one session at
1 thread, on three images: the export's
test image, uniform noise, and the test image
again; the session's boxes, labels and scores against ONNX Runtime's at
the same image (scripts/ort/infer.js), as sets of detections
(zoo_check.compare_detections: ties at the top-k cut may fall either way)
within the zoo's tolerance (zoo_check.tolerance) for that image's own
torch-vs-ORT spread: the model rebuilt in torch as export_zoo.py builds it
(same seed) and run on the image. On noise, torch and ORT give Faster
R-CNN scores 1.3e-4 of the top score apart, where they agree to 1e-18 on the
test image. An image where ORT
finds no detection must give empty outputs of ranks 2, 1, 1. The session
must have run every call in stages and found its stages in the cache on the
repeated image. `ONNX_FUSE run` of the plan on the test image must give
ORT's detections too. A missing model, module or tool fails; nothing is
skipped.

Exit status: 0 every call matches; 1 otherwise.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from zoo_check import compare_detections, tolerance  # noqa: E402

RTOL = 1e-4
INFER_JS = os.path.join(ROOT, "scripts", "ort", "infer.js")
DETECTORS = ["ssdlite320_mobilenet_v3_large", "fasterrcnn_mobilenet_v3_large_320_fpn"]


def ort_outputs(model, image, folder):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(image, "image").SerializeToString())
    p = subprocess.run(["node", INFER_JS, model, folder, "--threads", "1"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("ONNX Runtime failed on %s: %s" % (model, p.stderr.strip()[-300:]))
    return [numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, "output_%d.pb" % i))) for i in range(3)]


def torch_outputs(name, image_list):
    """The detector rebuilt in torch exactly as export_zoo.py exports it (its
    seed, random weights), run on each image: boxes, labels, scores."""
    import torch
    import export_zoo
    torch.manual_seed(export_zoo.model_seed(name))
    model = export_zoo.MODELS[name][0]()
    with torch.no_grad():
        return [[np.asarray(o) for o in export_zoo.as_arrays(model(torch.from_numpy(image.copy())))] for image in image_list]


def detection_spread(ref, other):
    """How far two sets of detections lie apart, as compare_detections
    measures it: its worst error at the smallest tolerance (a factor-2 ladder
    from 1e-7 to 1e-2) at which every detection matches; inf if none does."""
    rtol = 1e-7
    while rtol <= 1e-2:
        worst, problem = compare_detections(ref, other, rtol)
        if not problem:
            return worst
        rtol *= 2
    return float("inf")


def images(test_image):
    noise = np.random.default_rng(0).random(test_image.shape, dtype=np.float32)
    return [("test image", test_image), ("noise", noise), ("test image again", test_image)]


def check(label, ref, ours, tol, failures):
    worst, problem = compare_detections(ref, ours, tol)
    if not problem and len(ref[0]) == 0 and [o.ndim for o in ours] != [2, 1, 1]:
        problem = "no detection, but outputs of ranks %s" % [o.ndim for o in ours]
    print("%-4s %-62s %3d detections (ORT %3d)  worst %s" % (
        "ok" if not problem else "FAIL", label, len(ours[0]), len(ref[0]), worst))
    if problem:
        failures.append("%s: %s" % (label, problem))


def run_plan(binary, plan, image, folder):
    """`onnx-fuse run PLAN` on IMAGE, its outputs read back."""
    ins, outs = os.path.join(folder, "in"), os.path.join(folder, "out")
    os.makedirs(ins, exist_ok=True)
    with open(os.path.join(ins, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(image, "image").SerializeToString())
    p = subprocess.run([binary, "run", plan, "--inputs", ins, "--outputs", outs, "--iterations", "1",
                        "--warmup", "0", "--threads", "1"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("onnx-fuse run %s failed: %s" % (plan, p.stderr.strip()[-300:]))
    return [numpy_helper.to_array(onnx.load_tensor(os.path.join(outs, "output_%d.pb" % i))) for i in range(3)]


def check_detector(onnxfuse, binary, zoo, name, work, failures):
    folder = os.path.join(zoo, name)
    model = os.path.join(folder, "model.onnx")
    test_image = numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, "test_data_set_0", "input_0.pb")))
    plan = os.path.join(work, name + ".plan")
    os.makedirs(work, exist_ok=True)
    p = subprocess.run([binary, model, "-o", plan, "-q"], capture_output=True, text=True)
    if p.returncode != 0:
        failures.append("%s: writing its plan failed (exit %d): %s" % (name, p.returncode, p.stderr.strip()[-300:]))
        return
    refs = [ort_outputs(model, image, os.path.join(work, "%s_%d" % (name, k)))
            for k, (_, image) in enumerate(images(test_image))]
    torch_refs = torch_outputs(name, [image for _, image in images(test_image)])
    spreads = [detection_spread(ref, t) for ref, t in zip(refs, torch_refs)]
    tols = [tolerance(RTOL, spread) for spread in spreads]
    for (what, _), spread, tol in zip(images(test_image), spreads, tols):
        print("     %-62s torch vs ORT %.2g, tolerance %.2g" % ("%s, %s" % (name, what), spread, tol))
    for source in (model, plan):
        session = onnxfuse.InferenceSession(source, threads=1)
        for (what, image), ref, tol in zip(images(test_image), refs, tols):
            check("%s (%s), %s" % (name, os.path.basename(source), what), ref,
                  session.run(None, {"image": image}), tol, failures)
        stats = session.stats()
        if stats["staged_runs"] != 3 or stats["stage_hits"] == 0:
            failures.append("%s (%s): %d of 3 runs staged, %d stages found in the cache" % (
                name, os.path.basename(source), stats["staged_runs"], stats["stage_hits"]))
    check("%s (onnx-fuse run %s.plan), test image" % (name, name), refs[0],
          run_plan(binary, plan, test_image, os.path.join(work, name + "_run")), tols[0], failures)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    binary, zoo, work = sys.argv[1:]
    import onnxfuse
    failures = []
    for name in DETECTORS:
        check_detector(onnxfuse, binary, zoo, name, work, failures)
    for failure in failures:
        print("FAIL " + failure)
    print("detectors: %s" % ("FAIL" if failures else "OK"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
