"""The VM's phases: the cross-core round trip probed around each run.

On the 2-vCPU VMs this project is measured on, the host moves the two
vCPUs between its cores every few seconds; while they are on different
core complexes a cache line's round trip between them takes about 4x as
long, and every two-thread step slows down (docs/PERFORMANCE.md,
"Reading the numbers"). `probe` runs build/bin/trainc-core-latency
(bench/core_latency.c); a run is in a slow phase when a probe next to it
took more than SLOW_FACTOR times the fastest probe of the session.
"""
import json
import os
import subprocess

SLOW_FACTOR = 2.0


def probe(tool):
    """The round trip in ns, or None (no tool, or fewer than two CPUs)."""
    if not tool or not os.path.exists(tool):
        return None
    run = subprocess.run([tool], capture_output=True, text=True)
    if run.returncode:
        return None
    return json.loads(run.stdout.strip().splitlines()[-1])["round_trip_ns"]


def slow_limit(probes):
    """The round trip above which a probe is in a slow phase (None if none
    was measured)."""
    measured = [p for p in probes if p is not None]
    return SLOW_FACTOR * min(measured) if measured else None


def is_slow(run_probes, limit):
    return limit is not None and any(p is not None and p > limit for p in run_probes)


def summary_line(probes, slow_runs, total_runs):
    measured = sorted(p for p in probes if p is not None)
    if not measured:
        return "cross-core round trip: not probed (no trainc-core-latency, or one CPU)"
    return (f"cross-core round trip (bench/core_latency.c), {len(measured)} probes: "
            f"{measured[0]:.0f}-{measured[-1]:.0f} ns, median "
            f"{measured[len(measured) // 2]:.0f}; {slow_runs} of {total_runs} runs "
            f"next to a probe above {SLOW_FACTOR:g}x the fastest (a slow phase)")
