#!/usr/bin/env python3
"""--amp fp16's dynamic loss scaling, from a huge initial scale.

On the reference batch (models/export.py reference), `trainc train MODEL
--amp fp16 --initial-loss-scale 1e9 --steps 24` with SGD-momentum:

* the first step is skipped (1e9 times any gradient overflows f16) and
  every line reports the scale and the skipped steps; the scale halves
  with each skipped step, then stays;
* a skipped step changes no parameter and no optimizer state: every loss
  up to and including the first applied step's equals the first step's
  bit for bit (same forward), and the second applied step's loss is
  PyTorch fp32's second-step loss (within fp16's rounding: the momentum
  buffer was still zero);
* training then converges: the last loss is below the first;
* a run resumed from a checkpoint continues the uninterrupted one exactly
  (the scale and its counters are optimizer state);
* one skipped step and --save: the exported weights are the model's
  initializers, bit for bit.
Exits 1 on any failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from reference_batch import OPTIMIZERS, train_command

INITIAL = 1e9


def train(args, ref, steps, save, extra=()):
    cmd = train_command(args.trainc, args.model, args.reference, ref, steps, save,
                        ["--amp", "fp16", "--initial-loss-scale", str(INITIAL),
                         *OPTIMIZERS["sgd_momentum"], *extra])
    print("$", " ".join(cmd), flush=True)
    run = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(run.stderr)
    print(run.stdout)
    if run.returncode != 0:
        return None
    pattern = re.compile(r"step (\d+): loss (\S+), loss scale (\S+), (\d+) steps? skipped")
    rows = [pattern.match(line) for line in run.stdout.splitlines()]
    return [(m.group(2), float(m.group(3)), int(m.group(4))) for m in rows if m]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trainc", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--reference", required=True, help="MODEL.ref directory")
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    ref = json.load(open(os.path.join(args.reference, "reference.json")))
    os.makedirs(args.workdir, exist_ok=True)
    failures = []

    def check(ok, what):
        print(f"  {'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            failures.append(what)

    rows = train(args, ref, 24, os.path.join(args.workdir, "trained.onnx"))
    if rows is None or len(rows) != 24:
        print("trainc train failed or printed no loss scaling")
        return 1
    losses = [loss for loss, _, _ in rows]
    skipped = rows[-1][2]
    check(rows[0][2] == 1, "the first step is skipped")
    check(0 < skipped < 24, f"{skipped} steps skipped, then training went on")
    for i, (_, scale, count) in enumerate(rows):
        expected = INITIAL / 2.0 ** min(i + 1, skipped)
        if count != min(i + 1, skipped) or abs(scale - expected) > 1e-5 * expected:
            check(False, f"step {i + 1}: scale {scale:g} and {count} skipped, "
                         f"expected {expected:g} and {min(i + 1, skipped)}")
            break
    else:
        check(True, "the scale halves with each skipped step, then stays")
    check(all(loss == losses[0] for loss in losses[:skipped + 1]),
          f"losses of steps 1-{skipped + 1} equal the first bit for bit "
          "(skipped steps changed no parameter)")
    torch_fp32 = np.load(os.path.join(args.reference, "fp32", "sgd_momentum", "losses.npy"))
    second = float(losses[skipped + 1])
    rel = abs(second - torch_fp32[1]) / abs(torch_fp32[1])
    check(rel < 1e-3, f"the second applied step's loss {second:.6f} is torch fp32's "
                      f"second {torch_fp32[1]:.6f} (relative {rel:.1e} < 1e-3: the "
                      "momentum buffer was untouched)")
    check(float(losses[-1]) < float(losses[0]) - 0.05,
          f"training converges: loss {losses[0]} -> {losses[-1]}")

    # The scale and its counters are optimizer state: a run resumed from a
    # checkpoint continues the uninterrupted one exactly.
    checkpoint = os.path.join(args.workdir, "scaler.ckpt")
    first = train(args, ref, skipped + 2, os.path.join(args.workdir, "a.onnx"),
                  ["--checkpoint", checkpoint])
    resumed = train(args, ref, 2, os.path.join(args.workdir, "b.onnx"),
                    ["--resume", checkpoint])
    if first is None or resumed is None:
        return 1
    check([r[0] for r in resumed] == losses[skipped + 2:skipped + 4] and
          all(r[1:] == rows[skipped + 2][1:] for r in resumed),
          "resumed from a checkpoint after the skipped steps, the next two "
          "steps (losses, scale, skipped count) equal the uninterrupted run's")

    once = os.path.join(args.workdir, "skipped_once.onnx")
    rows = train(args, ref, 1, once)
    if rows is None:
        return 1
    original = {t.name: t for t in onnx.load(args.model).graph.initializer}
    saved = {t.name: t for t in onnx.load(once).graph.initializer}
    same = all(numpy_helper.to_array(saved[n]).tobytes() ==
               numpy_helper.to_array(original[n]).tobytes() for n in ref["parameters"])
    check(same, "after one skipped step the exported weights are the model's, bit for bit")
    print("FAILED" if failures else "loss scaling behaves as GradScaler's")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
