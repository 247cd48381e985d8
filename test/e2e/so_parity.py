#!/usr/bin/env python3
"""The compiled .so against PyTorch: 3 training steps on the reference batch.

Runs `trainc train MODEL --feed ... --labels ... --steps 3 --save OUT.onnx`
(optionally with --dispatch overrides), then compares the printed losses and
the trained initializers of OUT.onnx with PyTorch's reference results
(models/export.py reference) by the parity criterion of docs/TRAINING.md:
e(a, b) = ||a - b|| / (||b|| + 1e-6 sqrt(n)), e(trainc, torch fp32) <= 1e-4,
or, where e(torch fp32, torch fp64) > 1e-4, e(trainc, fp64) <= 4 e(fp32, fp64).
Prints every figure; exits 1 on any failure.

With --ranks N, the library is compiled with --data-parallel and trained by
N processes under mpirun, each on every N-th row of the reference batch
(one thread each): N ranks of batch B must meet the same criterion as one
process of batch N * B.
"""
import argparse
import json
import os
import shlex
import shutil
import sys

import onnx
from onnx import numpy_helper

from reference_batch import OPTIMIZERS, parity_margin, run_steps, train_command

def data_parallel(cmd, ranks, bucket_mib, launcher=None):
    """`cmd` (a trainc train) as a data-parallel job of `ranks` processes of
    one thread each, started by `launcher` (a shell-quoted command) or
    mpirun; None without mpirun."""
    threads = cmd.index("--threads")
    cmd = cmd[:threads] + ["--threads", "1"] + cmd[threads + 2:]
    cmd += ["--data-parallel"]
    if bucket_mib:
        cmd += ["--bucket-mib", bucket_mib]
    if launcher:
        return shlex.split(launcher) + cmd
    mpirun = shutil.which("mpirun")
    if not mpirun:
        print("FAILED: no mpirun (Debian's openmpi-bin)")
        return None
    # Open MPI refuses to run as root unless told; two slots per core at
    # most on a small machine.
    launcher = [mpirun, "-np", str(ranks), "--oversubscribe"]
    if os.geteuid() == 0:
        launcher.append("--allow-run-as-root")
    return launcher + cmd


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trainc", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--reference", required=True, help="MODEL.ref directory")
    p.add_argument("--optimizer", choices=OPTIMIZERS, required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--dispatch", action="append", default=[])
    p.add_argument("--train-batch-norm", action="store_true",
                   help="compile with --train-batch-norm (BatchNorm written "
                        "in inference form trained as PyTorch's train() mode)")
    p.add_argument("--tune-cache",
                   help="compile with --tune, keeping the times in this file")
    p.add_argument("--ranks", type=int, default=1,
                   help="data-parallel processes (mpirun -np RANKS)")
    p.add_argument("--bucket-mib", help="--bucket-mib of the data-parallel build")
    p.add_argument("--summary",
                   help="write each tensor's margin (error over its bound) "
                        "to this JSON file")
    p.add_argument("--launcher",
                   help="with --ranks: the command that starts the job "
                        "instead of `mpirun -np RANKS` (two_hosts.sh)")
    args = p.parse_args()

    ref = json.load(open(os.path.join(args.reference, "reference.json")))
    os.makedirs(args.workdir, exist_ok=True)
    tag = "_".join([args.optimizer] + [d.replace("=", "-") for d in args.dispatch]
                   + (["tuned"] if args.tune_cache else [])
                   + ([f"ranks{args.ranks}"] if args.ranks > 1 else []))
    out = os.path.join(args.workdir, f"trained_{tag}.onnx")
    cmd = train_command(args.trainc, args.model, args.reference, ref, 3, out)
    cmd += OPTIMIZERS[args.optimizer]
    for d in args.dispatch:
        cmd += ["--dispatch", d]
    if args.tune_cache:
        cmd += ["--tune", "--tune-cache", args.tune_cache]
    if args.train_batch_norm:
        cmd += ["--train-batch-norm"]
    if args.ranks > 1:
        cmd = data_parallel(cmd, args.ranks, args.bucket_mib, args.launcher)
        if cmd is None:
            return 1
    run, losses = run_steps(cmd)
    if losses is None:
        return 1

    failures = 0
    margins = {}

    def check(what, trainc, base):
        nonlocal failures
        margin, line = parity_margin(trainc, os.path.join(args.reference, "fp32", base),
                                     os.path.join(args.reference, "fp64", base))
        print(f"  {what:48s} {line}")
        failures += not margin <= 1
        margins[what] = {"margin": margin, "line": line}

    print(f"{ref['model']} .so, 3 steps of {args.optimizer}"
          + (f", dispatch {args.dispatch}" if args.dispatch else ", default dispatch")
          + (f", {args.ranks} data-parallel processes" if args.ranks > 1 else ""))
    check("losses of steps 1-3", losses, f"{args.optimizer}/losses.npy")
    trained = {t.name: numpy_helper.to_array(t) for t in onnx.load(out).graph.initializer}
    for name in ref["parameters"] + ref.get("buffers", []):
        check(name, trained[name], f"{args.optimizer}/params/{name}.npy")
    print("FAILED" if failures else "all tensors within the parity criterion")
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(margins, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
