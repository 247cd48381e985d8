#!/usr/bin/env python3
"""Trains a shipped model on Fashion-MNIST with `trainc train` and checks the
test accuracy after the last epoch (every one of the 10,000 test images
counts). Prints the accuracy per epoch and the wall time."""
import argparse
import re
import subprocess
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trainc", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--min-accuracy", type=float, required=True, help="percent")
    p.add_argument("extra", nargs="*", help="more trainc train options")
    args = p.parse_args()
    cmd = [args.trainc, "train", args.model, "--data", "fashion-mnist",
           "--epochs", str(args.epochs), "--batch-size", "64", "--seed", "1",
           "--threads", "2"] + args.extra
    print("$", " ".join(cmd), flush=True)
    start = time.time()
    run = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    seconds = time.time() - start
    print(run.stdout)
    if run.returncode != 0:
        return 1
    accuracies = [float(m) for m in re.findall(r"test accuracy ([0-9.]+)%", run.stdout)]
    if len(accuracies) != args.epochs:
        print(f"expected {args.epochs} epochs, saw {len(accuracies)}")
        return 1
    print(f"final test accuracy {accuracies[-1]:.2f}% (minimum {args.min_accuracy}%), "
          f"wall time {seconds:.1f} s")
    return 0 if accuracies[-1] >= args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
