"""The reference models exported by a torch 2.x, with both of its exporters.

Users export with whatever torch they have, and torch 2.x writes other
graphs than Debian's torch 1.13 (models/export.py): its TorchScript
exporter (`dynamo=False`) folds differently, and its default since 2.9, the
dynamo exporter (`dynamo=True`, which needs onnxscript), writes opset 18
from torch.export's graph: CastLike around scalars, Split for chunks, no
Constant nodes, and BatchNormalization in inference form whatever the
module's mode. Run it with the benchmark's virtual environment
(bench/setup_peers.sh, plus `pip install onnxscript`):

  bench/.venv/bin/python models/export_torch2.py --out models/torch2

writes OUT/NAME.torchscript.onnx and OUT/NAME.dynamo.onnx for each model
of MODELS. The dynamo files are written with `optimize=False`: torch's
optimizer folds a transposed weight into a new initializer named after the
graph, not the module (`val_12` for `fc.weight`), and then no state_dict
name is left for models/export.py's `reference` to load PyTorch's weights
from. The tests train each file with trainc and compare it against
PyTorch 1.13 on the same weights (test/e2e/CMakeLists.txt); the weights
come from the file, so the reference does not depend on the torch that
exported it.
"""
import argparse
import os
import sys

import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402  (the models, shared with Debian's torch)

MODELS = ["transformer", "gpt2", "bert", "class_token", "tied_head", "cnn_bn_opset15"]


def export_one(name, exporter, path):
    export_spec(export.SPECS[name], exporter, path)


def export_spec(spec, exporter, path):
    """`spec`'s model (export.Spec) exported by this torch's `exporter`
    ("torchscript" or "dynamo") to `path`, in training mode."""
    model = export.build(spec)
    model.train()
    args = tuple(torch.zeros(s, dtype=getattr(torch, export.tensor_dtype(d)))
                 for _, s, d in spec.inputs)
    names = [n for n, _, _ in spec.inputs]
    outputs = spec.output_names()
    if exporter == "torchscript":
        torch.onnx.export(model, args, path, dynamo=False, opset_version=spec.opset,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=names,
                          output_names=outputs,
                          dynamic_axes={n: {0: "batch"} for n in names + outputs})
    else:
        batch = torch.export.Dim("batch")
        torch.onnx.export(model, args, path, dynamo=True, optimize=False,
                          opset_version=max(18, spec.opset), input_names=names,
                          output_names=outputs, external_data=False,
                          dynamic_shapes=tuple({0: batch} for _ in names))
    m = onnx.load(path)
    inits = {t.name for t in m.graph.initializer}
    missing = [k for k in model.state_dict()
               if k not in inits and not k.endswith("num_batches_tracked")]
    assert not missing, f"{path}: state_dict names not among initializers: {missing}"
    print(f"wrote {path}: torch {torch.__version__} {exporter}, "
          f"opset {m.opset_import[0].version}, {len(m.graph.node)} nodes")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--only", nargs="+", choices=MODELS, metavar="NAME")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.only or MODELS:
        for exporter in ("torchscript", "dynamo"):
            export_one(name, exporter, os.path.join(a.out, f"{name}.{exporter}.onnx"))


if __name__ == "__main__":
    main()
