#!/usr/bin/env python3
"""The exported ONNX inference model, checked three ways after 3 training steps:
  1. it passes the ONNX checker, has no Dropout and BatchNorm is in inference
     mode with a single output;
  2. the .so's inference (trainc_forward, through ctypes, after resuming the
     training checkpoint) runs;
  3. PyTorch's module with the exported initializers loaded by name gives the
     same eval output as the .so, e(trainc, torch) <= 1e-4.
"""
import argparse
import ctypes
import importlib.util
import os
import subprocess
import sys

import numpy as np
import onnx
import torch


from capi import Options, Tensor, tensor  # noqa: E402,F401


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trainc", required=True)
    p.add_argument("--model", required=True, help="name in models/export.py")
    p.add_argument("--onnx", required=True)
    p.add_argument("--reference", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    x = np.load(os.path.join(args.reference, "fp32", "inputs", "image.npy"))
    labels = os.path.join(args.reference, "fp32", "labels.npy")
    exported = os.path.join(args.workdir, "trained.onnx")
    checkpoint = os.path.join(args.workdir, "checkpoint.bin")
    library = os.path.join(args.workdir, f"lib{args.model}.so")
    common = ["--optimizer", "sgd", "--lr", "0.01", "--momentum", "0.9"]
    subprocess.run([args.trainc, "train", args.onnx, "--feed",
                    "image=" + os.path.join(args.reference, "fp32", "inputs", "image.npy"),
                    "--labels", labels, "--steps", "3", "--save", exported,
                    "--checkpoint", checkpoint] + common, check=True)
    subprocess.run([args.trainc, "compile", args.onnx, "--batch", str(x.shape[0]),
                    "-o", library] + common, check=True)

    model = onnx.load(exported)
    onnx.checker.check_model(model)
    ops = [n.op_type for n in model.graph.node]
    assert "Dropout" not in ops, ops
    for n in model.graph.node:
        if n.op_type == "BatchNormalization":
            assert len(n.output) == 1, n
            assert all(a.i == 0 for a in n.attribute if a.name == "training_mode"), n
    print(f"{exported}: passes the ONNX checker; {ops.count('BatchNormalization')} "
          "BatchNormalization nodes in inference mode, no Dropout")

    lib = ctypes.CDLL(os.path.abspath(library))
    lib.trainc_last_error.restype = ctypes.c_char_p
    session = ctypes.c_void_p()
    assert lib.trainc_session_open(ctypes.byref(Options(2, 0, None)), ctypes.byref(session)) == 0, \
        lib.trainc_last_error()
    assert lib.trainc_load_checkpoint(session, checkpoint.encode(), None, 0, None) == 0, \
        lib.trainc_last_error()
    x = np.ascontiguousarray(x, np.float32)
    logits = np.zeros((x.shape[0], 10), np.float32)
    t_in, _s1 = tensor(x, 0)
    t_out, _s2 = tensor(logits, 0)
    assert lib.trainc_forward(session, ctypes.byref(t_in), 1, ctypes.byref(t_out), 1) == 0, \
        lib.trainc_last_error()
    lib.trainc_session_close(session)

    spec = importlib.util.spec_from_file_location(
        "export", os.path.join(os.path.dirname(__file__), "..", "..", "models", "export.py"))
    export = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(export)
    torch.set_num_threads(1)
    module = export.build(export.SPECS[args.model])
    export.load_from_onnx(module, exported)
    module.eval()
    with torch.no_grad():
        expected = module(torch.from_numpy(x)).numpy()
    e = np.linalg.norm(logits - expected) / (np.linalg.norm(expected) + 1e-6 * np.sqrt(expected.size))
    print(f"eval output: e(trainc .so, torch with exported weights) = {e:.2e}")
    return 0 if e <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
