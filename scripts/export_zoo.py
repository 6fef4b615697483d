#!/usr/bin/python3
"""Export the model zoo: architectures beyond the eleven tuning
models of export_models.py, each with a reference input/output pair whose
outputs come from ONNX Runtime, as a standing conformance test of onnx-fuse.

Run with Debian's interpreter (/usr/bin/python3), as export_models.py:

    /usr/bin/python3 scripts/export_zoo.py [--out models/zoo] [--force] [NAME ...]

Layout (the ONNX backend-test layout, as export_models.py writes it):
    OUT/NAME/model.onnx
    OUT/NAME/test_data_set_0/input_N.pb    serialized onnx.TensorProto, N-th model input
    OUT/NAME/test_data_set_0/output_N.pb   ONNX Runtime's N-th output (scripts/ort/infer.js)
    OUT/NAME/export.json                   opset used, opsets that failed and why, shapes,
                                           export time, torch-vs-ORT difference

Every model is in eval mode, with random weights from a seed derived from its
name (no weights can be downloaded here), norm layers and biases moved away
from identity and BatchNorm statistics calibrated as in export_models.py, and
one fixed input shape. torch 1.13 cannot export every model at every opset
(e.g. GridSample needs 16), so each model tries its opsets in order (13..17
unless the table says otherwise) and keeps the first that exports and runs
in ONNX Runtime; when none does, the reasons are printed and written to
export.json, and the other models go on. scripts/zoo_check.sh runs the zoo.

Exit status: 0 when every requested model is exported (or was already, without
--force); 1 when any is not, after trying all of them, with each failed model
and its reasons listed on stderr; 2: bad usage (an unknown model name).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
import torch
import torchvision

# Shares export_models.py's helpers and zoo_check.py's measure; no
# scripts/__pycache__ left behind in the tree for importing them.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import (  # noqa: E402  (after the path is set)
    BN_TYPES,
    INPUT_SEED,
    calibrate_batchnorm,
    model_seed,
    onnx_export,
    randomize_constant_init,
    write_test_data,
)
from zoo_check import compare_outputs  # noqa: E402  (the conformance run's measure)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INFER_JS = os.path.join(ROOT, "scripts", "ort", "infer.js")
ALL_OPSETS = (13, 14, 15, 16, 17)


# --- wrappers: one tensor (or a tuple of tensors) in, tensors out ------------


class SegmentationOut(torch.nn.Module):
    """torchvision's segmentation models return {"out": ...}."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class DetectionOut(torch.nn.Module):
    """A batch-1 image tensor in; boxes, labels, scores out (torchvision's
    detectors take a list of images and return a list of dicts)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        result = self.model([x[0]])[0]
        return result["boxes"], result["labels"], result["scores"]


class LastFlow(torch.nn.Module):
    """RAFT returns the flow after every refinement; the last one is the answer."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image1, image2):
        return self.model(image1, image2)[-1]


class SmallDetector(torch.nn.Module):
    """A detector-style model: a small conv backbone, per-anchor
    class scores and boxes, then the post-processing exporters emit around
    them: ReduceMax/ArgMax over classes, TopK of the best scores, Gather of the
    boxes and labels they index, and a Greater/Where threshold on the scores.
    Outputs: boxes [10, 4], scores [10], labels [10] (int64)."""

    def __init__(self, classes=4, anchors=3, keep=10):
        super().__init__()
        self.classes, self.keep = classes, keep
        layers, channels = [], 3
        for width in (16, 32, 32):
            layers += [torch.nn.Conv2d(channels, width, 3, stride=2, padding=1), torch.nn.BatchNorm2d(width), torch.nn.ReLU()]
            channels = width
        self.backbone = torch.nn.Sequential(*layers)
        self.cls = torch.nn.Conv2d(channels, anchors * classes, 1)
        self.box = torch.nn.Conv2d(channels, anchors * 4, 1)

    def forward(self, x):
        f = self.backbone(x)
        scores = self.cls(f).permute(0, 2, 3, 1).reshape(1, -1, self.classes).sigmoid()
        boxes = self.box(f).permute(0, 2, 3, 1).reshape(1, -1, 4)
        best, label = scores.max(dim=2)
        top, index = best.topk(self.keep, dim=1)
        keep = top[0] > 0.5
        return boxes[0, index[0]], torch.where(keep, top[0], torch.zeros_like(top[0])), label[0, index[0]]


class CausalSelfAttention(torch.nn.Module):
    def __init__(self, d_model, heads, seq):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d_model, 3 * d_model)
        self.proj = torch.nn.Linear(d_model, d_model)
        # True above the diagonal: position i sees positions 0..i only.
        self.register_buffer("mask", torch.ones(seq, seq, dtype=torch.bool).triu(1))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5
        scores = scores.masked_fill(self.mask[:t, :t], float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class GPT2Block(torch.nn.Module):
    def __init__(self, d_model, heads, seq):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, heads, seq)
        self.ln2 = torch.nn.LayerNorm(d_model)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(d_model, 4 * d_model),
            torch.nn.GELU(approximate="tanh"),  # GPT-2's "gelu_new"
            torch.nn.Linear(4 * d_model, d_model),
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT2Decoder(torch.nn.Module):
    """GPT-2's decoder stack (pre-LayerNorm blocks, causal self-attention,
    tanh GELU, a final LayerNorm) on embeddings: [1, seq, d] in and out."""

    def __init__(self, layers=4, d_model=768, heads=12, seq=128):
        super().__init__()
        self.blocks = torch.nn.Sequential(*(GPT2Block(d_model, heads, seq) for _ in range(layers)))
        self.ln_f = torch.nn.LayerNorm(d_model)

    def forward(self, x):
        return self.ln_f(self.blocks(x))


# --- builders -----------------------------------------------------------------


def finish(model, calibrate=None, input_shape=None, batches=4, batch_size=8):
    """Randomize identity-like parameters, calibrate BatchNorm on CALIBRATE
    (a sub-module taking one tensor: the detectors' backbones), eval mode."""
    randomize_constant_init(model)
    target = model if calibrate is None else calibrate
    if input_shape is not None and any(isinstance(m, BN_TYPES) for m in target.modules()):
        calibrate_batchnorm(target, input_shape, batches, batch_size)
    return model.eval()


def classifier(name, shape, **kwargs):
    model = getattr(torchvision.models, name)(weights=None, **kwargs)
    return finish(model, input_shape=shape)


def segmentation(name, shape):
    model = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None)
    return finish(SegmentationOut(model), input_shape=shape, batch_size=4)


def detection(name, shape, **kwargs):
    model = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None, **kwargs)
    # Training mode needs targets, so only the backbone (where all the
    # BatchNorm is) sees calibration batches, at the transform's size.
    return finish(DetectionOut(model), calibrate=model.backbone, input_shape=shape, batch_size=4)


def video(name, shape):
    model = getattr(torchvision.models.video, name)(weights=None)
    return finish(model, input_shape=shape, batches=2, batch_size=4)


def raft(name, shape):
    model = getattr(torchvision.models.optical_flow, name)(weights=None)
    return finish(LastFlow(model))  # instance norm and no norm: nothing to calibrate


def bert_encoder(layers=4, d_model=768, heads=12, ffn=3072):
    layer = torch.nn.TransformerEncoderLayer(
        d_model, heads, ffn, dropout=0.1, activation="gelu", batch_first=True
    )
    model = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    # TransformerEncoder deep-copies one layer: every layer would hold the
    # same weights, and a fusion bug that mixed up layers would go unseen.
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() > 1:
                torch.nn.init.xavier_uniform_(param)
            else:
                param.uniform_(-0.2, 0.2)
    return finish(model)


def gpt2_decoder():
    return finish(GPT2Decoder())


def small_detector():
    return finish(SmallDetector(), input_shape=(1, 3, 64, 64))


class Recurrent(torch.nn.Module):
    """A torch.nn.LSTM or GRU with its initial states as inputs and every
    result as an output: y, h_n (and c_n): ONNX LSTM / GRU nodes, one per
    layer, with the layers joined by Transpose / Reshape."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x, *states):
        y, state = self.layer(x, states if len(states) > 1 else states[0])
        return (y,) + (state if isinstance(state, tuple) else (state,))


def recurrent(kind):
    layer = getattr(torch.nn, kind)(RNN_INPUT, RNN_HIDDEN, num_layers=2, bidirectional=True)
    return Recurrent(layer).eval()


# The recurrent models: 2 layers, bidirectional, 50 time steps of
# batch 1, input 64, hidden 128, with initial states. scripts/test.sh exports
# them into models/rnn (export_zoo.py --out models/rnn lstm_bidir2 gru_bidir2)
# for ctest e2e.rnn; scripts/bench.sh --rnn times them.
RNN_STEPS, RNN_INPUT, RNN_HIDDEN = 50, 64, 128


# name: (builder, input shapes, input names, output names, opsets to try, seed name)
# The two BERT encoders share one seed, so they hold the same weights and
# differ only in how LayerNorm is spelled (opset 14: ReduceMean/Sub/Pow/...;
# opset 17: LayerNormalization).
def zoo():
    img224 = (1, 3, 224, 224)
    det320 = (1, 3, 320, 320)
    seq = (1, 128, 768)
    rnn_x, rnn_state = (RNN_STEPS, 1, RNN_INPUT), (4, 1, RNN_HIDDEN)  # states: 2 layers x 2 directions
    return {
        "maxvit_t": (lambda: classifier("maxvit_t", img224), [img224], ["input"], ["output"], ALL_OPSETS, None),
        # Shifted-window attention: its mask is added as [1, W, H, 49, 49] + [1, W, 1, 49, 49].
        "swin_t": (lambda: classifier("swin_t", img224), [img224], ["input"], ["output"], ALL_OPSETS, None),
        "efficientnet_v2_s": (lambda: classifier("efficientnet_v2_s", img224), [img224], ["input"], ["output"], ALL_OPSETS, None),
        "mnasnet1_0": (lambda: classifier("mnasnet1_0", img224), [img224], ["input"], ["output"], ALL_OPSETS, None),
        "inception_v3": (
            lambda: classifier("inception_v3", (1, 3, 299, 299), aux_logits=False, init_weights=True),
            [(1, 3, 299, 299)], ["input"], ["output"], ALL_OPSETS, None,
        ),
        "wide_resnet50_2": (lambda: classifier("wide_resnet50_2", img224), [img224], ["input"], ["output"], ALL_OPSETS, None),
        "deeplabv3_mobilenet_v3_large": (
            lambda: segmentation("deeplabv3_mobilenet_v3_large", img224), [img224], ["input"], ["out"], ALL_OPSETS, None,
        ),
        "fcn_resnet50": (lambda: segmentation("fcn_resnet50", img224), [img224], ["input"], ["out"], ALL_OPSETS, None),
        "ssdlite320_mobilenet_v3_large": (
            lambda: detection("ssdlite320_mobilenet_v3_large", det320),
            [det320], ["image"], ["boxes", "labels", "scores"], ALL_OPSETS, None,
        ),
        # Random weights saturate the box head's softmax (one class at 1.0,
        # the rest near 0): at the default 0.05 threshold one box is left;
        # at 0 every box NMS keeps (29 for this input).
        "fasterrcnn_mobilenet_v3_large_320_fpn": (
            lambda: detection("fasterrcnn_mobilenet_v3_large_320_fpn", det320, box_score_thresh=0.0),
            [det320], ["image"], ["boxes", "labels", "scores"], ALL_OPSETS, None,
        ),
        "r2plus1d_18": (lambda: video("r2plus1d_18", (1, 3, 8, 112, 112)), [(1, 3, 8, 112, 112)], ["input"], ["output"], ALL_OPSETS, None),
        "raft_small": (
            lambda: raft("raft_small", None),
            [(1, 3, 128, 128), (1, 3, 128, 128)], ["image1", "image2"], ["flow"], ALL_OPSETS, None,
        ),
        "bert_encoder_op14": (bert_encoder, [seq], ["input"], ["output"], (14,), "bert_encoder"),
        "bert_encoder_op17": (bert_encoder, [seq], ["input"], ["output"], (17,), "bert_encoder"),
        "gpt2_decoder": (gpt2_decoder, [seq], ["input"], ["output"], (14, 15, 16, 17), None),
        "detector_small": (small_detector, [(1, 3, 64, 64)], ["image"], ["boxes", "scores", "labels"], ALL_OPSETS, None),
        "lstm_bidir2": (
            lambda: recurrent("LSTM"), [rnn_x, rnn_state, rnn_state], ["input", "h0", "c0"], ["output", "h_n", "c_n"],
            (14,), None,
        ),
        "gru_bidir2": (
            lambda: recurrent("GRU"), [rnn_x, rnn_state], ["input", "h0"], ["output", "h_n"], (14,), None,
        ),
    }


MODELS = zoo()


# --- export -------------------------------------------------------------------


def first_line(exc):
    text = str(exc).strip().split("\n")[0] or repr(exc)
    return f"{type(exc).__name__}: {text[:300]}"


def as_arrays(outputs):
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    return [t.detach().numpy() for t in outputs]


def read_outputs(data_dir, count):
    arrays = []
    for n in range(count):
        tensor = onnx.TensorProto()
        with open(os.path.join(data_dir, f"output_{n}.pb"), "rb") as f:
            tensor.ParseFromString(f.read())
        arrays.append(onnx.numpy_helper.to_array(tensor))
    return arrays


def export_each(tool, names, export_one, width):
    """Tries export_one(name) for every name, whatever happens to the others:
    it returns None when the model is exported, else why not, and an
    exception is that model's failure too (printed as FAILED, `width` the
    name's column). Lists the models not exported, with why, on stderr.
    Returns 0 when all were exported, else 1 (export_zoo.py and
    export_dynamic.py's exit status)."""
    not_exported = []
    for name in names:
        try:
            why = export_one(name)
        except Exception as exc:  # noqa: BLE001  (reported below, then exit 1)
            why = first_line(exc)
            print(f"{name:{width}s} FAILED: {why}", flush=True)
        if why is not None:
            not_exported.append((name, why))
    if not_exported:
        print(f"{tool}: {len(not_exported)} of {len(names)} models not exported:", file=sys.stderr)
        for name, why in not_exported:
            print(f"  {name}: {why}", file=sys.stderr)
        return 1
    return 0


def export(name, out_dir, force):
    """Exports one model. Returns None when it is exported (or its files
    exist), else why not: one line per failed opset or the exception."""
    build, shapes, input_names, output_names, opsets, seed_name = MODELS[name]
    model_dir = os.path.join(out_dir, name)
    data_dir = os.path.join(model_dir, "test_data_set_0")
    model_path = os.path.join(model_dir, "model.onnx")
    manifest_path = os.path.join(model_dir, "export.json")
    done = [model_path] + [os.path.join(data_dir, f"output_{n}.pb") for n in range(len(output_names))]
    if not force and all(os.path.exists(p) for p in done):
        print(f"{name:38s} exists, skipped (--force to redo)")
        return None

    start = time.time()
    torch.manual_seed(model_seed(seed_name or name))
    model = build()
    # One fixed input per model, drawn from the same seed as export_models.py's.
    generator = torch.Generator().manual_seed(INPUT_SEED)
    inputs = tuple(torch.randn(*shape, generator=generator) for shape in shapes)
    with torch.no_grad():
        torch_outputs = as_arrays(model(*inputs))

    os.makedirs(data_dir, exist_ok=True)
    for stale in os.listdir(data_dir):
        os.remove(os.path.join(data_dir, stale))
    write_test_data(data_dir, "input", list(zip(input_names, (x.numpy() for x in inputs))))
    # Export to a temporary name and rename last, as export_models.py does.
    tmp_path = model_path + ".tmp"
    failures = []
    opset = None
    for candidate in opsets:
        try:
            onnx_export(model, inputs, tmp_path, candidate, input_names, output_names)
            onnx.checker.check_model(tmp_path, full_check=True)
            ort = subprocess.run(
                ["node", INFER_JS, tmp_path, data_dir], capture_output=True, text=True, timeout=900
            )
            if ort.returncode != 0:
                raise RuntimeError(f"ONNX Runtime: {(ort.stderr or ort.stdout).strip().splitlines()[-1]}")
            opset = candidate
            break
        except Exception as exc:  # noqa: BLE001  (any exporter failure: try the next opset)
            failures.append({"opset": candidate, "error": first_line(exc)})
            print(f"{name:38s} opset {candidate}: {first_line(exc)}", flush=True)
    seconds = time.time() - start
    manifest = {"name": name, "opset": opset, "failed_opsets": failures, "export_seconds": round(seconds, 1)}
    if opset is None:
        if os.path.exists(tmp_path):
            os.remove(tmp_path)
        manifest["exported"] = False
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=1)
        tried = ", ".join(str(o) for o in opsets)
        print(f"{name:38s} NOT EXPORTED: no opset of {tried} works with torch {torch.__version__}; see {manifest_path}", flush=True)
        return "; ".join(f"opset {f['opset']}: {f['error']}" for f in failures) or f"no opset of {tried} tried"

    ort_outputs = read_outputs(data_dir, len(output_names))
    # torch against ORT, by the conformance run's measure: a sanity check of
    # the export, not a verdict.
    torch_vs_ort, problem = compare_outputs(
        list(zip(output_names, ort_outputs)), list(zip(output_names, torch_outputs)), 1e-4
    )
    degenerate = [n for n, o in zip(output_names, ort_outputs)
                  if o.dtype.kind == "f" and (o.size == 0 or not np.isfinite(o).all() or float(o.std()) == 0.0)]
    os.replace(tmp_path, model_path)
    proto = onnx.load(model_path, load_external_data=False)
    manifest.update(
        exported=True,
        nodes=len(proto.graph.node),
        size_mb=round(os.path.getsize(model_path) / 1e6, 1),
        inputs={n: list(s) for n, s in zip(input_names, shapes)},
        outputs={n: list(o.shape) for n, o in zip(output_names, ort_outputs)},
        torch_vs_ort_max_rel=None if torch_vs_ort is None else float(f"{torch_vs_ort:.3e}"),
        torch_vs_ort_problem=problem,
        degenerate_outputs=degenerate,
        torch=torch.__version__,
        torchvision=torchvision.__version__,
    )
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
    worst = float("inf") if torch_vs_ort is None else torch_vs_ort
    note = f"  degenerate: {','.join(degenerate)}" if degenerate else ""
    print(
        f"{name:38s} opset {opset}  {manifest['nodes']:5d} nodes  {manifest['size_mb']:7.1f} MB  "
        f"{seconds:6.1f} s  torch-vs-ORT {worst:.1e}{note}",
        flush=True,
    )
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"models to export (default: all): {' '.join(MODELS)}")
    parser.add_argument("--out", default=os.path.join("models", "zoo"), help="output folder (default: models/zoo)")
    parser.add_argument("--force", action="store_true", help="re-export models whose files exist")
    args = parser.parse_args()

    unknown = [n for n in args.names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s): {' '.join(unknown)}")
    return export_each("export_zoo", args.names or list(MODELS), lambda name: export(name, args.out, args.force), 38)


if __name__ == "__main__":
    sys.exit(main())
