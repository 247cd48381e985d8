#!/usr/bin/python3
"""Every torchvision classification family against PyTorch, outside CI.

For each family's smallest variant (FAMILIES: input size and batch), with
Debian's torch 1.13 and torchvision 0.14: export it in training mode
(models/export.py), write PyTorch's fp32 and fp64 results, train 3
SGD-momentum steps through trainc's .so (test/e2e/so_parity.py), and
print a markdown table of the worst tensor of each model: its margin,
the error over the parity criterion's bound (docs/TRAINING.md; at most 1
passes).

  /usr/bin/python3 scripts/torchvision_parity.py --trainc build/bin/trainc \\
      --workdir DIR [--only NAME ...] [--table FILE.md] [--exporter E]

--exporter torch2-torchscript or torch2-dynamo exports with a torch 2.x
instead (the benchmark's virtual environment, bench/setup_peers.sh; the
dynamo exporter needs onnxscript): this script runs again under that
interpreter (--torch2-python) to write the file, with that torchvision's
model; PyTorch's reference is still Debian's torch 1.13 on the file's
weights (models/export_torch2.py). The dynamo exporter writes BatchNorm in
inference form whatever the module's mode: --train-batch-norm trains it
as the module in train() mode (trainc's flag of that name).

The big models take minutes each (PyTorch's fp64 steps on one thread);
CI runs the small ones (test/CMakeLists.txt TRAINC_TORCHVISION_PARITY).
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "models"))
import export  # noqa: E402

# (name, input size, batch, torchvision keyword arguments). 64 px and
# batch 8 where the family takes it; AlexNet and VGG export their adaptive
# pooling only at 224 px, MaxViT needs 224 px (7x7 windows per stage),
# Inception-v3's auxiliary head needs 299 px; batch 2 there, for the time
# of PyTorch's fp64 steps.
FAMILIES = [
    ("alexnet", 224, 2, {}),
    ("vgg11", 224, 2, {}),
    ("resnet18", 64, 8, {}),
    ("resnext50_32x4d", 64, 8, {}),
    ("wide_resnet50_2", 64, 8, {}),
    ("squeezenet1_0", 64, 8, {}),
    ("densenet121", 64, 8, {}),
    ("googlenet", 128, 8, None),      # export.AUX_HEADS
    ("inception_v3", 299, 2, None),   # export.AUX_HEADS
    ("shufflenet_v2_x0_5", 64, 8, {}),
    ("mobilenet_v2", 64, 8, {}),
    ("mobilenet_v3_small", 64, 8, {}),
    ("mnasnet0_5", 64, 8, {}),
    ("efficientnet_b0", 64, 8, {}),
    ("efficientnet_v2_s", 64, 8, {}),
    ("regnet_x_400mf", 64, 8, {}),
    ("regnet_y_400mf", 64, 8, {}),
    ("convnext_tiny", 64, 8, {}),
    ("vit_b_16", 32, 8, {"image_size": 32}),
    ("swin_t", 64, 8, {}),
    ("maxvit_t", 224, 2, {}),
]


def spec_of(name, px, batch, kwargs):
    if kwargs is None:
        return export.AUX_HEADS[name]
    return export.Spec(export.torchvision_classifier(name, **kwargs),
                       [(export.IMG, (batch, 3, px, px), "float32")], 17)


def run_one(args, name, px, batch, kwargs):
    """One family: (row of the table, passed)."""
    spec = spec_of(name, px, batch, kwargs)
    work = os.path.join(args.workdir, name)
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, name + ".onnx")
    ref = os.path.join(work, name + ".ref")
    started = time.time()
    if args.exporter == "torch1.13":
        export.export_torch(name, spec, onnx_path)
    else:
        wrote = subprocess.run(
            [args.torch2_python, os.path.abspath(__file__), "--export-only", name,
             "--exporter", args.exporter, "--path", onnx_path],
            capture_output=True, text=True)
        with open(os.path.join(work, "export.log"), "w") as f:
            f.write(wrote.stdout + wrote.stderr)
        if wrote.returncode:
            tail = (wrote.stdout + wrote.stderr).strip().splitlines()[-1:]
            print(f"{name}: {args.exporter} export failed: {' '.join(tail)}", flush=True)
            return (f"| {name} | {px} px, batch {batch} | - | {args.exporter} export "
                    f"failed: {' '.join(tail)} | - | FAIL |"), False
    export.cmd_reference(name, onnx_path, ref, spec=spec, autocast_bf16=False)
    torch_seconds = time.time() - started
    summary = os.path.join(work, "margins.json")
    if os.path.exists(summary):
        os.remove(summary)
    started = time.time()
    run = subprocess.run(
        [sys.executable, os.path.join(ROOT, "test", "e2e", "so_parity.py"),
         "--trainc", args.trainc, "--model", onnx_path, "--reference", ref,
         "--optimizer", "sgd_momentum", "--workdir", work, "--summary", summary]
        + (["--train-batch-norm"] if args.train_batch_norm else []),
        capture_output=True, text=True)
    trainc_seconds = time.time() - started
    with open(os.path.join(work, "so_parity.log"), "w") as f:
        f.write(run.stdout + run.stderr)
    size = f"{px} px, batch {batch}"
    if not os.path.exists(summary):
        tail = (run.stdout + run.stderr).strip().splitlines()[-1:]
        return f"| {name} | {size} | - | trainc failed: {' '.join(tail)} | - | FAIL |", False
    margins = json.load(open(summary))
    worst = max(margins, key=lambda k: margins[k]["margin"])
    passed = run.returncode == 0
    failing = sum(m["margin"] > 1 for m in margins.values())
    print(f"{name}: worst {worst} margin {margins[worst]['margin']:.2f}, "
          f"{failing} of {len(margins)} over; torch {torch_seconds:.0f} s, "
          f"trainc {trainc_seconds:.0f} s", flush=True)
    return (f"| {name} | {size} | {len(margins)} | `{worst}`: "
            f"{margins[worst]['line']} | {margins[worst]['margin']:.2f} | "
            f"{'pass' if passed else f'FAIL ({failing} over)'} |"), passed


def export_only(args):
    """Under a torch 2.x: write args.export_only's file with its exporter."""
    import export_torch2
    family = next(f for f in FAMILIES if f[0] == args.export_only)
    exporter = args.exporter[len("torch2-"):]
    export_torch2.export_spec(spec_of(*family), exporter, args.path)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__)
    p.add_argument("--trainc")
    p.add_argument("--workdir")
    p.add_argument("--only", nargs="+", choices=[f[0] for f in FAMILIES], metavar="NAME")
    p.add_argument("--table", help="also write the table to this file")
    p.add_argument("--exporter", default="torch1.13",
                   choices=["torch1.13", "torch2-torchscript", "torch2-dynamo"])
    p.add_argument("--train-batch-norm", action="store_true",
                   help="train with trainc's --train-batch-norm (the dynamo "
                        "exporter writes BatchNorm in inference form)")
    p.add_argument("--torch2-python", default=os.path.join(ROOT, "bench", ".venv", "bin", "python"),
                   help="the torch 2.x interpreter of --exporter torch2-*")
    p.add_argument("--export-only", choices=[f[0] for f in FAMILIES], help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.export_only:
        return export_only(args)
    if not args.trainc or not args.workdir:
        p.error("--trainc and --workdir are required")
    if args.exporter != "torch1.13" and not os.access(args.torch2_python, os.X_OK):
        p.error(f"--exporter {args.exporter}: no torch 2.x interpreter at "
                f"{args.torch2_python} (bench/setup_peers.sh, or --torch2-python)")
    args.trainc = os.path.abspath(args.trainc)
    rows = ["| model | input | tensors | worst tensor | margin | 3 SGD steps |",
            "|---|---|--:|---|--:|---|"]
    failures = 0
    for name, px, batch, kwargs in FAMILIES:
        if args.only and name not in args.only:
            continue
        row, passed = run_one(args, name, px, batch, kwargs)
        rows.append(row)
        failures += not passed
    table = "\n".join(rows) + "\n"
    print(table)
    if args.table:
        with open(args.table, "w") as f:
            f.write(table)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
