#!/usr/bin/python3
"""trainc against its peers: ms per training step, GFLOP/s and memory.

  /usr/bin/python3 bench/run.py
      [--models mlp,cnn,resnet18,transformer,mobilenet_v2,efficientnet_b0]
      [--reps 5] [--peers ...] [--quick] [--build-dir build] [--workdir DIR]

For each model: `trainc compile` (timed) with SGD + momentum 0.9, lr 0.01
and softmax cross-entropy at the model's batch (models/export.py's SPECS;
ResNet-18 and the torchvision families are exported on first use);
then `--reps` rounds, each running trainc and every peer in every thread
configuration, one process per run, in an order rotated every round. A
run trains on one fixed batch (models/export.py's inputs, the ONNX file's
weights in every framework) and reports each step's time, the losses and
resident memory (bench/measure.py; bench/trainc_runner.c for trainc).
Per configuration the median over rounds of each run's median ms/step is
kept; each framework is reported in its fastest configuration. Each run
is bracketed by a probe of the cross-core round trip (bench/phases.py):
where some runs fell in one of the VM's slow phases, the table is printed
again from the runs in the fast phase only.

Peers (--peers, all by default): torch-eager and torch-script (Debian's
torch, this interpreter); torch2-eager, torch2-compile, jax, ort (the
virtual environment --venv, made by bench/setup_peers.sh). A peer that is
not installed is skipped with a line saying so.

With --isa avx2, every framework is kept to AVX2 on an AVX-512 machine,
to stand in for an AVX2-only CPU (its code paths, not its clock or
caches): trainc compiles with `--cpu znver3` (an AVX2-only Zen 3), and
every run gets ISA_LIMITS' variables (oneDNN's, PyTorch's ATen, OpenBLAS,
XLA); ONNX Runtime has no such variable and runs its AVX-512 kernels.

With --amp bf16, trainc also runs a library compiled with --amp bf16
("trainc-bf16") and PyTorch (Debian's) runs under torch.autocast("cpu",
torch.bfloat16) ("torch-autocast-bf16"), in the same rounds.

Prints a Markdown table and writes WORKDIR/results.json (every run) and
WORKDIR/results.md. See docs/PERFORMANCE.md. Not a test: nothing here
fails on speed."""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))
import export  # noqa: E402  (models/export.py: specs and fixed inputs)
import flops  # noqa: E402
import phases  # noqa: E402
import numpy as np  # noqa: E402

DEFAULT_MODELS = ["mlp", "cnn", "resnet18", "transformer", "mobilenet_v2",
                  "efficientnet_b0"]
LR, MOMENTUM = 0.01, 0.9
# Environment variables that would change a run's threads behind its back.
THREAD_VARIABLES = ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "XLA_FLAGS"]


# What keeps each library to an ISA (--isa): oneDNN (trainc's and
# PyTorch's), PyTorch's own kernels, OpenBLAS (Debian's is built for every
# CPU and picks one at load), XLA (JAX). The CPU trainc compiles for.
ISA_LIMITS = {"avx2": {"DNNL_MAX_CPU_ISA": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                       "ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell",
                       "XLA_FLAGS": "--xla_cpu_max_isa=AVX2"}}
ISA_CPU = {"avx2": "znver3"}


@dataclass
class Config:
    """One way to run a framework: its thread count and extra environment."""
    threads: int
    env: Dict[str, str] = field(default_factory=dict)

    def label(self):
        extra = " ".join(f"{k}={v}" for k, v in self.env.items())
        return f"{self.threads}t" + (f" {extra}" if extra else "")


@dataclass
class Framework:
    """A peer: the interpreter and script that run it, and what it needs."""
    python: str
    script: str
    args: List[str]         # its own arguments (the mode)
    check: str              # Python code that fails when the peer cannot run
    blas_choice: bool       # whether OPENBLAS_NUM_THREADS=1 is a configuration


def frameworks(venv_python):
    torch_peer = os.path.join(HERE, "peer_torch.py")
    debian = "/usr/bin/python3"
    torch2 = "import torch, torchvision, onnx"
    return {
        "torch-eager": Framework(debian, torch_peer, ["--mode", "eager"], "import torch", True),
        "torch-script": Framework(debian, torch_peer, ["--mode", "torchscript"],
                                  "import torch", True),
        "torch2-eager": Framework(venv_python, torch_peer, ["--mode", "eager"], torch2, False),
        "torch2-compile": Framework(venv_python, torch_peer, ["--mode", "compile"],
                                    torch2 + "; assert hasattr(torch, 'compile')", False),
        "jax": Framework(venv_python, os.path.join(HERE, "peer_jax.py"), [], "import jax",
                         False),
        "ort": Framework(venv_python, os.path.join(HERE, "peer_ort.py"), [],
                         "import onnx, onnxruntime.training.api", False),
        "torch-autocast-bf16": Framework(debian, torch_peer,
                                         ["--mode", "eager", "--autocast", "bf16"],
                                         "import torch", True),
    }
# Peers that run only with --amp.
AMP_PEERS = {"bf16": ["torch-autocast-bf16"]}


def configs(framework: Optional[Framework], thread_counts, quick):
    """Thread configurations of trainc (framework None) or a peer."""
    if quick:
        return [Config(min(thread_counts))]
    found = [Config(t) for t in thread_counts]
    if framework and framework.blas_choice:
        found += [Config(t, {"OPENBLAS_NUM_THREADS": "1"}) for t in thread_counts]
    return found


def clean_env(extra, isa=None):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env.update(ISA_LIMITS.get(isa, {}))
    env.update(extra)
    return env


def installed(framework: Framework):
    """None if the framework's peer can run, else why not."""
    if not os.path.exists(framework.python):
        return f"no interpreter {framework.python} (run bench/setup_peers.sh)"
    run = subprocess.run([framework.python, "-c", framework.check], capture_output=True,
                         text=True)
    if run.returncode:
        lines = run.stderr.strip().splitlines()
        return f"{framework.python}: {lines[-1] if lines else 'import failed'}"
    return None


# --------------------------------------------------------------------------- one model

@dataclass
class Model:
    name: str
    onnx: str
    batch: int
    data: str                       # directory of the fixed batch and weights
    inputs: List[str]
    library: str = ""
    amp_library: str = ""           # with --amp: the mixed-precision library
    compile_seconds: List[float] = field(default_factory=list)
    stats: Dict[str, int] = field(default_factory=dict)
    train_flops: float = 0.0
    runner_args: List[str] = field(default_factory=list)


def onnx_path(name, build_dir):
    if name != "resnet18" and name not in export.TORCHVISION:
        return os.path.join(ROOT, "models", f"{name}.onnx")
    path = os.path.join(build_dir, "models", f"{name}.onnx")
    if not os.path.exists(path):  # exported on demand, as the tests do
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "export.py"), "onnx",
                        "--out", os.path.dirname(path), "--only", name], check=True)
    return path


def write_data(model: Model):
    """The fixed batch as .npy (Python peers) and raw .bin (trainc's runner),
    and the ONNX initializers as weights.npz (the JAX peer)."""
    import onnx
    from onnx import numpy_helper

    spec = export.SPECS[model.name]
    os.makedirs(model.data, exist_ok=True)
    xs, labels = export.make_inputs(spec)
    arrays = {name: x.numpy() for (name, _, _), x in zip(spec.inputs, xs)}
    arrays["labels"] = labels.numpy()
    for name, array in arrays.items():
        np.save(os.path.join(model.data, f"{name}.npy"), array)
        array.tofile(os.path.join(model.data, f"{name}.bin"))
    weights = {t.name: numpy_helper.to_array(t) for t in onnx.load(model.onnx).graph.initializer}
    np.savez(os.path.join(model.data, "weights.npz"), **weights)
    # ORT's training artifacts are made from the ONNX file on first use.
    shutil.rmtree(os.path.join(model.data, "ort"), ignore_errors=True)

    def spec_of(name):
        array = arrays[name]
        dtype = {"float32": "f32", "int64": "i64", "int32": "i32"}[str(array.dtype)]
        shape = "x".join(str(d) for d in array.shape)
        return f"{dtype}:{shape}:{os.path.join(model.data, name + '.bin')}"

    model.runner_args = [a for n in model.inputs for a in ("--input", spec_of(n))]
    model.runner_args += ["--labels", spec_of("labels")]


def parse_stats(text):
    """Arena bytes per function and persistent bytes from `trainc compile --stats`."""
    stats = {f"arena {function}": int(size)
             for function, size in re.findall(r"@(\w+): arena (\d+) bytes", text)}
    persistent = re.search(r"persistent [^:]*: (\d+) bytes", text)
    if persistent:
        stats["persistent"] = int(persistent.group(1))
    return stats


def compile_amp_model(model: Model, trainc, workdir, amp, isa=None):
    """The model compiled with --amp AMP (not timed: compile time is the
    f32 library's column)."""
    model.amp_library = os.path.join(workdir, f"lib{model.name}_{amp}.so")
    command = [trainc, "compile", model.onnx, "--batch", str(model.batch),
               "--optimizer", "sgd", "--lr", str(LR), "--momentum", str(MOMENTUM),
               "--loss", "softmax-cross-entropy", "-o", model.amp_library, "--amp", amp]
    if isa:
        command += ["--cpu", ISA_CPU[isa]]
    print("$", shlex.join(command), flush=True)
    run = subprocess.run(command, capture_output=True, text=True,
                         env=clean_env({}, isa) if isa else None)
    if run.returncode:
        raise SystemExit(f"trainc compile failed:\n{run.stderr}")
    sys.stdout.write(run.stderr)  # says so when the CPU has no native bf16


def compile_model(model: Model, trainc, workdir, reps, tune=False, isa=None):
    model.library = os.path.join(workdir, f"lib{model.name}.so")
    command = [trainc, "compile", model.onnx, "--batch", str(model.batch),
               "--optimizer", "sgd", "--lr", str(LR), "--momentum", str(MOMENTUM),
               "--loss", "softmax-cross-entropy", "-o", model.library, "--stats"]
    if isa:
        command += ["--cpu", ISA_CPU[isa]]
    if tune:  # the first compile times the kernels, the others read the cache
        command += ["--tune", "--tune-cache", os.path.join(workdir, "dispatch-times.json")]
    print("$", shlex.join(command), flush=True)
    for _ in range(reps):
        start = time.perf_counter()
        run = subprocess.run(command, capture_output=True, text=True,
                             env=clean_env({}, isa) if isa else None)
        model.compile_seconds.append(time.perf_counter() - start)
        if run.returncode:
            raise SystemExit(f"trainc compile failed:\n{run.stderr}")
    model.stats = parse_stats(run.stdout + run.stderr)
    graph = subprocess.run([trainc, "compile", model.onnx, "--batch", str(model.batch),
                            "--emit", "graph"], capture_output=True, text=True, check=True)
    model.train_flops = flops.training_flops(graph.stdout)


# --------------------------------------------------------------------------- runs

def run_once(model: Model, framework: Optional[Framework], config: Config, args,
             library=None):
    """One run of a peer, or of trainc's `library` (framework None)."""
    measure = ["--threads", str(config.threads), "--warmup", str(args.warmup),
               "--min-steps", str(args.min_steps), "--max-steps", str(args.max_steps),
               "--min-seconds", str(args.min_seconds)]
    if framework is None:
        command = [args.runner, library] + measure + model.runner_args
    else:
        command = [framework.python, framework.script] + framework.args + measure + [
            "--model", model.name, "--onnx", model.onnx, "--data", model.data,
            "--inputs", ",".join(model.inputs), "--lr", str(LR), "--momentum", str(MOMENTUM)]
    before = phases.probe(args.probe)
    try:
        run = subprocess.run(command, capture_output=True, text=True,
                             env=clean_env(config.env, args.isa), timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s", "command": command}
    lines = [l for l in run.stdout.splitlines() if l.startswith("{")]
    if run.returncode or not lines:
        tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": tail, "command": command}
    result = json.loads(lines[-1])
    result["command"] = command
    result["round_trip_ns"] = [before, phases.probe(args.probe)]
    return result


def summarize(runs):
    """Median over rounds of each run's median ms/step, and memory growth."""
    good = [r for r in runs if "error" not in r]
    if not good:
        return None
    per_run = [statistics.median(r["ms"]) for r in good]
    summary = {"ms": statistics.median(per_run), "spread": [min(per_run), max(per_run)],
               "growth_kb": statistics.median(r["hwm_timed_kb"] - r["rss_before_kb"]
                                              for r in good),
               "first_loss": good[0]["first_loss"], "runs": len(good),
               "errors": len(runs) - len(good), "version": good[0].get("version", "")}
    if "rss_before_open_kb" in good[0]:
        summary["open_growth_kb"] = statistics.median(
            r["hwm_timed_kb"] - r["rss_before_open_kb"] for r in good)
    return summary


def summaries(saved):
    """{model: {framework: {configuration: summary or None}}} of a saved run."""
    grouped = {}
    for run in saved["runs"]:
        grouped.setdefault(run["model"], {}).setdefault(run["framework"], {}) \
            .setdefault(run["config"], []).append(run)
    return {model: {framework: {config: summarize(runs) for config, runs in per.items()}
                    for framework, per in by_framework.items()}
            for model, by_framework in grouped.items()}


def best_configurations(by_framework):
    """{framework: (summary, configuration)} of the fastest configuration."""
    best = {}
    for framework, per_config in by_framework.items():
        ran = [(s, c) for c, s in per_config.items() if s]
        if ran:
            best[framework] = min(ran, key=lambda sc: sc[0]["ms"])
    return best


def mib(kb):
    return f"{kb / 1024:.1f}"


def comparison_table(saved, results):
    """Each framework's fastest configuration against trainc's."""
    lines = ["| model (batch) | framework | best config | ms/step | range | "
             "peer / trainc | GFLOP/s | ΔRSS MiB | 1st loss |",
             "|---|---|---|--:|--:|--:|--:|--:|--:|"]
    for name, model in saved["models"].items():
        best = best_configurations(results.get(name, {}))
        base = best.get("trainc")
        for framework in results.get(name, {}):
            if framework not in best:
                error = next(r["error"] for r in saved["runs"]
                             if r["model"] == name and r["framework"] == framework)
                lines.append(f"| {name} ({model['batch']}) | {framework} | every run failed: "
                             f"{error[-120:].replace('|', '/')} ||||||")
                continue
            s, config = best[framework]
            ratio = f"{s['ms'] / base[0]['ms']:.2f}" if base else "–"
            version = f" {s['version']}" if s["version"] and framework != "trainc" else ""
            lines.append(
                f"| {name} ({model['batch']}) | {framework}{version} | {config} | "
                f"{s['ms']:.2f} | {s['spread'][0]:.2f}–{s['spread'][1]:.2f} | {ratio} | "
                f"{model['train_flops'] / (s['ms'] * 1e6):.1f} | {mib(s['growth_kb'])} | "
                f"{s['first_loss']:.5f} |")
    return lines


def fast_phase_tables(saved):
    """The probes' summary line and, where some runs fell in a slow phase,
    the comparison again from the runs in the fast phase only."""
    probed = [r.get("round_trip_ns", [None, None]) for r in saved["runs"]]
    limit = phases.slow_limit([p for pair in probed for p in pair])
    slow = [phases.is_slow(pair, limit) for pair in probed]
    lines = ["", phases.summary_line([p for pair in probed for p in pair], sum(slow),
                                     len(slow))]
    if all(slow):
        lines += ["", "No run fell in the fast phase."]
    elif any(slow):
        fast = dict(saved, runs=[r for r, s in zip(saved["runs"], slow) if not s])
        lines += ["", "The runs in the fast phase only (a framework whose every run "
                  "fell in a slow phase is left out):", ""]
        lines += comparison_table(fast, summaries(fast))
    return lines


def report(saved):
    """The Markdown tables of a saved run (results.json)."""
    results = summaries(saved)
    lines = comparison_table(saved, results)
    lines += fast_phase_tables(saved)
    lines += ["", "| model | training GFLOP/step | trainc compile s (median) | "
              "arena MiB (train_step) | persistent MiB | trainc ΔRSS from session open MiB |",
              "|---|--:|--:|--:|--:|--:|"]
    for name, model in saved["models"].items():
        base = best_configurations(results.get(name, {})).get("trainc")
        lines.append(
            f"| {name} | {model['train_flops'] / 1e9:.3f} | "
            f"{statistics.median(model['compile_seconds']):.2f} | "
            f"{model['stats'].get('arena train_step', 0) / 2**20:.1f} | "
            f"{model['stats'].get('persistent', 0) / 2**20:.1f} | "
            f"{mib(base[0]['open_growth_kb']) if base else '–'} |")
    lines += amp_table(saved, results)
    lines += ["", "Every configuration (median ms/step over rounds):", "",
              "| model | framework | configuration | ms/step | runs |", "|---|---|---|--:|--:|"]
    for name, by_framework in results.items():
        for framework, per_config in by_framework.items():
            for config, s in per_config.items():
                runs = "0" if not s else str(s["runs"]) + (
                    f" ({s['errors']} failed)" if s["errors"] else "")
                lines.append(f"| {name} | {framework} | {config} | "
                             f"{s['ms']:.2f} | {runs} |" if s else
                             f"| {name} | {framework} | {config} | failed | {runs} |")
    for name, by_framework in results.items():
        lines += mismatched_losses(name, by_framework)
    return "\n".join(lines)


def mismatched_losses(model, by_framework):
    """Same weights and batch: every framework's first loss must agree."""
    losses = {f: s["first_loss"] for f, per in by_framework.items()
              for s in per.values() if s}
    reference = losses.get("trainc")
    if reference is None:
        return []
    # bf16 rounds the products: ResNet-18's first loss moves by ~2e-3.
    return [f"\nWARNING {model}: {framework}'s first loss {loss:.6f} differs from trainc's "
            f"{reference:.6f}: not the same model or weights?"
            for framework, loss in losses.items()
            if abs(loss - reference) > (1e-2 if "bf16" in framework else 1e-3)
            * max(1.0, abs(reference))]


def round_ratios(saved, model, numerator, denominator):
    """numerator's median ms/step over denominator's, each a (framework,
    configuration) pair, within each round: runs of one round are close in
    time, so both more often see the machine in the same state (a VM's
    slow or fast phase) than medians over rounds do. A string: the median
    ratio and its range, or "–"."""
    by_round = {}
    for run in saved["runs"]:
        if run["model"] == model and "error" not in run:
            key = (run["framework"], run["config"])
            by_round.setdefault(run["rep"], {})[key] = statistics.median(run["ms"])
    ratios = [times[numerator] / times[denominator] for times in by_round.values()
              if numerator in times and denominator in times]
    if not ratios:
        return "–"
    return (f"{statistics.median(ratios):.2f} "
            f"({min(ratios):.2f}–{max(ratios):.2f})")


def amp_table(saved, results):
    """With --amp: trainc's mixed-precision step against its f32 step and
    against PyTorch's autocast, each in its fastest configuration: the
    ratio of the medians over rounds, and the median (range) of the ratios
    within each round."""
    lines = []
    for name, model in saved["models"].items():
        best = best_configurations(results.get(name, {}))
        low = [f for f in best if f.startswith("trainc-")]
        if "trainc" not in best or not low:
            continue
        amp = low[0][len("trainc-"):]
        torch_amp = best.get(f"torch-autocast-{amp}")
        f32, mixed = best["trainc"][0]["ms"], best[low[0]][0]["ms"]
        if not lines:
            lines = ["", f"Mixed precision ({amp}):", "",
                     "| model (batch) | trainc f32 ms | trainc " + amp + " ms | "
                     "f32 / " + amp + " | per round | torch autocast " + amp + " ms | "
                     "autocast / trainc " + amp + " | per round |",
                     "|---|--:|--:|--:|--:|--:|--:|--:|"]
        mixed_key = (low[0], best[low[0]][1])
        f32_rounds = round_ratios(saved, name, ("trainc", best["trainc"][1]), mixed_key)
        autocast = "– | – | –"
        if torch_amp:
            autocast_rounds = round_ratios(
                saved, name, (f"torch-autocast-{amp}", torch_amp[1]), mixed_key)
            autocast = (f"{torch_amp[0]['ms']:.2f} | {torch_amp[0]['ms'] / mixed:.2f} | "
                        f"{autocast_rounds}")
        lines.append(f"| {name} ({model['batch']}) | {f32:.2f} | {mixed:.2f} | "
                     f"{f32 / mixed:.2f} | {f32_rounds} | {autocast} |")
    return lines


def machine():
    def first(command):
        try:
            return subprocess.run(command, capture_output=True, text=True,
                                  shell=True).stdout.strip()
        except OSError:
            return ""
    return {"cpu": first("lscpu | sed -n 's/^Model name: *//p'"),
            "cores": os.cpu_count(),
            "memory": first("free -h | awk '/Mem:/ {print $2}'"),
            "kernel": first("uname -r"),
            "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", ""),
            "uptime": first("uptime")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--peers", default=None,
                        help="comma-separated; default all (torch-eager, torch-script, "
                             "torch2-eager, torch2-compile, jax, ort)")
    parser.add_argument("--reps", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--threads", default="1,2", help="thread counts to try")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--min-steps", type=int, default=10)
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--min-seconds", type=float, default=2.0)
    parser.add_argument("--compile-reps", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--tune", action="store_true",
                        help="compile trainc's libraries with --tune (backends "
                             "timed on this machine; times cached in WORKDIR)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 1 round, 1 warm-up + 2 steps, one thread "
                             "configuration, compile once")
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--workdir", default=None, help="default BUILD_DIR/bench")
    parser.add_argument("--venv", default=os.path.join(HERE, ".venv"))
    parser.add_argument("--isa", choices=sorted(ISA_LIMITS),
                        help="keep every framework to this ISA (an AVX2-only CPU's "
                             "code paths on an AVX-512 machine; not ONNX Runtime)")
    parser.add_argument("--amp", choices=["bf16"],
                        help="also run trainc with --amp and PyTorch under autocast")
    parser.add_argument("--report", metavar="RESULTS_JSON",
                        help="only print the tables of a saved run")
    args = parser.parse_args()
    if args.report:
        with open(args.report) as f:
            print(report(json.load(f)))
        return
    if args.quick:
        args.reps, args.warmup, args.min_steps, args.max_steps = 1, 1, 2, 2
        args.min_seconds, args.compile_reps = 0.0, 1
    args.workdir = os.path.abspath(args.workdir or os.path.join(args.build_dir, "bench"))
    args.runner = os.path.join(args.build_dir, "bin", "trainc-bench-runner")
    args.probe = os.path.join(args.build_dir, "bin", "trainc-core-latency")
    trainc = os.path.join(args.build_dir, "bin", "trainc")
    for tool in (trainc, args.runner):
        if not os.path.exists(tool):
            raise SystemExit(f"{tool} not found: build first (scripts/build.sh)")
    thread_counts = [int(t) for t in args.threads.split(",")]
    names = args.models.split(",")
    unknown = [n for n in names if n not in export.SPECS]
    if unknown:
        raise SystemExit(f"unknown models {unknown}; known: {', '.join(export.SPECS)}")

    known = frameworks(os.path.join(args.venv, "bin", "python"))
    amp_peers = AMP_PEERS.get(args.amp, [])
    wanted = (args.peers.split(",") if args.peers else
              [n for n in known if n not in sum(AMP_PEERS.values(), [])])
    wanted += [n for n in amp_peers if n not in wanted]
    peers = {}
    for name in wanted:
        if name not in known:
            raise SystemExit(f"unknown peer {name}; known: {', '.join(known)}")
        reason = installed(known[name])
        if reason:
            print(f"skip {name}: not installed ({reason})", flush=True)
        else:
            peers[name] = known[name]

    info = {"command": shlex.join([sys.executable] + sys.argv), "machine": machine(),
            "isa": args.isa,
            "trainc": subprocess.run([trainc, "--version"], capture_output=True,
                                     text=True).stdout.strip()}
    print(f"{info['machine']['cpu']}, {info['machine']['cores']} cores; "
          f"{info['machine']['uptime']}", flush=True)
    models, raw = [], []
    for name in names:
        spec = export.SPECS[name]
        model = Model(name, onnx_path(name, args.build_dir), spec.inputs[0][1][0],
                      os.path.join(args.workdir, name), [n for n, _, _ in spec.inputs])
        write_data(model)
        compile_model(model, trainc, args.workdir, args.compile_reps, args.tune, args.isa)
        models.append(model)
        plan = [("trainc", None, c) for c in configs(None, thread_counts, args.quick)]
        if args.amp:
            compile_amp_model(model, trainc, args.workdir, args.amp, args.isa)
            plan += [(f"trainc-{args.amp}", None, c)
                     for c in configs(None, thread_counts, args.quick)]
        for peer_name, peer in peers.items():
            plan += [(peer_name, peer, c) for c in configs(peer, thread_counts, args.quick)]
        for rep in range(args.reps):
            shift = rep % len(plan)
            for framework_name, framework, config in plan[shift:] + plan[:shift]:
                library = (model.amp_library if framework_name.startswith("trainc-")
                           else model.library)
                result = run_once(model, framework, config, args, library)
                result.update(model=name, framework=framework_name, config=config.label(),
                              rep=rep)
                raw.append(result)
                outcome = (f"FAILED: {result['error']}" if "error" in result else
                           f"{statistics.median(result['ms']):.2f} ms/step, "
                           f"loss {result['first_loss']:.5f}")
                print(f"  {name} {framework_name} [{config.label()}] round {rep + 1}: "
                      f"{outcome}", flush=True)

    info["uptime_after"] = machine()["uptime"]
    saved = {"info": info, "runs": raw,
             "models": {m.name: {"batch": m.batch, "train_flops": m.train_flops,
                                 "compile_seconds": m.compile_seconds, "stats": m.stats}
                        for m in models}}
    os.makedirs(args.workdir, exist_ok=True)
    with open(os.path.join(args.workdir, "results.json"), "w") as f:
        json.dump(saved, f, indent=1)
    text = report(saved)
    print("\n" + text)
    print(f"\nload: before {info['machine']['uptime']}\n      after  {info['uptime_after']}")
    with open(os.path.join(args.workdir, "results.md"), "w") as f:
        f.write(f"`{info['command']}`\n\n{info['machine']}\n\n{text}\n")
    print(f"wrote {args.workdir}/results.json and results.md")


if __name__ == "__main__":
    main()
