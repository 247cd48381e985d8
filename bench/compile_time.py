#!/usr/bin/python3
"""Wall-clock seconds of `trainc compile` on ONNX models, side by side.

  bench/compile_time.py --trainc build/bin/trainc [--trainc OTHER/trainc] \\
      [--variant native= --variant "znver3=--cpu znver3"] [--rounds 3] \\
      [--args "--batch 2"] MODEL.onnx ...

Issue 22 asks every torchvision family to compile in under 10 s on 2
cores of any CPU. Each round compiles every model once in every column (a
trainc binary, times a variant: a label and extra flags), the columns'
order reversed every other round so that neither side always runs first
on a machine whose speed drifts; a compile that fails is reported with its
last line of output and counts as no time. Prints a markdown table: per
model and column the median of the rounds (and their range). `--cpu
znver3` on an AVX-512 machine shows LLVM's code generation for an
AVX2-only target (not that CPU's clock).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def parse_variant(text):
    label, _, flags = text.partition("=")
    if not label:
        raise argparse.ArgumentTypeError(f"--variant {text!r}: expected LABEL=FLAGS")
    return label, flags.split()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__)
    p.add_argument("models", nargs="+", metavar="MODEL.onnx")
    p.add_argument("--trainc", action="append", required=True,
                   help="a trainc binary (twice for an A/B of two builds)")
    p.add_argument("--variant", action="append", type=parse_variant,
                   help="LABEL=FLAGS, a column per trainc (default: native=)")
    p.add_argument("--args", default="--batch 2",
                   help="flags of every compile (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    variants = args.variant or [("native", [])]
    # Columns: "A native", "B native", ... with two binaries (A the first).
    columns = [(f"{chr(ord('A') + i)} {label}" if len(args.trainc) > 1 else label, t, flags)
               for i, t in enumerate(args.trainc) for label, flags in variants]
    for model in args.models:
        if not os.path.exists(model):
            p.error(f"{model}: no such file")
    seconds = {(m, c[0]): [] for m in args.models for c in columns}
    failures = {}
    with tempfile.TemporaryDirectory(prefix="trainc-compile-time-") as work:
        out = os.path.join(work, "lib.so")
        for r in range(args.rounds):
            order = columns if r % 2 == 0 else columns[::-1]
            for model in args.models:
                for label, trainc, flags in order:
                    command = [trainc, "compile", model, *args.args.split(), *flags, "-o", out]
                    started = time.perf_counter()
                    run = subprocess.run(command, capture_output=True, text=True)
                    elapsed = time.perf_counter() - started
                    if run.returncode:
                        tail = (run.stdout + run.stderr).strip().splitlines()[-1:]
                        failures[(model, label)] = " ".join(tail)
                        continue
                    seconds[(model, label)].append(elapsed)
                    print(f"round {r + 1}: {os.path.basename(model)} {label}: {elapsed:.2f} s",
                          file=sys.stderr, flush=True)
    labels = [c[0] for c in columns]
    if len(args.trainc) > 1:
        for i, t in enumerate(args.trainc):
            print(f"{chr(ord('A') + i)}: {t}")
    print("| model | " + " | ".join(f"{label} s" for label in labels) + " |")
    print("|---|" + "--:|" * len(labels))
    for model in args.models:
        cells = []
        for label in labels:
            times = seconds[(model, label)]
            if (model, label) in failures:
                cells.append(f"failed: {failures[(model, label)]}")
            else:
                cells.append(f"{statistics.median(times):.1f} ({min(times):.1f}-{max(times):.1f})")
        name = os.path.splitext(os.path.basename(model))[0]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
