#!/usr/bin/env python3
"""`trainc compile --tune` on the LeNet-style CNN at batch 8:
  1. it times the convolutions and GEMMs on oneDNN and OpenBLAS and caches
     the times (a JSON file keyed by CPU, threads and launch shape);
  2. a second compile reads every time from the cache and measures nothing;
  3. the cache decides: with every time rigged in favour of one library,
     every such launch runs on it;
  4. --dispatch wins over the times;
  5. a file that is not a cache, and --tune for another CPU, are errors
     that name the cause, and leave the output unwritten.
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


def compile_kernel(args, cache, output, *extra):
    cmd = [args.trainc, "compile", args.model, "--batch", "8", "--emit",
           "kernel", "-o", output, "--tune", "--tune-cache", cache, *extra]
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True)


def summary(run):
    text = run.stdout + run.stderr
    match = re.search(r"--tune: (\d+) launches with a choice of library, "
                      r"(\d+) timings measured, (\d+) from", text)
    if not match:
        fail("no --tune summary in:\n" + text)
    return [int(g) for g in match.groups()]


def backends(path):
    """(kernel, backend) of every conv / GEMM launch in the kernel IR."""
    found = []
    for line in open(path):
        m = re.search(r'kernel\.launch "(graph\.(?:conv\w*|gemm|matmul))".*'
                      r'backend = "(\w+)"', line)
        if m:
            found.append(m.groups())
    if not found:
        fail("no conv or GEMM launch in " + path)
    return found


def rig(cache, fast):
    data = json.load(open(cache))
    for times in data["times"].values():
        for backend in times:
            times[backend] = 0.001 if backend == fast else 1000.0
    json.dump(data, open(cache, "w"))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trainc", required=True)
    p.add_argument("--model", required=True, help="models/cnn.onnx")
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    cache = os.path.join(args.workdir, "times.json")
    output = os.path.join(args.workdir, "cnn.kernel.mlir")
    for path in (cache, output):
        if os.path.exists(path):
            os.remove(path)

    # 1. Measured and cached.
    run = compile_kernel(args, cache, output)
    if run.returncode != 0:
        fail("trainc compile --tune exited with %d:\n%s" % (run.returncode,
                                                             run.stderr))
    launches, measured, cached = summary(run)
    # Launches of the same shape share one timing, so a first compile may
    # already read some times back; each launch has two candidates.
    if launches == 0 or measured == 0 or measured + cached != 2 * launches:
        fail(f"first compile: {launches} launches, {measured} measured, "
             f"{cached} cached")
    data = json.load(open(cache))
    if data.get("version") != 1 or not data.get("times"):
        fail("the cache holds no times: %s" % data)
    for key, times in data["times"].items():
        if not re.search(r" threads, r\d+: graph\.", key) or set(times) - {"dnnl", "openblas"}:
            fail(f"unexpected cache entry {key}: {times}")
        if any(ms <= 0 for ms in times.values()):
            fail(f"a failed timing in {key}: {times}")

    # 2. From the cache.
    run = compile_kernel(args, cache, output)
    again = summary(run)
    if again[1] != 0 or again[2] == 0:
        fail(f"second compile measured {again[1]}, read {again[2]} from cache")

    # 3. The times decide.
    for fast in ("openblas", "dnnl"):
        rig(cache, fast)
        run = compile_kernel(args, cache, output)
        if run.returncode != 0:
            fail(run.stderr)
        wrong = [k for k, b in backends(output) if b != fast]
        if wrong:
            fail(f"times favour {fast}, yet {wrong} run elsewhere")

    # 4. --dispatch wins (the cache now favours dnnl).
    run = compile_kernel(args, cache, output, "--dispatch", "conv=openblas")
    if run.returncode != 0:
        fail(run.stderr)
    for kernel, backend in backends(output):
        expected = "openblas" if kernel == "graph.conv" else "dnnl"
        if backend != expected:
            fail(f"{kernel} on {backend}, expected {expected}")

    # 5. Errors.
    os.remove(output)
    with open(cache, "w") as f:
        f.write("not json")
    run = compile_kernel(args, cache, output)
    if run.returncode == 0 or cache not in run.stderr + run.stdout:
        fail("a corrupt cache was not an error naming it:\n" + run.stderr)
    run = compile_kernel(args, cache, output, "--cpu", "x86-64-v3")
    if run.returncode == 0 or "--cpu=native" not in run.stderr + run.stdout:
        fail("--tune for another CPU was not an error:\n" + run.stderr)
    if os.path.exists(output):
        fail("a failed compile wrote " + output)
    print("PASS: --tune measures, caches, obeys its times and --dispatch")


if __name__ == "__main__":
    main()
