#!/usr/bin/python3
"""Depthwise convolutions against a plain copy of the same bytes.

  /usr/bin/python3 bench/depthwise.py [--build-dir build] [--workdir DIR]
      [--reps 3] [--steps 200] [--threads 2] [--dispatch BACKEND]
      [--cpu NAME]

For each geometry (MobileNetV2's depthwise layers at 64 px and batch 8,
EfficientNet-B0's 5x5 ones, and both at 224 px: rows of 112 down to 7), a
one-block model exported by PyTorch:

    x -> x * scale (a learnable per-channel scale) -> ReLU
      -> depthwise conv (no bias) -> output, MSE loss

`trainc compile --profile` trains it on random data for --steps steps and
lists every kernel's time and bytes. The ReLU reads the conv's input and
writes a tensor of the same size: a streaming copy of those bytes, in the
same process, on the same threads, vectorized the same way (it is fused
with the scale: one pass reading x and writing the ReLU). Each conv
direction's bandwidth (its operands' bytes over its time, as --profile
counts them) is divided by the ReLU's: the issue's criterion is at least
0.5. --dispatch sets the backend of all three directions (e.g. dnnl, to
compare with oneDNN; the default is what dispatch chooses). --cpu
compiles for another target (e.g. znver3: AVX2 code on an AVX-512 host;
run with DNNL_MAX_CPU_ISA=AVX2 to keep oneDNN to AVX2 as well). Prints a
Markdown table of the medians over --reps rounds. Not a test: nothing here
fails on speed."""
import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (channels, height/width, kernel, stride): MobileNetV2 at 64 px (the
# profile of issue 25), EfficientNet-B0's 5x5 layers at 64 px, and
# MobileNetV2's depthwise layers at 224 px with EfficientNet-B0's 5x5 ones
# there (rows of 56, 28, 14 and 7: not whole vectors).
GEOMETRIES = [
    (32, 32, 3, 1), (96, 32, 3, 2), (144, 16, 3, 1), (144, 16, 3, 2),
    (192, 8, 3, 1), (192, 8, 3, 2), (384, 4, 3, 1), (576, 4, 3, 1),
    (576, 4, 3, 2), (960, 2, 3, 1),
    (144, 16, 5, 2), (240, 8, 5, 1), (240, 8, 5, 2), (480, 4, 5, 1),
    (672, 4, 5, 2), (1152, 2, 5, 1),
    (32, 112, 3, 1), (96, 112, 3, 2), (144, 56, 3, 1),
    (144, 56, 3, 2), (192, 28, 3, 1), (192, 28, 3, 2), (384, 14, 3, 1),
    (576, 14, 3, 2), (960, 7, 3, 1), (240, 28, 5, 1), (672, 14, 5, 1),
    (1152, 7, 5, 1),
]
BATCH = 8
DIRECTIONS = ["graph.conv", "graph.conv_backward_input",
              "graph.conv_backward_weight"]
# --profile's launch lines: ms/step, %, launches, GFLOP/s, GB/s, kernel (backend).
LINE = re.compile(r"^\s*([\d.]+)\s+[\d.]+\s+\d+\s+[\d.]+\s+([\d.]+)\s+(\S+) \((\w+)\)\s+(\S.*)$")


def export_model(path, channels, size, kernel, stride):
    import torch

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(1, channels, 1, 1))
            self.conv = torch.nn.Conv2d(channels, channels, kernel, stride,
                                        kernel // 2, groups=channels, bias=False)

        def forward(self, x):
            return self.conv(torch.relu(x * self.scale))

    torch.manual_seed(0)
    x = torch.randn(BATCH, channels, size, size)
    torch.onnx.export(Block(), (x,), path, input_names=["x"],
                      output_names=["y"], opset_version=13)


def profile(trainc, model, workdir, steps, threads, dispatch, cpu):
    command = [trainc, "compile", model, "--batch", str(BATCH), "--loss", "mse",
               "--optimizer", "sgd", "--lr", "0.01", "-o",
               os.path.join(workdir, "depthwise.so"), "--profile",
               "--profile-steps", str(steps), "--profile-threads", str(threads),
               "--profile-launches", "0", "--cpu", cpu]
    for kernel in DIRECTIONS if dispatch else []:
        command += ["--dispatch", f"{kernel}={dispatch}"]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{run.stderr}")
    # The per-launch section: one line per launch with its shapes.
    found = {}
    for line in (run.stdout + run.stderr).splitlines():
        match = LINE.match(line)
        if match and "->" in match.group(5):
            ms, gbs, kernel, backend = (float(match.group(1)),
                                        float(match.group(2)), match.group(3),
                                        match.group(4))
            if kernel in ("graph.relu", "fused(mul,relu)"):
                kernel = "copy"
            # A direction fused with what follows it (the weight gradient
            # of a 2x2 plane with its update) counts as that direction.
            for direction in DIRECTIONS:
                if kernel.startswith(f"fused({direction.removeprefix('graph.')},"):
                    kernel = direction
            if kernel in DIRECTIONS or kernel == "copy":
                found.setdefault(kernel, (ms, gbs, backend))
    missing = [k for k in DIRECTIONS + ["copy"] if k not in found]
    if missing:
        raise SystemExit(f"{model}: no --profile line for {missing}:\n{run.stdout}")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--workdir")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dispatch", default="",
                        help="backend of all three directions (default: dispatch's choice)")
    parser.add_argument("--cpu", default="native", help="trainc compile --cpu")
    parser.add_argument("--only", help="comma-separated indices into the geometries")
    args = parser.parse_args()
    trainc = os.path.join(args.build_dir, "bin", "trainc")
    workdir = args.workdir or os.path.join(args.build_dir, "bench", "depthwise")
    os.makedirs(workdir, exist_ok=True)
    geometries = GEOMETRIES
    if args.only:
        geometries = [GEOMETRIES[int(i)] for i in args.only.split(",")]
    models = []
    for channels, size, kernel, stride in geometries:
        path = os.path.join(workdir, f"dw_{channels}_{size}_{kernel}_{stride}.onnx")
        if not os.path.exists(path):
            export_model(path, channels, size, kernel, stride)
        models.append(((channels, size, kernel, stride), path))

    samples = {geometry: [] for geometry, _ in models}
    for _ in range(args.reps):  # rounds: every model once per round
        for geometry, path in models:
            samples[geometry].append(profile(trainc, path, workdir, args.steps,
                                             args.threads, args.dispatch, args.cpu))

    print(f"\n--cpu {args.cpu}, batch {BATCH}, {args.threads} threads, median of {args.reps} rounds "
          f"of {args.steps} steps; ms per launch with its backend, and its "
          "bandwidth over the copy's (the scale and ReLU: one pass over the "
          "conv input's bytes)\n")
    print("| channels x plane, kernel/stride | copy GB/s | forward ms | ratio "
          "| input grad ms | ratio | weight grad ms | ratio |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for (channels, size, kernel, stride), _ in models:
        runs = samples[(channels, size, kernel, stride)]
        relu = statistics.median(run["copy"][1] for run in runs)
        cells = []
        for direction in DIRECTIONS:
            ms = statistics.median(run[direction][0] for run in runs)
            gbs = statistics.median(run[direction][1] for run in runs)
            backend = runs[0][direction][2]
            cells += [f"{ms:.3f} {backend}", f"{gbs / relu:.2f}"]
        print(f"| {channels} x {size}x{size}, {kernel}x{kernel}/{stride} "
              f"| {relu:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
