#!/usr/bin/env python3
"""The generated depthwise convolutions give PyTorch's bits: the forward
convolution (with a bias) and the input gradient, computed by libraries
whose every depthwise kernel is forced onto the generated backend, must
equal PyTorch's CPU convolution (oneDNN's depthwise kernels: bias first,
then one fused multiply-add per tap, in the weight's row-major order)
byte for byte, on every geometry's kernel (unpadded borders, the
channels-last path of small planes, 5x5 windows, strides), compiled for
the host and for x86-64-v3 (AVX2).

The model is y = Conv(x * s, w, b). trainc_forward with s = 1 gives the
forward convolution of x. The input gradient comes out through one SGD
step: with x = 1, s = 0, a learning rate of 1 and the mean squared error
over a power of two of elements, the step writes s = -dx exactly, where
dx is the input gradient of dy = (b - t) * 2 / count. Exits 1 on a
difference.
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

BATCH = 2
CHANNELS = 64
# (plane, window, stride): output planes of a power of two of elements.
GEOMETRIES = [(16, 3, 1), (8, 3, 1), (4, 3, 1), (2, 3, 1), (16, 5, 1),
              (8, 5, 1), (16, 3, 2), (8, 5, 2)]


def write_model(path, plane, window, stride, rng):
    pad = window // 2
    out = (plane + 2 * pad - window) // stride + 1
    w = rng.standard_normal((CHANNELS, 1, window, window)).astype(np.float32)
    b = rng.standard_normal(CHANNELS).astype(np.float32)
    s = np.ones((1, CHANNELS, plane, plane), np.float32)
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "s"], ["m"]),
         helper.make_node("Conv", ["m", "w", "b"], ["y"], group=CHANNELS,
                          pads=[pad] * 4, strides=[stride] * 2,
                          kernel_shape=[window] * 2)],
        "depthwise",
        [helper.make_tensor_value_info(
            "x", TensorProto.FLOAT, [BATCH, CHANNELS, plane, plane])],
        [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [BATCH, CHANNELS, out, out])],
        [numpy_helper.from_array(s, "s"), numpy_helper.from_array(w, "w"),
         numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return w, b, pad, out


def run_library(path, x, s_zero, t):
    """(forward of x with s = 1, s after one step from s = 0 on x = 1)."""
    lib, session, ok = open_session(path, 1)
    xt, _xs = tensor(x)
    y = np.zeros(t.shape, np.float32)
    yt, _ys = tensor(y)
    ok(lib.trainc_forward(session, ctypes.byref(xt), 1, ctypes.byref(yt), 1),
       "forward")
    st, _ss = tensor(s_zero)
    ok(lib.trainc_set_parameter(session, b"s", ctypes.byref(st)), "set s")
    ones = np.ones_like(x)
    ot, _os = tensor(ones)
    tt, _ts = tensor(t)
    loss = ctypes.c_float()
    ok(lib.trainc_train_step(session, ctypes.byref(ot), 1, ctypes.byref(tt),
                             ctypes.byref(loss)), "train step")
    s = np.zeros_like(s_zero)
    st2, _ss2 = tensor(s)
    ok(lib.trainc_get_parameter(session, b"s", ctypes.byref(st2)), "get s")
    lib.trainc_session_close(session)
    return y, s


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trainc", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.backends.mkldnn.enabled = True
    rng = np.random.default_rng(0)
    failures = []
    for plane, window, stride in GEOMETRIES:
        name = f"dw_{plane}_{window}_{stride}"
        model = os.path.join(args.workdir, name + ".onnx")
        w, b, pad, out = write_model(model, plane, window, stride, rng)
        x = rng.standard_normal((BATCH, CHANNELS, plane, plane)).astype(
            np.float32)
        t = rng.standard_normal((BATCH, CHANNELS, out, out)).astype(np.float32)
        conv = dict(padding=pad, stride=stride, groups=CHANNELS)
        y_torch = torch.nn.functional.conv2d(
            torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b),
            **conv).numpy()
        dy = (np.broadcast_to(b[None, :, None, None], t.shape) - t) * \
            np.float32(2.0 / t.size)
        m = torch.zeros(x.shape, requires_grad=True)
        torch.nn.functional.conv2d(m, torch.from_numpy(w), **conv).backward(
            torch.from_numpy(np.ascontiguousarray(dy, np.float32)))
        dx_torch = m.grad.numpy()
        for cpu in ["native", "x86-64-v3"]:
            library = os.path.join(args.workdir, f"{name}_{cpu}.so")
            subprocess.run(
                [args.trainc, "compile", model, "--cpu", cpu, "--loss", "mse",
                 "--optimizer", "sgd", "--lr", "1", "-o", library,
                 "--dispatch", "graph.conv=generated",
                 "--dispatch", "graph.conv_backward_input=generated"],
                check=True)
            y, s = run_library(library, x, np.zeros((1,) + x.shape[1:],
                                                    np.float32), t)
            for what, ours, ref in [("forward", y, y_torch),
                                    ("input gradient", -s[0], dx_torch[0] +
                                     dx_torch[1])]:
                same = ours.tobytes() == ref.astype(np.float32).tobytes()
                print(f"{name} {cpu} {what}: "
                      f"{'same bits' if same else 'DIFFERENT'}"
                      f"{'' if same else ' (max ' + str(np.abs(ours - ref).max()) + ')'}")
                if not same:
                    failures.append(f"{name} {cpu} {what}")
    if failures:
        sys.exit("FAILED: not PyTorch's bits: " + ", ".join(failures))
    print(f"{len(GEOMETRIES)} geometries x 2 targets: the generated depthwise "
          "forward convolutions and input gradients give PyTorch's bits")


if __name__ == "__main__":
    main()
