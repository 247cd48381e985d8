#!/usr/bin/env python3
"""A library whose training steps update some parameters' live taps alone
(--trainc-compact-window-updates: ResNet-18 on 32 px images, whose last
stage reads only the centre tap of its 3x3 weights, or 4 of 9) against
the same model with the updates on the runtime's reference kernels (which
update every tap of the whole parameter, bit for bit as the generated
ones): through the C API, trained, read (trainc_get_parameter), set
(another parameter, then a windowed one), evaluated (trainc_forward),
checkpointed, restored in a new session and exported, every result must be
byte-identical. Exits 1 on a difference.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys

import numpy as np

from capi import Options, tensor

BATCH = 8
CLASSES = 10


def compile_library(trainc, model, out, extra):
    subprocess.run([trainc, "compile", model, "--batch", str(BATCH),
                    "--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9",
                    "--loss", "softmax-cross-entropy", "-o", out] + extra,
                   check=True)
    with open(os.path.splitext(out)[0] + ".json") as f:
        return json.load(f)


def exercise(path, workdir, tag, windowed):
    """Results of the C API sequence on library `path`, by name."""
    lib = ctypes.CDLL(path)
    lib.trainc_last_error.restype = ctypes.c_char_p

    def ok(status, what):
        if status != 0:
            sys.exit(f"FAILED: {tag}: {what}: {lib.trainc_last_error().decode()}")

    def open_session():
        session = ctypes.c_void_p()
        ok(lib.trainc_session_open(ctypes.byref(Options(2, 0, None)),
                                   ctypes.byref(session)), "open")
        return session

    rng = np.random.default_rng(3)
    x = rng.random((BATCH, 3, 32, 32), dtype=np.float32)
    y = rng.integers(0, CLASSES, BATCH).astype(np.int64)
    xt, _xs = tensor(x)
    yt, _ys = tensor(y)
    results = {}

    def steps(session, count, name):
        loss = ctypes.c_float()
        for i in range(count):
            ok(lib.trainc_train_step(session, ctypes.byref(xt), 1,
                                     ctypes.byref(yt), ctypes.byref(loss)),
               "train step")
        results[name] = np.array([loss.value], np.float32)

    def get(session, name, shape, key):
        value = np.zeros(shape, np.float32)
        t, _s = tensor(value)
        ok(lib.trainc_get_parameter(session, name.encode(), ctypes.byref(t)),
           "get " + name)
        results[key] = value
        return value

    def put(session, name, value):
        t, _s = tensor(value)
        ok(lib.trainc_set_parameter(session, name.encode(), ctypes.byref(t)),
           "set " + name)

    def forward(session, key):
        logits = np.zeros((BATCH, CLASSES), np.float32)
        t, _s = tensor(logits)
        ok(lib.trainc_forward(session, ctypes.byref(xt), 1, ctypes.byref(t), 1),
           "forward")
        results[key] = logits

    name, shape = windowed
    session = open_session()
    forward(session, "logits before training")
    steps(session, 3, "loss of step 3")
    get(session, name, shape, "weight after 3 steps")
    bias = get(session, "fc.bias", (CLASSES,), "fc.bias after 3 steps")
    put(session, "fc.bias", bias + np.float32(0.01))
    steps(session, 2, "loss of step 5")
    get(session, name, shape, "weight after 5 steps")
    forward(session, "logits after 5 steps")
    checkpoint = os.path.join(workdir, tag + ".ckpt").encode()
    ok(lib.trainc_save_checkpoint(session, checkpoint, None, 0), "save")
    weight = get(session, name, shape, "weight before it is set")
    put(session, name, weight * np.float32(0.5))
    forward(session, "logits after setting the weight")
    steps(session, 1, "loss of step 6")
    get(session, name, shape, "weight after 6 steps")
    lib.trainc_session_close(session)

    session = open_session()
    ok(lib.trainc_load_checkpoint(session, checkpoint, None, 0, None), "load")
    forward(session, "logits of the restored session")
    steps(session, 2, "loss of the restored session's step 7")
    get(session, name, shape, "weight of the restored session")
    exported = os.path.join(workdir, tag + ".onnx")
    ok(lib.trainc_export_onnx(session, exported.encode()), "export")
    with open(exported, "rb") as f:
        results["exported model"] = np.frombuffer(f.read(), np.uint8)
    lib.trainc_session_close(session)
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trainc", required=True)
    p.add_argument("--model", required=True, help="resnet18.onnx (32 px)")
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    compact = os.path.join(args.workdir, "compact.so")
    full = os.path.join(args.workdir, "full.so")
    manifest = compile_library(args.trainc, args.model, compact, [])
    reference = compile_library(args.trainc, args.model, full,
                                ["--dispatch", "sgd_update=reference"])
    def windows(m):
        return [(a["copy_of"], a["shape"]) for a in m["functions"]["train_step"]["arguments"]
                if a.get("window_starts")]
    compacted = windows(manifest)
    if not compacted or windows(reference):
        sys.exit(f"FAILED: expected windowed updates in {compact} only "
                 f"(found {compacted} and {windows(reference)})")
    params = {a["name"]: a["shape"]
              for a in manifest["functions"]["train_step"]["arguments"]
              if a["role"] == "parameter"}
    name = "layer4.1.conv2.weight"
    if name not in [n for n, _ in compacted]:
        sys.exit(f"FAILED: {name} is not windowed ({compacted})")
    a = exercise(compact, args.workdir, "compact", (name, params[name]))
    b = exercise(full, args.workdir, "full", (name, params[name]))
    failed = [key for key in b if a[key].tobytes() != b[key].tobytes()]
    for key in b:
        print(f"{key}: {'DIFFERENT' if key in failed else 'same bytes'}")
    if failed:
        sys.exit("FAILED: the windowed updates changed " + ", ".join(failed))
    print(f"{len(compacted)} parameters updated on their live taps alone "
          f"({', '.join(n for n, _ in compacted)}); every result byte-identical "
          "to full updates")


if __name__ == "__main__":
    main()
