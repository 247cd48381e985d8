"""The measurement protocol of every Python peer (the same as
bench/trainc_runner.c's): RSS just before the first step, the peak reset
there, warm-up steps, the peak read and reset again, timed steps until both
--min-steps and --min-seconds are met (or --max-steps), the peak read last.
Prints one JSON line. No third-party imports: runs under any interpreter."""
import argparse
import json
import time


def status_kb(field):
    """A field of /proc/self/status in kB (VmRSS, VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def reset_peak():
    """Resets VmHWM to the current VmRSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def add_arguments(parser: argparse.ArgumentParser):
    """The options every peer takes (bench/run.py passes them all): the
    model, its fixed batch and the optimizer, and how to measure."""
    parser.add_argument("--model", required=True, help="a models/export.py name")
    parser.add_argument("--onnx", required=True, help="the model's ONNX file")
    parser.add_argument("--data", required=True,
                        help="directory of INPUT.npy, labels.npy and weights.npz")
    parser.add_argument("--inputs", required=True, help="input names, comma-separated")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--min-steps", type=int, default=5)
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--min-seconds", type=float, default=2.0)


def run(step, args, **extra):
    """Times `step()` (one training step returning the loss as a float) and
    prints the result line; `extra` is added to it (framework, mode, ...)."""
    rss_before = status_kb("VmRSS")
    peak_reset = reset_peak()
    first_loss = None
    for _ in range(args.warmup):
        loss = step()
        first_loss = loss if first_loss is None else first_loss
    hwm_warmup = status_kb("VmHWM")
    peak_reset = reset_peak() and peak_reset
    times = []
    while len(times) < args.min_steps or (
            sum(times) < args.min_seconds * 1e3 and len(times) < args.max_steps):
        start = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - start) * 1e3)
        first_loss = loss if first_loss is None else first_loss
    hwm_timed = status_kb("VmHWM")
    print(json.dumps({**extra, "threads": args.threads, "ms": times,
                      "first_loss": first_loss, "last_loss": loss,
                      "rss_before_kb": rss_before, "hwm_warmup_kb": hwm_warmup,
                      "hwm_timed_kb": hwm_timed, "peak_reset": peak_reset}),
          flush=True)
