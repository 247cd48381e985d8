#!/usr/bin/env python3
"""--memory-budget in the process's memory: a session uses no more than its
plan, and a smaller planned arena is a smaller peak RSS.

Compiles MODEL at its reference batch without a budget and with the
smallest arena --trainc-remat reaches, and trains each library for a few
steps in bench/trainc_runner.c (one process each), which reports VmRSS
before the session opens and the peak (VmHWM) while it trains. Checks:

  peak - RSS before open <= persistent bytes + arena + library scratch
                             + SLACK
      (the arena and the libraries' scratch as trainc_get_memory reports
      them, the arena being the planned one; the peak is the one while
      training, after the session opened and gave back the pages of the
      library's embedded weights; SLACK, what the session allocates
      beyond its plan: oneDNN's primitives and JIT code, the thread pool,
      malloc's arenas: 48 MiB)
  peak(no budget) - peak(budget) >= 3/4 (arena(no budget) - arena(budget))
      (the bytes the plan saves are bytes the process saves)

Exits 1 when either fails.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

from reference_batch import smallest_budget

SLACK = 48 << 20


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trainc", required=True)
    p.add_argument("--runner", required=True, help="trainc-bench-runner")
    p.add_argument("--model", required=True)
    p.add_argument("--reference", required=True, help="MODEL.ref directory")
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    ref = json.load(open(os.path.join(args.reference, "reference.json")))
    os.makedirs(args.workdir, exist_ok=True)
    batch = str(ref["inputs"][0]["shape"][0])
    runner_args = []
    for spec in ref["inputs"]:
        array = np.load(os.path.join(args.reference, "fp32", "inputs", spec["name"] + ".npy"))
        path = os.path.join(args.workdir, spec["name"] + ".bin")
        array.tofile(path)
        dtype = {"float32": "f32", "int64": "i64", "int32": "i32"}[str(array.dtype)]
        runner_args += ["--input", f"{dtype}:{'x'.join(map(str, array.shape))}:{path}"]
    labels = np.load(os.path.join(args.reference, "fp32", "labels.npy"))
    labels_path = os.path.join(args.workdir, "labels.bin")
    labels.tofile(labels_path)
    runner_args += ["--labels", f"i64:{'x'.join(map(str, labels.shape))}:{labels_path}"]

    options = ["--batch", batch, "--optimizer", "sgd", "--lr", "0.01", "--momentum", "0.9",
               "--stats"]

    def compile_model(name, extra):
        library = os.path.join(args.workdir, f"lib{name}.so")
        run = subprocess.run([args.trainc, "compile", args.model, "-o", library] + options
                             + extra, capture_output=True, text=True)
        return run, library

    smallest = smallest_budget([args.trainc, "compile", args.model, "-o",
                                os.path.join(args.workdir, "probe.so")] + options)
    if smallest is None:
        return 1
    failures = 0
    measured = {}
    for name, extra in (("plain", []), ("budget", ["--memory-budget", smallest])):
        run, library = compile_model(name, extra)
        if run.returncode:
            print(run.stderr)
            return 1
        arena = int(re.search(r"@train_step: arena (\d+) bytes", run.stdout).group(1))
        persistent = int(re.search(r"persistent \([^)]*\): (\d+) bytes", run.stdout).group(1))
        out = subprocess.run([args.runner, library, "--threads", "2", "--warmup", "2",
                              "--min-steps", "3", "--max-steps", "3", "--min-seconds", "0"]
                             + runner_args, capture_output=True, text=True)
        if out.returncode:
            print(out.stdout, out.stderr)
            return 1
        result = json.loads(out.stdout.strip().splitlines()[-1])
        if result["arena_bytes"] != arena:
            print(f"FAILED: the session's arena is {result['arena_bytes']} bytes, the plan "
                  f"{arena}")
            return 1
        scratch = result["library_scratch_bytes"]
        peak = max(result["hwm_warmup_kb"], result["hwm_timed_kb"]) * 1024
        used = peak - result["rss_before_open_kb"] * 1024
        bound = persistent + arena + scratch + SLACK
        ok = used <= bound
        failures += not ok
        print(f"{name}: arena {arena}, persistent {persistent}, library scratch {scratch} "
              f"bytes; session peak {used} bytes above the RSS "
              f"before it opened (bound: their sum + {SLACK >> 20} MiB = {bound}) "
              f"{'ok' if ok else 'FAIL'}")
        measured[name] = (arena, peak)
    saved_plan = measured["plain"][0] - measured["budget"][0]
    saved_rss = measured["plain"][1] - measured["budget"][1]
    ok = saved_rss >= 0.75 * saved_plan
    failures += not ok
    print(f"the budget saves {saved_plan} bytes of planned arena and {saved_rss} bytes of "
          f"peak RSS (at least 3/4 of it needed) {'ok' if ok else 'FAIL'}")
    print("FAILED" if failures else "the session stays within its plan")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
