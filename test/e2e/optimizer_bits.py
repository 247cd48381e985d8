#!/usr/bin/env python3
"""trainc's SGD, Adam, AdamW and Adagrad updates give torch.optim's bits:
after each of four steps, the parameter a compiled library trains equals
PyTorch's byte for byte, with the generated updates (compiled for the host
and for x86-64-v3, AVX2) and the reference ones. SGD: plain with weight
decay, momentum, momentum with dampening and Nesterov momentum. Adam and
AdamW: the defaults, weight decay, other betas and epsilon. Adagrad: the
defaults, and decay with a learning-rate decay and another epsilon.
Learning rates that are powers of two for these three, since trainc takes
the learning rate as an f32 and PyTorch divides the Python float.

The model is y = x * p with the L1 loss summed (`--reduction sum`): the
gradient of p is sign(x * p - t) * x, exact in both frameworks, so the
parameters can differ only by how the update rounds. Sizes of 4099
elements (a vector tail) and 40001 (the update split across threads).
Exits 1 on a difference.
"""
import argparse
import ctypes
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from capi import open_session, tensor

STEPS = 4
SIZES = [4099, 40001]
# (name, optimizer, arguments): every branch of each update.
CONFIGS = [
    ("decay", "sgd", dict(lr=0.05, weight_decay=5e-3)),
    ("momentum", "sgd", dict(lr=0.01, momentum=0.9)),
    ("dampening", "sgd", dict(lr=0.01, momentum=0.9, dampening=0.1,
                              weight_decay=1e-3)),
    ("nesterov", "sgd", dict(lr=0.02, momentum=0.8, nesterov=True,
                             weight_decay=1e-2)),
    ("adam", "adam", dict(lr=2**-7)),
    ("adam-decay", "adam", dict(lr=2**-6, betas=(0.8, 0.99), eps=1e-6,
                                weight_decay=1e-2)),
    ("adamw", "adamw", dict(lr=2**-7)),
    ("adamw-decay", "adamw", dict(lr=2**-8, betas=(0.85, 0.995),
                                  weight_decay=0.1)),
    ("adagrad", "adagrad", dict(lr=2**-3)),
    ("adagrad-decay", "adagrad", dict(lr=2**-4, lr_decay=0.1, eps=1e-6,
                                      weight_decay=1e-2)),
]
KERNELS = {"sgd": "sgd_update", "adam": "adam_update",
           "adamw": "adam_update", "adagrad": "adagrad_update"}
OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam,
              "adamw": torch.optim.AdamW, "adagrad": torch.optim.Adagrad}


def write_model(path, p):
    n = p.shape[1]
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "p"], ["y"])], "scale",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])],
        [numpy_helper.from_array(p, "p")])
    onnx.save(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def flags(optimizer, config):
    out = ["--optimizer", optimizer, "--lr", repr(config["lr"])]
    for key in ["momentum", "dampening", "weight_decay", "lr_decay"]:
        if key in config:
            out += ["--" + key.replace("_", "-"), repr(config[key])]
    if config.get("nesterov"):
        out.append("--nesterov")
    if "betas" in config:
        out += ["--beta1", repr(config["betas"][0]),
                "--beta2", repr(config["betas"][1])]
    if "eps" in config:
        out += ["--epsilon", repr(config["eps"])]
    return out


def train_library(path, x, t):
    """p after each of STEPS steps on (x, t)."""
    lib, session, ok = open_session(path, 2)
    xt, _xs = tensor(x)
    tt, _ts = tensor(t)
    loss = ctypes.c_float()
    params = []
    for _ in range(STEPS):
        ok(lib.trainc_train_step(session, ctypes.byref(xt), 1,
                                 ctypes.byref(tt), ctypes.byref(loss)),
           "train step")
        p = np.zeros_like(x)
        pt, _ps = tensor(p)
        ok(lib.trainc_get_parameter(session, b"p", ctypes.byref(pt)),
           "get p")
        params.append(p)
    lib.trainc_session_close(session)
    return params


def train_torch(p0, x, t, optimizer, config):
    p = torch.tensor(p0, requires_grad=True)
    optimizer = OPTIMIZERS[optimizer]([p], **config)
    params = []
    for _ in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.l1_loss(torch.from_numpy(x) * p,
                                    torch.from_numpy(t),
                                    reduction="sum").backward()
        optimizer.step()
        params.append(p.detach().numpy().copy())
    return params


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trainc", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    rng = np.random.default_rng(0)
    failures, runs = [], 0
    for n in SIZES:
        p0 = rng.standard_normal((1, n)).astype(np.float32)
        x = rng.standard_normal((1, n)).astype(np.float32)
        t = rng.standard_normal((1, n)).astype(np.float32)
        model = os.path.join(args.workdir, f"scale_{n}.onnx")
        write_model(model, p0)
        for name, optimizer, config in CONFIGS:
            expected = train_torch(p0, x, t, optimizer, config)
            for variant, extra in [
                    ("native", []), ("x86-64-v3", ["--cpu", "x86-64-v3"]),
                    ("reference",
                     ["--dispatch", f"graph.{KERNELS[optimizer]}=reference"])]:
                library = os.path.join(args.workdir,
                                       f"{name}_{n}_{variant}.so")
                subprocess.run(
                    [args.trainc, "compile", model, "--loss", "l1",
                     "--reduction", "sum", "-o", library] + flags(optimizer, config) +
                    extra, check=True)
                got = train_library(library, x, t)
                runs += 1
                for step, (ours, ref) in enumerate(zip(got, expected)):
                    if ours.tobytes() != ref.tobytes():
                        differ = int(np.count_nonzero(ours != ref))
                        print(f"{name} n={n} {variant} step {step + 1}: "
                              f"DIFFERENT ({differ} of {n} elements, max "
                              f"{np.abs(ours - ref).max():.3g})")
                        failures.append(f"{name} n={n} {variant}")
                        break
                else:
                    print(f"{name} n={n} {variant}: same bits for "
                          f"{STEPS} steps")
    if failures:
        sys.exit("FAILED: not torch.optim's bits: " + ", ".join(failures))
    print(f"{runs} libraries: every update gives torch.optim's bits "
          f"(torch {torch.__version__})")


if __name__ == "__main__":
    main()
