#!/usr/bin/env python3
"""`trainc compile --stats --profile` on the LeNet-style CNN at batch 8:
  1. --stats estimates the convolutions' flops as computed here by hand from
     the model's shapes (2 per multiply-add), and the GEMMs' likewise;
  2. --profile times every launch of train_step: the launches it reports add
     up to the launches --stats counts, and the kernels' share of the step is
     a plausible percentage;
  3. the library written to -o is not instrumented (no "profile" in its
     manifest), and --profile with --emit other than so is an error.
"""
import argparse
import json
import os
import re
import subprocess
import sys


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trainc", required=True)
    p.add_argument("--model", required=True, help="models/cnn.onnx")
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    library = os.path.join(args.workdir, "libcnn.so")
    run = subprocess.run(
        [args.trainc, "compile", args.model, "--batch", "8", "-o", library,
         "--stats", "--profile", "--profile-steps", "3",
         "--profile-threads", "1"],
        capture_output=True, text=True)
    print(run.stdout)
    print(run.stderr, file=sys.stderr)
    if run.returncode != 0:
        fail("trainc compile --stats --profile exited with %d" % run.returncode)
    stats, _, profile = run.stdout.partition("trainc compile --profile")
    if not profile:
        fail("no --profile report")

    # 1. Estimated flops of @train_step's kernels against the shapes.
    table = stats.split("kernels of @train_step")[1].split("kernels of @eval")[0]
    rows = {}  # kernel: (launches, MFLOP) over every backend that runs it
    for kernel, backend, launches, mflop, mb in re.findall(
            r"^\s+(\S+)\s+(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)$", table, re.M):
        before = rows.get(kernel, (0, 0.0))
        rows[kernel] = (before[0] + int(launches), before[1] + float(mflop))
    n = 8
    conv = 2 * n * 32 * 28 * 28 * 1 * 9 + 2 * n * 64 * 14 * 14 * 32 * 9
    # conv1's input gradient is not needed (the image is not trained).
    expected = {
        "graph.conv": conv,
        "graph.conv_backward_weight": conv,
        "graph.conv_backward_input": 2 * n * 64 * 14 * 14 * 32 * 9,
        # fc1 and fc2 forward, and the two gradients of each.
        "graph.gemm": 3 * (2 * n * 3136 * 128 + 2 * n * 128 * 10),
    }
    for kernel, flops in expected.items():
        if kernel not in rows:
            fail("--stats lists no %s" % kernel)
        if abs(rows[kernel][1] - flops / 1e6) > 0.051:
            fail("%s: --stats says %.1f MFLOP, the shapes give %.1f" %
                 (kernel, rows[kernel][1], flops / 1e6))
    total = int(re.search(r"^\s+total\s+(\d+)", table, re.M).group(1))

    # 2. Every launch timed, a plausible share.
    header = re.search(r"kernels ([\d.]+) ms/step \(([\d.]+)%\)", profile)
    if not header:
        fail("no kernel time in the --profile header")
    share = float(header.group(2))
    if not 30 <= share <= 100.5:
        fail("kernels take %.1f%% of the step" % share)
    by_kernel = profile.split("by kernel:")[1].split("slowest launches:")[0]
    timed = sum(int(x) for x in re.findall(
        r"^\s+[\d.]+\s+[\d.]+\s+(\d+)\s", by_kernel, re.M))
    if timed != total:
        fail("--profile timed %d launches, --stats counts %d" % (timed, total))

    # 3. The user's library is the normal one.
    with open(os.path.join(args.workdir, "cnn.json")) as f:
        if "profile" in json.load(f):
            fail("the library written to -o is instrumented")
    bad = subprocess.run([args.trainc, "compile", args.model, "--profile",
                          "--emit", "kernel", "-o", os.devnull],
                         capture_output=True, text=True)
    if bad.returncode == 0 or "--profile" not in bad.stderr:
        fail("--profile --emit kernel: expected an error naming --profile, "
             "got %d: %s" % (bad.returncode, bad.stderr))
    print("profile-check: OK (%d launches, kernels %.1f%% of the step)" %
          (total, share))


if __name__ == "__main__":
    main()
