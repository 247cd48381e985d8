#!/usr/bin/env python3
"""Trains a shipped model on Fashion-MNIST with `trainc train` and checks the
test accuracy after the last epoch (every one of the 10,000 test images
counts). Prints the accuracy per epoch and the wall time. With --compare-amp,
also trains in mixed precision and compares; with --compare-ranks N, also
trains data-parallel (N processes under mpirun, each of batch 64 / N and
one thread: the same job batch) and compares."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trainc", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--min-accuracy", type=float, required=True, help="percent")
    p.add_argument("--compare-amp", choices=["bf16", "fp16"], nargs="+",
                   default=[],
                   help="also train with each --amp AMP (same seed) for "
                        "--amp-epochs and require its accuracy within 0.5 "
                        "points of the f32 run's after as many epochs")
    p.add_argument("--amp-epochs", type=int,
                   help="epochs of the --compare-amp runs (default --epochs); "
                        "the f32 run is deterministic, so its accuracy after "
                        "that epoch is what a shorter f32 run would give")
    p.add_argument("--compare-ranks", type=int, default=0,
                   help="also train with N data-parallel processes and "
                        "require the accuracy within 0.5 points")
    p.add_argument("extra", nargs="*", help="more trainc train options")
    args = p.parse_args()
    accuracies = train(args, args.extra)
    if accuracies is None:
        return 1
    final = accuracies[-1]
    ok = final >= args.min_accuracy
    amp_epochs = args.amp_epochs or args.epochs
    if not 1 <= amp_epochs <= args.epochs:
        p.error("--amp-epochs must be between 1 and --epochs")
    for amp in args.compare_amp:
        mixed = train(args, args.extra + ["--amp", amp], epochs=amp_epochs)
        if mixed is None:
            return 1
        f32 = accuracies[amp_epochs - 1]
        close = mixed[-1] >= f32 - 0.5
        print(f"--amp {amp}: {mixed[-1]:.2f}% against f32 {f32:.2f}% after "
              f"{amp_epochs} epochs (at least {f32 - 0.5:.2f}% required) "
              f"{'ok' if close else 'FAIL'}")
        ok = ok and close
    if args.compare_ranks > 1:
        ranks = args.compare_ranks
        mpirun = [shutil.which("mpirun") or "mpirun", "-np", str(ranks),
                  "--oversubscribe"]
        if os.geteuid() == 0:
            mpirun.append("--allow-run-as-root")
        job = train(args, args.extra + ["--data-parallel"], launcher=mpirun,
                    batch=64 // ranks, threads=1)
        if job is None:
            return 1
        job = job[-1]
        close = abs(job - final) <= 0.5
        print(f"{ranks} data-parallel processes: {job:.2f}% against one "
              f"process {final:.2f}% (within 0.5 points required) "
              f"{'ok' if close else 'FAIL'}")
        ok = ok and close
    return 0 if ok else 1


def train(args, extra, launcher=(), batch=64, threads=2, epochs=None):
    """Runs trainc train; returns the test accuracy after each epoch, or
    None."""
    epochs = epochs or args.epochs
    cmd = list(launcher) + [
        args.trainc, "train", args.model, "--data", "fashion-mnist",
        "--epochs", str(epochs), "--batch-size", str(batch), "--seed", "1",
        "--threads", str(threads)] + extra
    print("$", " ".join(cmd), flush=True)
    start = time.time()
    run = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    seconds = time.time() - start
    print(run.stdout)
    if run.returncode != 0:
        return None
    accuracies = [float(m) for m in re.findall(r"test accuracy ([0-9.]+)%", run.stdout)]
    if len(accuracies) != epochs:
        print(f"expected {epochs} epochs, saw {len(accuracies)}")
        return None
    print(f"final test accuracy {accuracies[-1]:.2f}%, wall time {seconds:.1f} s")
    return accuracies


if __name__ == "__main__":
    sys.exit(main())
