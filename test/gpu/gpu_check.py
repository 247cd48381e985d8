#!/usr/bin/env python3
"""The GPU check of the CUDA target, run where an NVIDIA GPU is (scripts/gpu-check.sh).

Reads a bundle that `scripts/gpu-check.sh build` made (bundle.json, the
--target cuda libraries, the reference batches of models/export.py) and:

  parity   each library trains 3 steps on its model's reference batch
           through the C API (ctypes); its losses and trained tensors are
           compared with PyTorch's by the parity criterion of
           docs/TRAINING.md (test/e2e/so_parity.py's check). An --amp bf16
           library ("amp" in the bundle) is held to the mixed-precision
           criterion of test/e2e/amp_parity.py instead: its losses within
           4 d + 1e-4 of PyTorch's fp32 and autocast-bf16 curves, d their
           own distance, and every trained tensor finite.
  timing   the libraries marked for timing against PyTorch CUDA on the same
           model and batch (models/export.py's module with the library's
           initial weights, SGD with momentum, CrossEntropyLoss): eager and
           torch.compile (an --amp bf16 library against both under
           torch.autocast("cuda", torch.bfloat16)), in fp32 (TF32 off for
           cuDNN too, whose default
           allows it: trainc's convolutions are fp32) with cuDNN's
           autotuner on (torch.backends.cudnn.benchmark, as trainc picks
           each convolution's algorithm by timing); the library with CUDA
           graphs off; the entry's "compare" library (the same model
           built with other --dispatch choices), when the bundle has one;
           and the library opened with the variables of --compare-env
           (e.g. TRAINC_CUDNN_TRANSFORMS=1), when given. Every
           step of every runner ends with the loss on the host
           (trainc_train_step returns it; PyTorch's loss.item()), so a
           step's time is its whole latency. Runners alternate in
           rounds; medians and ranges of ms/step are printed.

Prints every figure and exits 1 when any tensor fails parity.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
from capi import Options, Tensor, tensor  # noqa: E402
from reference_batch import error, parity_check  # noqa: E402

class Library:
    """One --target cuda library, one session."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(os.path.abspath(path))
        self.lib.trainc_last_error.restype = ctypes.c_char_p
        self.lib.trainc_manifest.restype = ctypes.c_char_p
        self.manifest = json.loads(self.lib.trainc_manifest().decode())
        self.session = ctypes.c_void_p()
        status = self.lib.trainc_session_open(ctypes.byref(Options(0, 0, None)),
                                              ctypes.byref(self.session))
        self.check(status, "session open")
        self.keep = []

    def check(self, status, what):
        if status != 0:
            raise RuntimeError(f"{what}: status {status}: "
                               f"{self.lib.trainc_last_error().decode()}")

    def tensor(self, array):
        array = np.ascontiguousarray(array)
        result, shape = tensor(array)
        self.keep.append((array, shape))
        return result

    def bind(self, inputs, labels):
        """The step's argument structures, built once."""
        self.inputs = (Tensor * len(inputs))(*[self.tensor(x) for x in inputs])
        self.labels = self.tensor(labels)
        self.loss = ctypes.c_float()

    def step(self):
        self.check(self.lib.trainc_train_step(self.session, self.inputs,
                                              len(self.inputs),
                                              ctypes.byref(self.labels),
                                              ctypes.byref(self.loss)),
                   "train step")
        return self.loss.value

    def parameter(self, name, like):
        out = np.empty_like(like, dtype=np.float32 if like.dtype == np.float64
                            else like.dtype)
        self.check(self.lib.trainc_get_parameter(self.session, name.encode(),
                                                 ctypes.byref(self.tensor(out))),
                   f"get {name}")
        return out

    def manifest_shape(self, name):
        """The shape of argument `name` of the training step."""
        for argument in self.manifest["functions"]["train_step"]["arguments"]:
            if argument["name"] == name:
                return argument["shape"]
        raise KeyError(name)

    def close(self):
        self.lib.trainc_session_close(self.session)


def reference_batch(ref_dir, ref):
    inputs = [np.load(os.path.join(ref_dir, "fp32", "inputs", spec["name"] + ".npy"))
              for spec in ref["inputs"]]
    return inputs, np.load(os.path.join(ref_dir, "fp32", "labels.npy"))


def library_state(module, path):
    """`module`'s state_dict with the initial weights of the library at
    `path` (its parameters and state, by the ONNX initializers' names)."""
    import torch
    state = module.state_dict()
    library = Library(path)
    for name, tensor in state.items():
        if not name.endswith("num_batches_tracked"):
            state[name] = torch.from_numpy(library.parameter(name, tensor.numpy()))
    library.close()
    return state


def device_reference(entry, bundle):
    """models/export.py's reference computed here (PyTorch on the CPU, fp32
    and fp64) from the library's own initial weights and export.py's
    reference batch: for models whose reference files are too big to carry
    (ResNet-18's are 390 MB, its library 47 MB). Returns its directory."""
    import tempfile
    import torch
    import export  # models/export.py
    spec = export.SPECS[entry["model"]]
    module = export.build(spec)
    state = library_state(module, os.path.join(bundle, entry["library"]))
    xs, labels = export.make_inputs(spec)
    out = tempfile.mkdtemp(prefix=f"{entry['model']}-reference-")
    for precision, dtype in (("fp32", torch.float32), ("fp64", torch.float64)):
        export.run_precision(spec, state, xs, labels, dtype,
                             os.path.join(out, precision))
    if entry.get("amp"):
        export.run_autocast(spec, state, xs, labels, os.path.join(out, "autocast_bf16"))
    info = {"model": entry["model"],
            "inputs": [{"name": n} for n, _, _ in spec.inputs],
            "parameters": [n for n, _ in module.named_parameters()],
            "buffers": [n for n, _ in module.named_buffers()
                        if not n.endswith("num_batches_tracked")]}
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(info, f)
    print(f"{entry['model']}: reference computed here from the library's weights",
          flush=True)
    return out


def reference_dir(entry, bundle):
    if entry.get("reference"):
        return os.path.join(bundle, entry["reference"])
    if "computed" not in entry:
        entry["computed"] = device_reference(entry, bundle)
    return entry["computed"]


def amp_parity(entry, ref_dir, ref, library, losses):
    """test/e2e/amp_parity.py's criterion for an --amp bf16 library's 3
    losses; its trained tensors finite. The number of failures."""
    optimizer = entry["optimizer"]
    fp32 = np.load(os.path.join(ref_dir, "fp32", optimizer, "losses.npy"))
    autocast = np.load(os.path.join(ref_dir, "autocast_bf16", optimizer, "losses.npy"))
    d = error(autocast, fp32)
    bound = 4 * d + 1e-4
    print(f"{ref['model']}, --amp bf16, 3 steps of {optimizer} on the GPU "
          f"({entry['library']})", flush=True)
    print(f"  losses: gpu {np.round(losses, 6).tolist()}, torch autocast bf16 (CPU) "
          f"{np.round(autocast, 6).tolist()}, torch fp32 {np.round(fp32, 6).tolist()}")
    failures = 0
    for what, base in (("torch fp32", fp32), ("torch autocast", autocast)):
        e = error(losses, base)
        failures += e > bound
        print(f"  e(gpu bf16, {what:14s}) = {e:.2e}  (bound 4 d + 1e-4 = {bound:.2e}, "
              f"d = {d:.2e}) {'ok' if e <= bound else 'FAIL'}")
    for name in ref["parameters"]:
        like = np.zeros(library.manifest_shape(name), np.float32)
        finite = np.isfinite(library.parameter(name, like)).all()
        failures += not finite
        if not finite:
            print(f"  {name}: not finite FAIL")
    library.close()
    print("  FAILED" if failures else "  within the criterion; trained tensors finite",
          flush=True)
    return failures


def parity(entry, bundle):
    """3 steps of `entry`'s library against PyTorch; the number of failures."""
    ref_dir = reference_dir(entry, bundle)
    ref = json.load(open(os.path.join(ref_dir, "reference.json")))
    optimizer = entry["optimizer"]
    library = Library(os.path.join(bundle, entry["library"]))
    library.bind(*reference_batch(ref_dir, ref))
    losses = [library.step() for _ in range(3)]
    if entry.get("amp"):
        return amp_parity(entry, ref_dir, ref, library, losses)
    failures = 0

    def check(what, trainc, base):
        nonlocal failures
        ok, line = parity_check(trainc, os.path.join(ref_dir, "fp32", base),
                                os.path.join(ref_dir, "fp64", base), "gpu")
        print(f"  {what:48s} {line}")
        failures += not ok

    print(f"{ref['model']}, 3 steps of {optimizer} on the GPU "
          f"({entry['library']})", flush=True)
    check("losses of steps 1-3", losses, f"{optimizer}/losses.npy")
    for name in ref["parameters"] + ref.get("buffers", []):
        like = np.load(os.path.join(ref_dir, "fp32", optimizer, "params", name + ".npy"))
        check(name, library.parameter(name, like), f"{optimizer}/params/{name}.npy")
    library.close()
    print("  FAILED" if failures else "  all tensors within the parity criterion",
          flush=True)
    return failures


def torch_runner(model, library, inputs, labels, mode, amp=False):
    """A PyTorch CUDA training step of `model` (eager or torch.compile),
    from the initial weights of `library`; with `amp`, the forward and
    the loss under torch.autocast("cuda", torch.bfloat16)."""
    import contextlib
    import torch
    import export  # models/export.py
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    module = export.build(export.SPECS[model])
    module.load_state_dict(library_state(module, library))
    # The CPU only where there is no GPU: a check of this script itself.
    device = "cuda" if torch.cuda.is_available() else "cpu"
    module = module.to(device).train()
    xs = [torch.from_numpy(x).to(device) for x in inputs]
    ys = torch.from_numpy(labels).to(device)
    runnable = torch.compile(module) if mode == "compile" else module
    optimizer = torch.optim.SGD(module.parameters(), lr=0.01, momentum=0.9)
    loss_function = torch.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        with (torch.autocast(device, dtype=torch.bfloat16) if amp
              else contextlib.nullcontext()):
            loss = loss_function(runnable(*xs).float(), ys)
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


def batch_inputs(model, batch):
    """models/export.py's reference inputs and labels of `model`, drawn at
    another batch size (for the timing-only libraries)."""
    import dataclasses
    import export  # models/export.py
    spec = export.SPECS[model]
    spec = dataclasses.replace(spec, inputs=[(n, (batch,) + tuple(s[1:]), d)
                                             for n, s, d in spec.inputs])
    xs, labels = export.make_inputs(spec)
    return [x.numpy() for x in xs], labels.numpy()


def opened_with(path, variables):
    """A Library of `path` opened with environment `variables` (NAME=VALUE
    strings, read when a session opens)."""
    saved = {name: os.environ.get(name) for name, _ in
             (v.split("=", 1) for v in variables)}
    os.environ.update(v.split("=", 1) for v in variables)
    try:
        return Library(path)
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def timing(entries, bundle, rounds, steps, compare_env=()):
    """ms/step of trainc, PyTorch eager and torch.compile, interleaved."""
    import torch
    where = (torch.cuda.get_device_name() if torch.cuda.is_available()
             else "the CPU (no GPU)")
    print(f"\ntiming on {where}, torch {torch.__version__}; "
          f"{rounds} rounds of {steps} steps each, after warm-up", flush=True)
    rows = []
    for entry in entries:
        if "batch" in entry:
            inputs, labels = batch_inputs(entry["model"], entry["batch"])
        else:
            ref_dir = reference_dir(entry, bundle)
            inputs, labels = reference_batch(
                ref_dir, json.load(open(os.path.join(ref_dir, "reference.json"))))
        library = Library(os.path.join(bundle, entry["library"]))
        library.bind(inputs, labels)
        # The same library without CUDA graphs (read when a session opens).
        eager = opened_with(os.path.join(bundle, entry["library"]),
                            ["TRAINC_CUDA_GRAPHS=0"])
        eager.bind(inputs, labels)
        runners = {"trainc": library.step, "trainc-no-graphs": eager.step}
        sessions = [library, eager]
        if compare_env:
            environment = opened_with(os.path.join(bundle, entry["library"]),
                                      compare_env)
            environment.bind(inputs, labels)
            runners["trainc-env"] = environment.step
            sessions.append(environment)
            print(f"  trainc-env: {entry['library']} with {' '.join(compare_env)}")
        if "compare" in entry:
            compared = Library(os.path.join(bundle, entry["compare"]))
            compared.bind(inputs, labels)
            runners["trainc-compare"] = compared.step
            sessions.append(compared)
            print(f"  trainc-compare: {entry['compare']} "
                  f"(--dispatch {entry.get('compare_label', '?')})")
        for mode in ("eager", "compile"):
            try:
                runners[f"torch-{mode}"] = torch_runner(
                    entry["model"], os.path.join(bundle, entry["library"]),
                    inputs, labels, mode, amp=bool(entry.get("amp")))
            except Exception as e:  # report, keep timing the others
                print(f"  torch-{mode} unavailable: {e}")
        times = {name: [] for name in runners}
        for name, step in runners.items():
            for _ in range(5 if name != "torch-compile" else 10):
                step()  # warm-up (torch.compile compiles here)
        for _ in range(rounds):
            for name, step in runners.items():
                start = time.perf_counter()
                for _ in range(steps):
                    step()
                times[name].append((time.perf_counter() - start) / steps * 1e3)
        for session in sessions:
            session.close()
        batch = inputs[0].shape[0]
        label = entry["model"] + (" --amp bf16" if entry.get("amp") else "")
        print(f"{label} (batch {batch}):")
        for name, values in times.items():
            print(f"  {name:14s} median {statistics.median(values):8.3f} ms/step "
                  f"[{min(values):.3f}, {max(values):.3f}]")
        base = statistics.median(times["trainc"])
        for name, values in times.items():
            if name != "trainc":
                print(f"  trainc speedup over {name}: "
                      f"{statistics.median(values) / base:.2f}x")
        rows.append((label, batch,
                     {k: statistics.median(v) for k, v in times.items()}))
        sys.stdout.flush()
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--bundle", required=True)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--no-timing", action="store_true")
    p.add_argument("--compare-env", action="append", default=[],
                   metavar="NAME=VALUE",
                   help="also time each library opened with this variable set "
                        "(repeatable: all of them at once)")
    p.add_argument("--only", action="append", default=[],
                   help="run only this model (repeatable)")
    args = p.parse_args()
    bundle = json.load(open(os.path.join(args.bundle, "bundle.json")))
    entries = [e for e in bundle["libraries"]
               if not args.only or e["model"] in args.only]
    failures = 0
    for entry in entries:
        if not entry.get("parity", True):
            continue
        try:
            failures += parity(entry, args.bundle)
        except RuntimeError as e:
            print(f"  {entry['library']}: {e}", flush=True)
            failures += 1
    if not args.no_timing:
        rows = timing([e for e in entries if e.get("time")], args.bundle,
                      args.rounds, args.steps, args.compare_env)
        print("\n| model (batch) | trainc ms/step | without graphs | compare "
              "| with --compare-env | torch eager | torch.compile |")
        print("|---|--:|--:|--:|--:|--:|--:|")
        for model, batch, t in rows:
            cells = [t.get(name, float("nan")) for name in (
                "trainc", "trainc-no-graphs", "trainc-compare", "trainc-env",
                "torch-eager", "torch-compile")]
            print(f"| {model} ({batch}) | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    print("GPU CHECK FAILED" if failures else "GPU check passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
