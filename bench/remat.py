#!/usr/bin/python3
"""--memory-budget: planned arena, peak memory and step time per budget.

  /usr/bin/python3 bench/remat.py [--models resnet18,transformer]
      [--budgets 100%,75%,50%,min] [--reps 3] [--build-dir build]
      [--workdir DIR] [--batch-scale 1] [--solvers best]
      [--schedules memory]

For each model (models/export.py's batch, times --batch-scale) and budget,
`trainc compile --memory-budget B --stats` (SGD + momentum, softmax
cross-entropy), once per --remat-solver in --solvers and per `--schedule` in --schedules
(memory: launches reordered for a smaller arena, the default; graph: the
order autodiff emits); "min" is the
smallest arena recomputation reaches (read from the error a one-byte
budget gives). A budget N% is N% of the first schedule's unconstrained
arena, passed to every compile in bytes (so that with --schedules
graph,memory every row is measured against the order autodiff emits).
A budget that cannot be met is
reported as such. Then --reps rounds, the libraries in an order rotated
each round, each run one process of bench/trainc_runner.c on the model's
fixed batch (its median ms/step and peak RSS). Prints a Markdown table:
the solver whose plan was kept, planned arena, its share of the
unconstrained one, recomputed MFLOP per step, compile seconds, peak RSS (VmHWM, whole process), ms/step (median of the rounds'
medians, with the range) and the step time relative to no budget. Not a
test: nothing here fails on speed."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))
import export  # noqa: E402  (models/export.py: specs and fixed inputs)


def model_path(build, name):
    if name == "resnet18":
        path = os.path.join(build, "models", "resnet18.onnx")
        if not os.path.exists(path):
            subprocess.run([sys.executable, os.path.join(ROOT, "models", "export.py"),
                            "--out", os.path.dirname(path), "--only", "resnet18"],
                           check=True)
        return path
    return os.path.join(ROOT, "models", f"{name}.onnx")


def write_batch(workdir, name, scale):
    """The model's fixed batch as raw files, and trainc_runner's arguments."""
    spec = export.SPECS[name]
    xs, labels = export.make_inputs(spec)
    args = []
    for (input_name, _, _), x in zip(spec.inputs, xs):
        x = x.repeat(scale, *([1] * (x.dim() - 1))).numpy()
        path = os.path.join(workdir, f"{name}_{input_name}.bin")
        x.tofile(path)
        dtype = {"float32": "f32", "int64": "i64"}[str(x.dtype)]
        args += ["--input", f"{dtype}:{'x'.join(map(str, x.shape))}:{path}"]
    labels = labels.repeat(scale, *([1] * (labels.dim() - 1))).numpy()
    path = os.path.join(workdir, f"{name}_labels.bin")
    labels.tofile(path)
    args += ["--labels", f"i64:{'x'.join(map(str, labels.shape))}:{path}"]
    return spec.inputs[0][1][0] * scale, args


def compile_model(trainc, onnx, batch, budget, solver, schedule, library):
    command = [trainc, "compile", onnx, "--batch", str(batch), "--optimizer", "sgd",
               "--lr", "0.01", "--momentum", "0.9", "--loss", "softmax-cross-entropy",
               "--schedule", schedule, "--stats", "-o", library]
    if budget != "100%":
        command += ["--memory-budget", budget, "--remat-solver", solver]
    start = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True)
    run.seconds = time.monotonic() - start
    return run


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="resnet18,transformer")
    p.add_argument("--budgets", default="100%,75%,50%,min")
    p.add_argument("--solvers", default="best",
                   help="comma-separated --remat-solver values (greedy, ilp, best)")
    p.add_argument("--schedules", default="memory",
                   help="comma-separated --schedule values (memory, graph); the first "
                        "one's unconstrained arena is what N%% budgets are shares of")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-scale", type=int, default=1)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--workdir", default=None)
    args = p.parse_args()
    build = os.path.abspath(args.build_dir)
    workdir = args.workdir or os.path.join(build, "bench-remat")
    os.makedirs(workdir, exist_ok=True)
    trainc = os.path.join(build, "bin", "trainc")
    runner = os.path.join(build, "bin", "trainc-bench-runner")
    rows = []
    for name in args.models.split(","):
        onnx = model_path(build, name)
        batch, runner_args = write_batch(workdir, name, args.batch_scale)
        libraries = {}
        info = {}
        schedules = args.schedules.split(",")
        base_key = ("100%", "-", schedules[0])
        for budget in ["100%"] + [b for b in args.budgets.split(",") if b != "100%"]:
            for schedule in schedules:
                for solver in ["-"] if budget == "100%" else args.solvers.split(","):
                    key = (budget, solver, schedule)
                    if budget == "100%" and "100%" not in args.budgets.split(",") \
                            and key != base_key:
                        continue
                    requested = budget
                    if budget == "min":
                        run = compile_model(trainc, onnx, batch, "1", solver, schedule,
                                            os.path.join(workdir, "x.so"))
                        found = re.search(r"(\d+) bytes at least with it", run.stderr)
                        if not found:
                            print(run.stderr)
                            raise SystemExit(f"{name}: no smallest arena in the error")
                        requested = found.group(1)
                    elif budget.endswith("%") and budget != "100%":
                        requested = str(int(info[base_key]["arena"] * float(budget[:-1]) / 100))
                    library = os.path.join(
                        workdir, f"lib{name}_{budget.rstrip('%')}_{solver}_{schedule}.so")
                    run = compile_model(trainc, onnx, batch, requested, solver, schedule,
                                        library)
                    if run.returncode:
                        info[key] = {"error": run.stderr.strip().splitlines()[-1]}
                        continue
                    arena = int(re.search(r"@train_step: arena (\d+) bytes", run.stdout).group(1))
                    flops = re.search(r"([\d.]+) MFLOP per step", run.stdout)
                    kept = re.search(r"--remat-solver \w+: (\w+)", run.stdout)
                    info[key] = {"arena": arena,
                                 "mflop": float(flops.group(1)) if flops else 0.0,
                                 "kept": kept.group(1) if kept else "-",
                                 "seconds": run.seconds, "ms": [], "rss": []}
                    libraries[key] = library
        order = list(libraries)
        for rep in range(args.reps):
            for requested in order[rep % len(order):] + order[:rep % len(order)]:
                out = subprocess.run([runner, libraries[requested], "--threads", str(args.threads),
                                      "--warmup", "3", "--min-steps", "10", "--max-steps", "200",
                                      "--min-seconds", "2.0"] + runner_args,
                                     capture_output=True, text=True, check=True).stdout
                result = json.loads(out.strip().splitlines()[-1])
                info[requested]["ms"].append(statistics.median(result["ms"]))
                info[requested]["rss"].append(result["hwm_timed_kb"])
        base = info.get(base_key, {}).get("ms")
        base_arena = info.get(base_key, {}).get("arena")
        for (requested, solver, schedule), got in info.items():
            if "error" in got:
                rows.append(f"| {name} | {batch} | {schedule} | {requested} | {solver} "
                            "| cannot be met | | | | | | |")
                continue
            ms = statistics.median(got["ms"])
            share = f"{100 * got['arena'] / base_arena:.0f} %" if base_arena else ""
            slower = f"{ms / statistics.median(base):.3f}" if base else ""
            rows.append(f"| {name} | {batch} | {schedule} | {requested} | {solver}: {got['kept']} "
                        f"| {got['arena'] / 2**20:.1f} MiB "
                        f"| {share} | {got['mflop']:.0f} | {got['seconds']:.1f} "
                        f"| {max(got['rss']) / 1024:.0f} MiB "
                        f"| {ms:.2f} ({min(got['ms']):.2f}-{max(got['ms']):.2f}) | {slower} |")
    print("| model | batch | schedule | budget | solver: kept | planned arena "
          "| of unconstrained | recomputed MFLOP/step | compile s | peak RSS "
          "| ms/step (range) | time vs 100 % |")
    print("|---|--:|---|---|---|--:|--:|--:|--:|--:|--:|--:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
