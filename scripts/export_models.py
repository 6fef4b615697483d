#!/usr/bin/python3
"""Export real CNN/transformer architectures from torchvision to ONNX, with a
reference input/output pair per model, as test material for onnx-fuse.

Run with Debian's interpreter (/usr/bin/python3): torch, torchvision and onnx
come from Debian packages and the `python3` first on PATH does not see them.

    /usr/bin/python3 scripts/export_models.py [--out models] [--force] [--opset N] [NAME ...]

Layout (the ONNX backend-test layout, so the same tools read both):
    OUT/NAME/model.onnx
    OUT/NAME/test_data_set_0/input_0.pb    serialized onnx.TensorProto
    OUT/NAME/test_data_set_0/output_0.pb   torch's output for input_0

--opset N exports at another opset than the model's usual one (the MODELS
table: 13) into OUT/NAME-opsetN/, same layout, same weights and input, so the
exporter's spellings at both opsets can be compared (at 17: LayerNormalization
and HardSwish are single ops; BatchNormalization-15 may write training_mode).

No weights can be downloaded here, so every model gets random weights from a
seed derived from its name alone: a model is bit-for-bit reproducible whether
it is exported alone or together with the others.
"""

import argparse
import os
import sys
import time
import warnings
import zlib

import onnx
import onnx.numpy_helper
import torch
import torchvision

# Every model exports at opset 13 with torch 1.13 (checked for all of them,
# including vit_b_16 and convnext_tiny). The table keeps a per-model opset so
# a model that ever needs a newer one can say so here, not in special code.
MODELS = {
    "resnet18": 13,
    "resnet50": 13,
    "mobilenet_v2": 13,
    "mobilenet_v3_large": 13,
    "efficientnet_b0": 13,
    "densenet121": 13,
    "squeezenet1_1": 13,
    "googlenet": 13,
    "regnet_y_400mf": 13,
    "convnext_tiny": 13,
    "vit_b_16": 13,
}

# googlenet's auxiliary classifiers only exist for training and would be dead
# weight in the file; init_weights=True is its default anyway, but without
# weights torchvision warns unless it is spelled out.
BUILD_KWARGS = {"googlenet": {"aux_logits": False, "init_weights": True}}

INPUT_SHAPE = (1, 3, 224, 224)
INPUT_SEED = 20261  # one fixed reference image for every model
CALIBRATION_BATCHES = 4
CALIBRATION_BATCH_SIZE = 8

NORM_TYPES = (
    torch.nn.BatchNorm1d,
    torch.nn.BatchNorm2d,
    torch.nn.BatchNorm3d,
    torch.nn.LayerNorm,
    torch.nn.GroupNorm,
)
BN_TYPES = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)


def model_seed(name):
    # crc32, not hash(): Python salts str hashes per process.
    return zlib.crc32(name.encode())


@torch.no_grad()
def randomize_constant_init(model):
    """Replace initializations that make a layer (nearly) an identity or a zero.

    Freshly built, every norm layer has scale 1 and shift 0, every bias is 0,
    ViT's classifier head is all zeros (its output would be 0 for any input, so
    any comparison would pass) and ConvNeXt's layer scale is 1e-6 (its blocks
    would vanish). A fusion bug that drops a shift, a bias or a scale would go
    unseen against such weights.
    """
    norm_params = set()
    for module in model.modules():
        if isinstance(module, NORM_TYPES) and getattr(module, "weight", None) is not None:
            module.weight.uniform_(0.5, 1.5)
            module.bias.uniform_(-0.2, 0.2)
            norm_params.update((id(module.weight), id(module.bias)))
    for param in model.parameters():
        # A one-element parameter is trivially "constant" and is more likely a
        # deliberate scalar (a temperature, a PReLU slope) than a placeholder.
        if id(param) in norm_params or param.numel() < 2:
            continue
        flat = param.view(-1)
        if bool((flat == flat[0]).all()):
            param.uniform_(-0.2, 0.2)


@torch.no_grad()
def calibrate_batchnorm(model, input_shape=INPUT_SHAPE, batches=CALIBRATION_BATCHES, batch_size=CALIBRATION_BATCH_SIZE):
    """Give BatchNorm running statistics that match the activations it will see.

    Random scale and shift change every downstream activation, so the running
    mean/var left by construction (0 and 1) would be wrong and the network's
    output would blow up or saturate. momentum=None makes BatchNorm keep a
    plain cumulative average over the batches, independent of their count.
    model takes one tensor of input_shape (batch dimension replaced by
    batch_size); scripts/export_zoo.py passes other shapes and sub-modules.
    """
    bns = [m for m in model.modules() if isinstance(m, BN_TYPES)]
    if not bns:
        return
    momenta = [bn.momentum for bn in bns]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    for _ in range(batches):
        model(torch.randn(batch_size, *input_shape[1:]))
    # Restore the usual momentum: it is written into the exported node.
    for bn, momentum in zip(bns, momenta):
        bn.momentum = momentum
    model.eval()


def build(name):
    torch.manual_seed(model_seed(name))
    model = getattr(torchvision.models, name)(weights=None, **BUILD_KWARGS.get(name, {}))
    randomize_constant_init(model)
    calibrate_batchnorm(model)
    return model.eval()


def check_export(name, model, path):
    """Fail loudly if the file is not what onnx-fuse's tests rely on."""
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    bn_nodes = [n for n in proto.graph.node if n.op_type == "BatchNormalization"]
    bn_modules = sum(isinstance(m, BN_TYPES) for m in model.modules())
    # torch's default (EVAL) export folds BN into Conv; TRAINING exports
    # batch-statistics BN. Only PRESERVE on an eval model keeps inference BN.
    if len(bn_nodes) != bn_modules:
        raise RuntimeError(f"{name}: {bn_modules} BatchNorm modules but {len(bn_nodes)} BatchNormalization nodes")
    for node in bn_nodes:
        for attr in node.attribute:
            if attr.name == "training_mode" and attr.i != 0:
                raise RuntimeError(f"{name}: node {node.name} has training_mode={attr.i}")
    return len(proto.graph.node)


def onnx_export(model, args, path, opset, input_names, output_names):
    """torch.onnx.export as every test model is exported: inference
    BatchNormalization kept as a node (PRESERVE on an eval model), constants
    folded, the tracer's warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's tracer warnings are noise here
        torch.onnx.export(
            model,
            args,
            path,
            opset_version=opset,
            training=torch.onnx.TrainingMode.PRESERVE,
            do_constant_folding=True,
            input_names=input_names,
            output_names=output_names,
        )


def write_test_data(data_dir, prefix, named_arrays):
    """Write DATA_DIR/PREFIX_N.pb, one serialized onnx.TensorProto per
    (name, numpy array), numbered in order: the ONNX backend-test layout."""
    os.makedirs(data_dir, exist_ok=True)
    for n, (tensor_name, array) in enumerate(named_arrays):
        proto = onnx.numpy_helper.from_array(array, tensor_name)
        with open(os.path.join(data_dir, f"{prefix}_{n}.pb"), "wb") as f:
            f.write(proto.SerializeToString())


def model_dir_name(name, opset):
    """NAME for the model's usual opset, NAME-opsetN for another one."""
    return name if opset == MODELS[name] else f"{name}-opset{opset}"


def export(name, out_dir, force, opset=None):
    opset = MODELS[name] if opset is None else opset
    model_dir = os.path.join(out_dir, model_dir_name(name, opset))
    data_dir = os.path.join(model_dir, "test_data_set_0")
    model_path = os.path.join(model_dir, "model.onnx")
    input_path = os.path.join(data_dir, "input_0.pb")
    output_path = os.path.join(data_dir, "output_0.pb")
    if not force and all(os.path.exists(p) for p in (model_path, input_path, output_path)):
        print(f"{model_dir_name(name, opset):20s} exists, skipped (--force to redo)")
        return

    start = time.time()
    model = build(name)
    x = torch.randn(*INPUT_SHAPE, generator=torch.Generator().manual_seed(INPUT_SEED))
    with torch.no_grad():
        y = model(x)
    if not torch.isfinite(y).all() or float(y.std()) == 0.0:
        raise RuntimeError(f"{name}: degenerate reference output (non-finite or constant)")

    os.makedirs(data_dir, exist_ok=True)
    # Export to a temporary name and rename last: an interrupted run must not
    # leave a model.onnx that a later run would take as done and skip.
    tmp_path = model_path + ".tmp"
    onnx_export(model, (x,), tmp_path, opset, ["input"], ["output"])
    nodes = check_export(name, model, tmp_path)
    write_test_data(data_dir, "input", [("input", x.numpy())])
    write_test_data(data_dir, "output", [("output", y.numpy())])
    os.replace(tmp_path, model_path)

    size_mb = os.path.getsize(model_path) / 1e6
    label = model_dir_name(name, opset)
    print(f"{label:20s} opset {opset}  {nodes:5d} nodes  {size_mb:7.1f} MB  {time.time() - start:6.1f} s", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"models to export (default: all): {' '.join(MODELS)}")
    parser.add_argument("--out", default="models", help="output folder (default: models)")
    parser.add_argument("--force", action="store_true", help="re-export models whose files exist")
    parser.add_argument(
        "--opset",
        type=int,
        default=None,
        help="export at this opset instead of the model's usual one (13); writes OUT/NAME-opsetN/ (torch 1.13: 7..17)",
    )
    args = parser.parse_args()

    unknown = [n for n in args.names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s): {' '.join(unknown)}")
    for name in args.names or MODELS:
        export(name, args.out, args.force, args.opset)


if __name__ == "__main__":
    sys.exit(main())
