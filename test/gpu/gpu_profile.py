#!/usr/bin/env python3
"""Where a --target cuda library's step spends its GPU time (run where the
GPU is, like gpu_check.py).

Opens LIBRARY (eager launches: TRAINC_CUDA_GRAPHS=0, so that every kernel
is its own record), trains WARMUP steps on export.py's inputs for MODEL at
the library's batch, then STEPS steps under torch.profiler, which traces
every kernel of the process through CUPTI (the library's generated kernels,
cuBLAS's and cuDNN's alike), and prints the kernels by total GPU time.

  python3 test/gpu/gpu_profile.py --library DIR/libresnet18_amp_bf16.so \\
      --model resnet18 [--steps 5] [--top 25]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu_check import Library, batch_inputs  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--library", required=True)
    p.add_argument("--model", required=True, help="models/export.py's name")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    os.environ["TRAINC_CUDA_GRAPHS"] = "0"
    library = Library(args.library)
    batch = library.manifest_shape(
        library.manifest["functions"]["train_step"]["arguments"][0]["name"])[0]
    inputs, labels = batch_inputs(args.model, batch)
    library.bind(inputs, labels)
    for _ in range(args.warmup):
        library.step()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as trace:
        for _ in range(args.steps):
            library.step()
    library.close()
    def gpu_time(e):  # microseconds (device_time_total since torch 2.4)
        return getattr(e, "device_time_total", None) or e.cuda_time_total

    events = [e for e in trace.key_averages()
              if str(e.device_type).endswith("CUDA") and gpu_time(e) > 0]
    total = sum(gpu_time(e) for e in events)
    if not total:
        print("no GPU kernels traced (no GPU here?)")
        return 1
    print(f"{os.path.basename(args.library)}: {args.steps} eager steps, "
          f"{total / 1e3 / args.steps:.3f} ms of GPU time per step in "
          f"{sum(e.count for e in events) // args.steps} kernels")
    print(f"{'ms/step':>8} {'share':>6} {'calls':>6}  kernel")
    for e in sorted(events, key=lambda e: -gpu_time(e))[:args.top]:
        print(f"{gpu_time(e) / 1e3 / args.steps:8.3f} "
              f"{gpu_time(e) / total:6.1%} {e.count // args.steps:6d}  "
              f"{e.key[:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
