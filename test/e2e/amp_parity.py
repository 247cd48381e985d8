#!/usr/bin/env python3
"""--amp bf16 (or bf16-storage) through the .so against torch.autocast: 3
training steps on the reference batch.

Runs `trainc train MODEL --amp AMP --feed ... --labels ... --steps 3 --save
OUT.onnx` and compares the loss curve with PyTorch's under
torch.autocast("cpu", torch.bfloat16) and in fp32 (models/export.py
reference writes both). Mixed precision moves the curve away from fp32 by
rounding; how far depends on where each framework rounds (trainc rounds a
fused chain once, autocast after every op), so the criterion is relative
to PyTorch's own distance d = e(autocast, fp32), with
e(a, b) = ||a - b|| / (||b|| + 1e-6 sqrt(n)) as in docs/TRAINING.md:

  e(trainc bf16, torch fp32)     <= 4 d + 1e-4
  e(trainc bf16, torch autocast) <= 4 d + 1e-4

(1e-4 is the fp32 parity criterion: the floor where d is smaller than fp32
noise.) The exported model must hold finite f32 weights (master weights).
With --amp bf16 on a CPU without native bf16 products trainc trains in f32
and says so; then the fp32 criterion e(trainc, torch fp32) <= 1e-4
applies. --amp bf16-storage (bf16 activations, f32 products) runs on any
CPU and must meet the bf16 criterion. Exits 1 on any failure.
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from reference_batch import OPTIMIZERS, error, run_steps, train_command

def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trainc", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--reference", required=True, help="MODEL.ref directory")
    p.add_argument("--optimizer", choices=OPTIMIZERS, required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--amp", choices=["bf16", "bf16-storage"], default="bf16")
    args = p.parse_args()

    ref = json.load(open(os.path.join(args.reference, "reference.json")))
    os.makedirs(args.workdir, exist_ok=True)
    out = os.path.join(args.workdir, f"trained_amp_{args.amp}_{args.optimizer}.onnx")
    cmd = train_command(args.trainc, args.model, args.reference, ref, 3, out,
                        ["--amp", args.amp])
    cmd += OPTIMIZERS[args.optimizer]
    run, losses = run_steps(cmd)
    if losses is None:
        return 1
    fp32 = np.load(os.path.join(args.reference, "fp32", args.optimizer, "losses.npy"))
    autocast = np.load(os.path.join(args.reference, "autocast_bf16", args.optimizer,
                                    "losses.npy"))
    failures = 0
    native = "no native bf16" not in run.stderr
    print(f"{ref['model']} .so, --amp {args.amp}, 3 steps of {args.optimizer}")
    print(f"  losses: trainc {np.round(losses, 6).tolist()}")
    print(f"          torch autocast bf16 {np.round(autocast, 6).tolist()}")
    print(f"          torch fp32 {np.round(fp32, 6).tolist()}")
    d = error(autocast, fp32)
    if native:
        bound = 4 * d + 1e-4
        for what, base in (("torch fp32", fp32), ("torch autocast", autocast)):
            e = error(losses, base)
            ok = e <= bound
            failures += not ok
            print(f"  e(trainc bf16, {what:14s}) = {e:.2e}  (bound 4 d + 1e-4 = "
                  f"{bound:.2e}, d = e(autocast, fp32) = {d:.2e}) "
                  f"{'ok' if ok else 'FAIL'}")
    else:
        e = error(losses, fp32)
        ok = e <= 1e-4
        failures += not ok
        print(f"  no native bf16 on this CPU: trained in f32; e(trainc, torch fp32) "
              f"= {e:.2e} (bound 1e-4) {'ok' if ok else 'FAIL'}")
    trained = {t.name: t for t in onnx.load(out).graph.initializer}
    for name in ref["parameters"]:
        tensor = trained[name]
        values = numpy_helper.to_array(tensor)
        ok = tensor.data_type == onnx.TensorProto.FLOAT and np.isfinite(values).all()
        if not ok:
            failures += 1
            print(f"  {name}: exported as {onnx.TensorProto.DataType.Name(tensor.data_type)}"
                  f", finite: {np.isfinite(values).all()} FAIL")
    print("FAILED" if failures else "within the criterion; exported weights are finite f32")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
