"""Shared by the lit tests that export a model with Debian's torch 1.13 and
compare `trainc train`'s losses with PyTorch's (pad_torch_export.py,
attention_torch_export.py)."""
import os
import re
import sys

import numpy as np
import torch
import torch.nn.functional as F


def losses(path):
    return [float(v) for v in re.findall(r"loss ([-0-9.e+]+)", open(path).read())]


def compare(out, paths, tolerance=1e-5):
    """Each of `paths` (trainc train's output) against DIR/torch.txt."""
    expected = losses(os.path.join(out, "torch.txt"))
    for path in paths:
        got = losses(path)
        assert len(got) == len(expected), (path, got, expected)
        for step, (a, b) in enumerate(zip(got, expected), 1):
            assert abs(a - b) <= tolerance * abs(b), f"{path}: step {step}: {a} != torch {b}"
    print(f"{len(paths)} runs of {len(expected)} steps match torch")


def export_and_train(model, x, y, out, name, opset, output_weights=None):
    """Exports `model` as DIR/NAME.onnx, writes x.npy and y.npy, and trains
    it 3 SGD steps (lr 0.1, cross-entropy), writing the losses to torch.txt.
    A model of several outputs (logits, then auxiliary heads aux1, ...)
    trains on the loss sum weighted by `output_weights`."""
    os.makedirs(out, exist_ok=True)
    names = ["logits"] + [f"aux{i}" for i in range(1, len(output_weights or [None]))]
    torch.onnx.export(model, x, os.path.join(out, name + ".onnx"), opset_version=opset,
                      input_names=["image"], output_names=names)
    np.save(os.path.join(out, "x.npy"), x.numpy())
    np.save(os.path.join(out, "y.npy"), y.numpy())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with open(os.path.join(out, "torch.txt"), "w") as f:
        for step in range(1, 4):
            optimizer.zero_grad()
            if output_weights:
                loss = sum(w * F.cross_entropy(o, y) for w, o in zip(output_weights, model(x)))
            else:
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            f.write(f"step {step}: loss {loss.item():.9g}\n")


def main(build):
    """`SCRIPT DIR` exports and trains (build() gives model, x, y, name,
    opset[, output weights]); `SCRIPT DIR --compare F...` checks trainc's
    runs."""
    out = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2] == "--compare":
        compare(out, sys.argv[3:])
        return
    torch.manual_seed(0)
    model, x, y, name, opset, *weights = build()  # weights: auxiliary heads
    export_and_train(model, x, y, out, name, opset, *weights)
