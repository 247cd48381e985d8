"""What the e2e scripts that train on models/export.py's reference batch
share: the optimizers of the reference, the parity error, and the
`trainc train --feed ... --labels ... --steps K` command."""
import os
import re
import subprocess
import sys

import numpy as np

# The reference's optimizers (models/export.py SGD and ADAMW) as flags.
OPTIMIZERS = {
    "sgd_momentum": ["--optimizer", "sgd", "--lr", "0.01", "--momentum", "0.9"],
    "adamw": ["--optimizer", "adamw", "--lr", "0.001", "--weight-decay", "0.01"],
}


def error(a, b):
    """e(a, b) = ||a - b|| / (||b|| + 1e-6 sqrt(n)) (docs/TRAINING.md)."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return np.linalg.norm(a - b) / (np.linalg.norm(b) + 1e-6 * np.sqrt(a.size))


def spread(fp32_path):
    """The reference's fp32 result farthest from fp64 for the tensor of
    `fp32_path` (<ref>/fp32/<rel>.npy): <ref>/fp32_spread/<rel>.npy, which
    models/export.py writes where a run on perturbed weights or on two
    threads is farther than the plain one, else the plain one."""
    head, rel = fp32_path, []
    while os.path.basename(head) != "fp32":
        head, part = os.path.split(head)
        if not part:
            return np.load(fp32_path)
        rel.insert(0, part)
    path = os.path.join(os.path.dirname(head), "fp32_spread", *rel)
    return np.load(path if os.path.exists(path) else fp32_path)


def parity_margin(result, fp32_path, fp64_path, who="trainc"):
    """The parity criterion of docs/TRAINING.md for `result` against the
    reference's fp32 and fp64 .npy files: (margin, the line that says so),
    the margin being the error over its bound (at most 1 passes).
    e(result, fp32) <= 1e-4, or, where e(fp32, fp64) > 1e-4 (ill-conditioned),
    e(result, fp64) <= 4 e(fp32, fp64); e(fp32, fp64) is that of the fp32
    result farthest from fp64 (spread())."""
    t32, t64 = np.load(fp32_path), np.load(fp64_path)
    conditioning = error(spread(fp32_path), t64)
    if conditioning <= 1e-4:
        e = error(result, t32)
        margin = e / 1e-4
        return margin, (f"e({who},fp32)={e:.2e} {'ok' if margin <= 1 else 'FAIL'}"
                        f"  [e(fp32,fp64)={conditioning:.2e} "
                        f"e({who},fp64)={error(result, t64):.2e}]")
    e = error(result, t64)
    margin = e / (4 * conditioning)
    return margin, (f"ill-conditioned: e(fp32,fp64)={conditioning:.2e} "
                    f"e({who},fp64)={e:.2e} {'ok' if margin <= 1 else 'FAIL'}")


def parity_check(result, fp32_path, fp64_path, who="trainc"):
    """parity_margin as (passes, line)."""
    margin, line = parity_margin(result, fp32_path, fp64_path, who)
    return margin <= 1, line


def train_command(trainc, model, reference_dir, reference, steps, save, extra=()):
    """`trainc train` of `steps` steps on the reference batch (fp32 inputs and
    labels of REFERENCE_DIR), saving the trained model to `save`."""
    cmd = [trainc, "train", model, "--steps", str(steps), "--threads", "2",
           "--save", save, "--labels", os.path.join(reference_dir, "fp32", "labels.npy")]
    for spec in reference["inputs"]:
        cmd += ["--feed", f"{spec['name']}=" +
                os.path.join(reference_dir, "fp32", "inputs", spec["name"] + ".npy")]
    # Auxiliary heads: the loss weights PyTorch's reference used.
    if reference.get("output_weights"):
        cmd += ["--output-weights", ",".join(str(w) for w in reference["output_weights"])]
    return cmd + list(extra)


def smallest_budget(compile_command):
    """The smallest @train_step arena --memory-budget reaches for
    `compile_command` (a `trainc compile` without a budget), as the error of
    a one-byte budget names it; None, after printing trainc's output, when
    it names none."""
    probe = subprocess.run(compile_command + ["--memory-budget", "1"],
                           capture_output=True, text=True)
    found = re.search(r"(\d+) bytes at least with it", probe.stderr)
    if not found:
        print(probe.stdout, probe.stderr)
        print("FAILED: a one-byte budget named no smallest arena")
        return None
    return found.group(1)


def run_steps(cmd):
    """Runs a `train_command`, echoing it and trainc's stderr; returns
    (completed process, the loss of each step), or (process, None) when
    trainc failed."""
    print("$", " ".join(cmd), flush=True)
    run = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        print(run.stdout)
        return run, None
    losses = [float(m.group(1)) for m in
              (re.match(r"step \d+: loss (\S+?),?(?: |$)", line)
               for line in run.stdout.splitlines()) if m]
    return run, losses
