#!/usr/bin/python3
"""Data-parallel scaling: 1 process x 1 thread against 2 processes x 1 thread.

  /usr/bin/python3 bench/data_parallel.py [--models mlp,cnn,...] [--reps 3]
      [--build-dir build] [--workdir DIR] [--bucket-mib 1]

For each model, at its reference batch B (models/export.py's SPECS), SGD +
momentum 0.9 and softmax cross-entropy, bench/trainc_runner.c times, in
`--reps` interleaved rounds of fixed step counts (medians of each run's
median ms/step, one thread per process):

  1 x 1     the library without --data-parallel, one process: B samples a
            step
  dp x1     the --data-parallel library in one process (no launcher): what
            packing the buckets costs
  2 alone   two processes of the plain library at once (mpirun -np 2, no
            communication): the same contention for cores, caches and
            memory as the job, without its all-reduces
  2 x 1     the --data-parallel library under mpirun -np 2: 2 B samples a
            step, gradients averaged in buckets of --bucket-mib overlapped
            with the backward pass
  2 x 1 one bucket   the same with one bucket for every gradient (started
            after the last gradient, waited at once): no overlap
  2 x 1 MPI the 2 x 1 job with TRAINC_MPI_SHARED_MEMORY=0: MPI_Allreduce
            instead of the shared arenas both processes map (they run on
            one host here)
  torch 1 x 1, torch DDP 2 x 1   PyTorch eager (Debian's, bench/peer_torch.py)
            on one process, and DistributedDataParallel over gloo on two
            (its --bucket-mb the same as trainc's), for the same ratio

Reported: samples/s, the scaling efficiency (the job's samples/s over
twice one process's, weak scaling), and the share of the communication's
cost hidden by the overlap, 1 - (2x1 - alone) / (one bucket - alone): the
step time the all-reduces add with buckets against without overlap. The
runtime's counters (trainc_get_communication: seconds the collectives ran
on the communication thread and seconds the steps blocked waiting for
them) are printed too.

Both processes run on this machine (Open MPI's shared-memory transport);
a network between hosts is not measured. Not a test."""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as harness  # noqa: E402  (bench/run.py: models, data, runner)

DEFAULT_MODELS = ["mlp", "cnn", "cnn_bn_opset15", "transformer", "resnet18"]
STEPS = {"resnet18": 10}


def compile_library(model, trainc, workdir, extra, tag):
    library = os.path.join(workdir, f"lib{model.name}_{tag}.so")
    command = [trainc, "compile", model.onnx, "--batch", str(model.batch),
               "--optimizer", "sgd", "--lr", str(harness.LR), "--momentum",
               str(harness.MOMENTUM), "--loss", "softmax-cross-entropy",
               "-o", library] + extra
    print("$", shlex.join(command), flush=True)
    subprocess.run(command, check=True, capture_output=True)
    return library


def timed(command, processes, workdir, env=None):
    """Runs a runner (under mpirun for several processes, each writing its
    own stdout: mpirun --output-filename, so that lines do not interleave)
    with `env` added to the environment; the JSON line of every process,
    or None."""
    env = env or {}
    output = os.path.join(workdir, "output")
    shutil.rmtree(output, ignore_errors=True)
    if processes > 1:
        exported = [a for name in env for a in ("-x", name)]
        command = command[:1] + ["--output-filename", output] + exported + command[1:]
    run = subprocess.run(command, capture_output=True, text=True,
                         env=harness.clean_env(env), timeout=1800)
    texts = [run.stdout]
    if processes > 1:
        texts = []
        for rank in range(processes):
            path = os.path.join(output, "1", f"rank.{rank}", "stdout")
            texts.append(open(path).read() if os.path.exists(path) else "")
    lines = [json.loads(l) for text in texts for l in text.splitlines()
             if l.startswith("{")]
    if run.returncode or len(lines) != processes:
        print(run.stdout, run.stderr)
        return None
    return sorted(lines, key=lambda line: line.get("rank", 0))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(DEFAULT_MODELS))
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--build-dir", default=os.path.join(harness.ROOT, "build"))
    p.add_argument("--workdir", default="/tmp/trainc-bench-dp")
    p.add_argument("--bucket-mib", default="1")
    args = p.parse_args()
    trainc = os.path.join(args.build_dir, "bin", "trainc")
    runner = os.path.join(args.build_dir, "bin", "trainc-bench-runner")
    mpirun = [shutil.which("mpirun") or "mpirun", "-np", "2", "--bind-to", "none"]
    if os.geteuid() == 0:
        mpirun.append("--allow-run-as-root")
    os.makedirs(args.workdir, exist_ok=True)

    rows = []
    for name in args.models.split(","):
        spec = harness.export.SPECS[name]
        model = harness.Model(name=name, onnx=harness.onnx_path(name, args.build_dir),
                              batch=spec.inputs[0][1][0],
                              data=os.path.join(args.workdir, name),
                              inputs=[i[0] for i in spec.inputs])
        harness.write_data(model)
        plain = compile_library(model, trainc, args.workdir, [], "plain")
        parallel = compile_library(model, trainc, args.workdir,
                                   ["--data-parallel", "--bucket-mib", args.bucket_mib],
                                   "dp")
        steps = str(STEPS.get(name, 30))
        measure = ["--threads", "1", "--warmup", "3", "--min-steps", steps,
                   "--max-steps", steps, "--min-seconds", "0"]
        one_bucket = compile_library(model, trainc, args.workdir,
                                     ["--data-parallel", "--bucket-mib", "1000000"],
                                     "one_bucket")
        times = {key: [] for key in ("1x1", "dp1", "alone", "2x1", "one",
                                     "mpi", "torch", "ddp")}
        peer = [sys.executable, os.path.join(HERE, "peer_torch.py"), "--mode", "eager",
                "--model", name, "--onnx", model.onnx, "--data", model.data,
                "--inputs", ",".join(model.inputs), "--lr", str(harness.LR),
                "--momentum", str(harness.MOMENTUM)] + measure
        counters = []
        for _ in range(args.reps):
            runs = {
                "1x1": timed([runner, plain] + measure + model.runner_args, 1, args.workdir),
                "dp1": timed([runner, parallel] + measure + model.runner_args, 1, args.workdir),
                "alone": timed(mpirun + [runner, plain] + measure + model.runner_args, 2, args.workdir),
                "2x1": timed(mpirun + [runner, parallel] + measure + model.runner_args, 2, args.workdir),
                "one": timed(mpirun + [runner, one_bucket] + measure + model.runner_args, 2, args.workdir),
                "mpi": timed(mpirun + [runner, parallel] + measure + model.runner_args, 2,
                             args.workdir, {"TRAINC_MPI_SHARED_MEMORY": "0"}),
                "torch": timed(peer, 1, args.workdir),
                "ddp": timed(mpirun + peer + ["--ddp", "--bucket-mb", args.bucket_mib], 2, args.workdir),
            }
            if not all(runs.values()):
                raise SystemExit(f"{name}: a run failed")
            for key, lines in runs.items():
                # A step of the job ends when its slower process's does.
                times[key].append(max(statistics.median(l["ms"]) for l in lines))
            steps_run = len(runs["2x1"][0]["ms"])
            counters.append([(1e3 * l["comm_busy_s"] / steps_run,
                              1e3 * l["comm_waited_s"] / steps_run)
                             for l in runs["2x1"]])
        med = {key: statistics.median(values) for key, values in times.items()}
        added = med["2x1"] - med["alone"]
        unhidden = med["one"] - med["alone"]
        row = {"model": name, "batch": model.batch,
               "ms": med, "ranges": {k: [min(v), max(v)] for k, v in times.items()},
               "samples_1": model.batch / med["1x1"] * 1e3,
               "samples_2": 2 * model.batch / med["2x1"] * 1e3,
               "efficiency": med["1x1"] / med["2x1"],
               "mpi_efficiency": med["1x1"] / med["mpi"],
               "torch_efficiency": med["torch"] / med["ddp"],
               "hidden": 1 - added / unhidden if unhidden > 0 else float("nan"),
               "comm_ms_per_step": [statistics.median(c[r][0] for c in counters)
                                    for r in range(2)],
               "blocked_ms_per_step": [statistics.median(c[r][1] for c in counters)
                                       for r in range(2)]}
        rows.append(row)
        print(json.dumps(row), flush=True)

    lines = ["| model (batch per process) | 1 x 1 | dp x1 | 2 alone | 2 x 1 | "
             "2 x 1 one bucket | 2 x 1 MPI | samples/s 1 x 1 | samples/s 2 x 1 | scaling "
             "efficiency (MPI) | communication hidden | collectives / blocked (ms/step, rank 0) "
             "| torch 1 x 1 | torch DDP 2 x 1 | DDP scaling efficiency |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ms, ranges = r["ms"], r["ranges"]
        cell = lambda k: f"{ms[k]:.2f} ({ranges[k][0]:.2f}-{ranges[k][1]:.2f})"
        lines.append(
            f"| {r['model']} ({r['batch']}) | {cell('1x1')} | {cell('dp1')} | "
            f"{cell('alone')} | {cell('2x1')} | {cell('one')} | {cell('mpi')} | "
            f"{r['samples_1']:.0f} | {r['samples_2']:.0f} | {100 * r['efficiency']:.0f} % "
            f"({100 * r['mpi_efficiency']:.0f} %) | "
            f"{100 * r['hidden']:.0f} % | {r['comm_ms_per_step'][0]:.2f} / "
            f"{r['blocked_ms_per_step'][0]:.2f} | {cell('torch')} | {cell('ddp')} | "
            f"{100 * r['torch_efficiency']:.0f} % |")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(args.workdir, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(args.workdir, "results.md"), "w") as f:
        f.write(table + "\n")


if __name__ == "__main__":
    main()
