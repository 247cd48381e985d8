#!/usr/bin/python3
"""Interleaved A/B of trainc model libraries on one fixed batch.

  /usr/bin/python3 bench/ab.py [--rounds 8] [--threads 2] [--min-seconds 1]
      [--runner build/bin/trainc-bench-runner]
      --input DTYPE:SHAPE:FILE [--input ...] [--labels DTYPE:SHAPE:FILE]
      LIB_A.so LIB_B.so [LIB_C.so ...]

Each round runs every library once (trainc-bench-runner, one process
each), in an order reversed every other round, so that the machine's slow
and fast phases fall on all of them alike. Prints each library's median
of its runs' median ms/step (and range), then for every library after the
first the ratio A / X per round: its median and range (a ratio above 1:
X is faster). Each run is bracketed by a probe of the cross-core round
trip (bench/phases.py); where some fell in one of the VM's slow phases,
the ratios are printed again from the rounds where neither run did. The
inputs are trainc-bench-runner's (bench/run.py writes
them under its --workdir, e.g. WORKDIR/resnet18/image.bin). Not a test:
nothing here fails on speed."""
import argparse
import json
import os
import statistics
import subprocess

import phases

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("libraries", nargs="+")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-seconds", type=float, default=1.0)
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--labels")
    parser.add_argument("--runner", default=os.path.join(
        os.path.dirname(HERE), "build", "bin", "trainc-bench-runner"))
    args = parser.parse_args()
    probe_tool = os.path.join(os.path.dirname(args.runner), "trainc-core-latency")
    if len(args.libraries) < 2:
        parser.error("give at least two libraries")
    if len(set(map(os.path.abspath, args.libraries))) != len(args.libraries):
        parser.error("a library is given twice (copy it to compare it with itself)")
    for library in args.libraries:
        if not os.path.isfile(library):
            parser.error(f"no library '{library}'")
    data = [a for spec in args.input for a in ("--input", spec)]
    if args.labels:
        data += ["--labels", args.labels]
    times = {library: [] for library in args.libraries}
    probes = {library: [] for library in args.libraries}
    for round_index in range(args.rounds):
        order = args.libraries if round_index % 2 == 0 else args.libraries[::-1]
        for library in order:
            command = [args.runner, os.path.abspath(library),
                       "--threads", str(args.threads), "--warmup", "3",
                       "--min-steps", "20", "--max-steps", "1000",
                       "--min-seconds", str(args.min_seconds)] + data
            before = phases.probe(probe_tool)
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode != 0:
                raise SystemExit(f"{' '.join(command)}:\n{run.stderr}")
            line = json.loads(run.stdout.strip().splitlines()[-1])
            times[library].append(statistics.median(line["ms"]))
            probes[library].append([before, phases.probe(probe_tool)])
    for library, values in times.items():
        print(f"{library}: {statistics.median(values):.2f} ms "
              f"({min(values):.2f}-{max(values):.2f})")
    first = args.libraries[0]
    for library in args.libraries[1:]:
        ratios = [a / b for a, b in zip(times[first], times[library])]
        print(f"{first} / {library}: {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f}-{max(ratios):.3f})")
    every = [pair for runs in probes.values() for pair in runs]
    limit = phases.slow_limit([p for pair in every for p in pair])
    slow = [any(phases.is_slow(probes[library][r], limit) for library in args.libraries)
            for r in range(args.rounds)]
    print(phases.summary_line([p for pair in every for p in pair],
                              sum(phases.is_slow(pair, limit) for pair in every),
                              len(every)))
    fast = [r for r in range(args.rounds) if not slow[r]]
    if any(slow) and fast:
        for library in args.libraries[1:]:
            ratios = [times[first][r] / times[library][r] for r in fast]
            print(f"{first} / {library}, the {len(fast)} rounds without a slow "
                  f"phase: {statistics.median(ratios):.3f} "
                  f"({min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    main()
