#!/usr/bin/python3
"""Export transformer workloads whose input shapes change from call to call:
a BERT-shaped encoder over a symbolic sequence length and a GPT-2-shaped
decoder step with a key/value cache of symbolic length. They are the
material of scripts/bench.sh --dynamic (scripts/bench_dynamic.py), which runs
them at many shapes in one session.

Run with Debian's interpreter (/usr/bin/python3), as export_zoo.py:

    /usr/bin/python3 scripts/export_dynamic.py [--out models/dynamic] [--force] [NAME ...]

NAME (default: all):
    bert_encoder       4 post-LayerNorm encoder layers, d_model 256, 4 heads,
                       FFN 1024, exact (Erf) GELU, vocab 1000. Inputs int64
                       input_ids [1, sequence] and attention_mask [1, sequence];
                       output last_hidden_state [1, sequence, 256]. Position
                       ids are a slice of a constant arange buffer as long as
                       the input (Shape -> Gather -> Slice, as Hugging Face
                       exports have it); the attention mask becomes an additive
                       (1 - mask) * -10000 term on the scores.
    gpt2_decoder_step  one token through 4 pre-LayerNorm decoder layers,
                       d_model 256, 4 heads of 64, tanh GELU, vocab 1000, tied
                       embedding as the LM head. Inputs int64 input_ids [1, 1]
                       and float past_key_L, past_value_L [1, 4, past, 64]
                       (L = 0..3); outputs logits [1, 1, 1000] and
                       present_key_L, present_value_L [1, 4, past + 1, 64]
                       (the new key/value concatenated on axis 2). The
                       position id is past, read from past_key_0's shape.
                       Attention runs over past + 1 keys (one query needs no
                       causal mask).

Both are exported by torch.onnx.export at opset 17 (LayerNormalization as
one op) with dynamic_axes, with random weights from a seed derived from the
name (export_models.model_seed), LayerNorm scale/shift moved away from
identity (export_models.randomize_constant_init).

Layout (the ONNX backend-test layout, as export_zoo.py writes it):
    OUT/NAME/model.onnx
    OUT/NAME/test_data_set_0/input_N.pb    serialized onnx.TensorProto, N-th model input
    OUT/NAME/test_data_set_0/output_N.pb   ONNX Runtime's N-th output (scripts/ort/infer.js)
    OUT/NAME/export.json                   symbolic dims, node count, torch-vs-ORT
                                           difference at each checked length

test_data_set_0 is at the first of two lengths (bert_encoder: sequence 16
and 77; gpt2_decoder_step: past 16 and 77). The export is checked with
onnx.checker and run in ONNX Runtime at both lengths; ORT's outputs must
match torch's within 1e-4 (export_zoo.py's measure: max |diff| / max |ref|
per output).

Exit status: 0 when every requested model is exported (or was already,
without --force); 1 when any is not, after trying all of them, with each
failed model and its reason on stderr; 2: bad usage (an unknown model name).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import torch

# Shares export_models.py's and export_zoo.py's helpers; no scripts/__pycache__
# left behind in the tree for importing them.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import INPUT_SEED, model_seed, randomize_constant_init, write_test_data  # noqa: E402
from export_zoo import as_arrays, export_each, first_line, read_outputs  # noqa: E402
from zoo_check import compare_outputs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INFER_JS = os.path.join(ROOT, "scripts", "ort", "infer.js")
OPSET = 17
VOCAB = 1000
MAX_POSITIONS = 512
TORCH_VS_ORT_RTOL = 1e-4


# --- bert_encoder ---------------------------------------------------------------


class SelfAttention(torch.nn.Module):
    """BERT's self-attention: separate query/key/value projections, heads split
    with view(batch, seq, heads, head_dim) on the input's own sizes."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.heads, self.head_dim = heads, d_model // heads
        self.query = torch.nn.Linear(d_model, d_model)
        self.key = torch.nn.Linear(d_model, d_model)
        self.value = torch.nn.Linear(d_model, d_model)
        self.dense = torch.nn.Linear(d_model, d_model)

    def split(self, x):
        b, s = x.size(0), x.size(1)
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, additive_mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / self.head_dim ** 0.5 + additive_mask
        y = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3)
        return self.dense(y.reshape(x.size(0), x.size(1), -1))


class EncoderLayer(torch.nn.Module):
    def __init__(self, d_model, heads, ffn):
        super().__init__()
        self.attention = SelfAttention(d_model, heads)
        self.attention_norm = torch.nn.LayerNorm(d_model, eps=1e-12)
        self.intermediate = torch.nn.Linear(d_model, ffn)
        self.output = torch.nn.Linear(ffn, d_model)
        self.output_norm = torch.nn.LayerNorm(d_model, eps=1e-12)

    def forward(self, x, additive_mask):
        x = self.attention_norm(x + self.attention(x, additive_mask))
        return self.output_norm(x + self.output(torch.nn.functional.gelu(self.intermediate(x))))


class BertEncoder(torch.nn.Module):
    """Embeddings (word + position, LayerNorm) and post-LayerNorm layers."""

    def __init__(self, layers=4, d_model=256, heads=4, ffn=1024):
        super().__init__()
        self.word_embeddings = torch.nn.Embedding(VOCAB, d_model)
        self.position_embeddings = torch.nn.Embedding(MAX_POSITIONS, d_model)
        self.embedding_norm = torch.nn.LayerNorm(d_model, eps=1e-12)
        self.layers = torch.nn.ModuleList(EncoderLayer(d_model, heads, ffn) for _ in range(layers))
        self.register_buffer("position_ids", torch.arange(MAX_POSITIONS).unsqueeze(0), persistent=False)

    def forward(self, input_ids, attention_mask):
        position_ids = self.position_ids[:, : input_ids.size(1)]
        x = self.embedding_norm(self.word_embeddings(input_ids) + self.position_embeddings(position_ids))
        additive_mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, additive_mask)
        return x


# --- gpt2_decoder_step --------------------------------------------------------


class CachedSelfAttention(torch.nn.Module):
    """GPT-2's attention for one new token: c_attn makes q, k, v; k and v are
    appended to the cache (Concat on axis 2) and returned as the present."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.heads, self.head_dim = heads, d_model // heads
        self.c_attn = torch.nn.Linear(d_model, 3 * d_model)
        self.c_proj = torch.nn.Linear(d_model, d_model)

    def split(self, x):
        b, s = x.size(0), x.size(1)
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, past_key, past_value):
        q, k, v = self.c_attn(x).split(x.size(-1), dim=2)
        key = torch.cat([past_key, self.split(k)], dim=2)
        value = torch.cat([past_value, self.split(v)], dim=2)
        scores = torch.matmul(self.split(q), key.transpose(-1, -2)) / self.head_dim ** 0.5
        y = torch.matmul(torch.softmax(scores, dim=-1), value).permute(0, 2, 1, 3)
        return self.c_proj(y.reshape(x.size(0), x.size(1), -1)), key, value


class DecoderBlock(torch.nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(d_model)
        self.attn = CachedSelfAttention(d_model, heads)
        self.ln_2 = torch.nn.LayerNorm(d_model)
        self.c_fc = torch.nn.Linear(d_model, 4 * d_model)
        self.mlp_proj = torch.nn.Linear(4 * d_model, d_model)

    def forward(self, x, past_key, past_value):
        a, key, value = self.attn(self.ln_1(x), past_key, past_value)
        x = x + a
        x = x + self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
        return x, key, value


class GPT2DecoderStep(torch.nn.Module):
    def __init__(self, layers=4, d_model=256, heads=4):
        super().__init__()
        self.wte = torch.nn.Embedding(VOCAB, d_model)
        self.wpe = torch.nn.Embedding(MAX_POSITIONS, d_model)
        self.blocks = torch.nn.ModuleList(DecoderBlock(d_model, heads) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(d_model)
        self.register_buffer("position_ids", torch.arange(MAX_POSITIONS).unsqueeze(0), persistent=False)
        with torch.no_grad():  # GPT-2's initialization scale; N(0, 1) embeddings would swamp the blocks
            for p in (self.wte.weight, self.wpe.weight):
                p.normal_(0.0, 0.02)

    def forward(self, input_ids, *past):
        past_length = past[0].size(2)
        position_ids = self.position_ids[:, past_length: past_length + input_ids.size(1)]
        x = self.wte(input_ids) + self.wpe(position_ids)
        presents = []
        for n, block in enumerate(self.blocks):
            x, key, value = block(x, past[2 * n], past[2 * n + 1])
            presents += [key, value]
        logits = torch.matmul(self.ln_f(x), self.wte.weight.t())
        return (logits, *presents)


# --- the table ------------------------------------------------------------------

LAYERS, HEADS, HEAD_DIM = 4, 4, 64
CACHE_NAMES = [f"{kind}_{n}" for n in range(LAYERS) for kind in ("key", "value")]


def bert_inputs(length, generator):
    """input_ids [1, length] in [0, VOCAB); attention_mask [1, length] with the
    last length // 8 positions masked (padding)."""
    ids = torch.randint(0, VOCAB, (1, length), generator=generator)
    mask = torch.ones(1, length, dtype=torch.int64)
    mask[:, length - length // 8:] = 0
    return ids, mask


def gpt2_inputs(past, generator):
    """input_ids [1, 1] and a random cache of length PAST per layer (scaled
    as keys/values of unit-variance activations)."""
    ids = torch.randint(0, VOCAB, (1, 1), generator=generator)
    cache = [torch.randn(1, HEADS, past, HEAD_DIM, generator=generator) for _ in CACHE_NAMES]
    return (ids, *cache)


# name: (builder, make_inputs(length, generator), input names, output names,
#        dynamic_axes, the symbolic dims, the two checked lengths)
MODELS = {
    "bert_encoder": (
        BertEncoder, bert_inputs, ["input_ids", "attention_mask"], ["last_hidden_state"],
        {"input_ids": {1: "sequence"}, "attention_mask": {1: "sequence"}, "last_hidden_state": {1: "sequence"}},
        (16, 77),
    ),
    "gpt2_decoder_step": (
        GPT2DecoderStep, gpt2_inputs, ["input_ids"] + [f"past_{c}" for c in CACHE_NAMES],
        ["logits"] + [f"present_{c}" for c in CACHE_NAMES],
        {**{f"past_{c}": {2: "past"} for c in CACHE_NAMES}, **{f"present_{c}": {2: "past + 1"} for c in CACHE_NAMES}},
        (16, 77),
    ),
}


# --- export ---------------------------------------------------------------------


def symbolic_dims(path):
    """{value name: its dims, a symbolic one by name} of the graph's inputs and outputs."""
    graph = onnx.load(path, load_external_data=False).graph
    return {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in list(graph.input) + list(graph.output)}


def run_in_ort(model_path, data_dir, input_names, inputs):
    """Writes INPUTS to DATA_DIR, runs ONNX Runtime on them (its outputs
    land in DATA_DIR/output_N.pb); raises when it fails."""
    os.makedirs(data_dir, exist_ok=True)
    for stale in os.listdir(data_dir):
        os.remove(os.path.join(data_dir, stale))
    write_test_data(data_dir, "input", list(zip(input_names, (x.numpy() for x in inputs))))
    ort = subprocess.run(["node", INFER_JS, model_path, data_dir], capture_output=True, text=True, timeout=900)
    if ort.returncode != 0:
        raise RuntimeError(f"ONNX Runtime: {(ort.stderr or ort.stdout).strip().splitlines()[-1]}")


def export(name, out_dir, force):
    """Exports one model. Returns None when it is exported (or its files
    exist), else why not."""
    build, make_inputs, input_names, output_names, dynamic_axes, lengths = MODELS[name]
    model_dir = os.path.join(out_dir, name)
    data_dir = os.path.join(model_dir, "test_data_set_0")
    model_path = os.path.join(model_dir, "model.onnx")
    done = [model_path] + [os.path.join(data_dir, f"output_{n}.pb") for n in range(len(output_names))]
    if not force and all(os.path.exists(p) for p in done):
        print(f"{name:20s} exists, skipped (--force to redo)")
        return None

    start = time.time()
    torch.manual_seed(model_seed(name))
    model = build()
    randomize_constant_init(model)
    model.eval()
    generator = torch.Generator().manual_seed(INPUT_SEED)
    cases = [make_inputs(length, generator) for length in lengths]

    os.makedirs(model_dir, exist_ok=True)
    # Exported to a temporary name and renamed last, as export_zoo.py does.
    tmp_path = model_path + ".tmp"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's tracer warnings are noise here
            torch.onnx.export(model, cases[0], tmp_path, opset_version=OPSET, do_constant_folding=True,
                              input_names=input_names, output_names=output_names, dynamic_axes=dynamic_axes)
        onnx.checker.check_model(tmp_path, full_check=True)
        dims = symbolic_dims(tmp_path)
        fixed = [n for n, axes in dynamic_axes.items() if any(isinstance(dims[n][a], int) for a in axes)]
        if fixed:
            raise RuntimeError(f"dims meant to be symbolic came out fixed: {', '.join(fixed)}")
        # test_data_set_0 at the first length; the second in a scratch folder.
        checked = {}
        with tempfile.TemporaryDirectory(prefix="export_dynamic.") as scratch:
            for length, inputs in zip(lengths, cases):
                folder = data_dir if length == lengths[0] else os.path.join(scratch, "data")
                run_in_ort(tmp_path, folder, input_names, inputs)
                with torch.no_grad():
                    expected = as_arrays(model(*inputs))
                ort_outputs = read_outputs(folder, len(output_names))
                worst, problem = compare_outputs(list(zip(output_names, ort_outputs)),
                                                 list(zip(output_names, expected)), TORCH_VS_ORT_RTOL)
                if problem:
                    raise RuntimeError(f"length {length}: torch vs ONNX Runtime: {problem}")
                checked[length] = {"torch_vs_ort_max_rel": float(f"{worst:.3e}"),
                                   "outputs": {n: list(o.shape) for n, o in zip(output_names, ort_outputs)}}
    except Exception as exc:  # noqa: BLE001  (reported, then the next model)
        if os.path.exists(tmp_path):
            os.remove(tmp_path)
        return first_line(exc)
    os.replace(tmp_path, model_path)
    proto = onnx.load(model_path, load_external_data=False)
    seconds = time.time() - start
    manifest = {
        "name": name, "opset": OPSET, "nodes": len(proto.graph.node),
        "size_mb": round(os.path.getsize(model_path) / 1e6, 1),
        "dims": dims, "checked_lengths": checked, "test_data_set_0_length": lengths[0],
        "export_seconds": round(seconds, 1), "torch": torch.__version__,
    }
    with open(os.path.join(model_dir, "export.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    diffs = ", ".join(f"{length}: {c['torch_vs_ort_max_rel']:.1e}" for length, c in checked.items())
    print(f"{name:20s} opset {OPSET}  {manifest['nodes']:4d} nodes  {manifest['size_mb']:5.1f} MB  "
          f"{seconds:5.1f} s  torch-vs-ORT max rel at lengths {diffs}", flush=True)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"models to export (default: all): {' '.join(MODELS)}")
    parser.add_argument("--out", default=os.path.join(ROOT, "models", "dynamic"),
                        help="output folder (default: models/dynamic)")
    parser.add_argument("--force", action="store_true", help="re-export models whose files exist")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s): {' '.join(unknown)}")
    return export_each("export_dynamic", args.names or list(MODELS), lambda name: export(name, args.out, args.force), 20)


if __name__ == "__main__":
    sys.exit(main())
