#!/usr/bin/env python3
"""The CUDA target without a GPU (docs/GPU.md, "What is verified where").

  1. Every model given compiles with --target cuda for sm_80 and sm_90 (at
     batch 8):
     ptxas and fatbinary assemble its kernels (two fatbins in the library).
  2. Without a driver, opening a session fails with TRAINC_ERROR_DEVICE and
     one clear message (no driver on this machine; a missing driver file;
     the toolkit's stub driver).
  3. With the fake driver (fake_libcuda.c, loaded through TRAINC_LIBCUDA),
     a fake cuBLAS and a fake cuDNN (fake_libcublas.c, fake_libcudnn.c),
     the host runtime of the first model, batch-sized as its reference:
     the image it loads per compute capability, the library handles,
     descriptors and algorithm choices made at open, the launch sequence
     of a step against the kernel IR's launches and loop nests (products on
     cuBLAS, convolutions on cuDNN), the step
     captured as CUDA graphs (segments between input checks) and replayed,
     the copies of a step (inputs and labels up, the loss down), the host copies of the
     parameters (read once after a step, written back before the next),
     out-of-memory and no-device errors.
Exits 1 on the first failed check.
"""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys

import numpy as np

from capi import Options, Tensor, tensor

DEVICE_ERROR, OUT_OF_MEMORY = 9, 7


def expect(condition, what):
    if not condition:
        print(f"FAILED: {what}")
        sys.exit(1)
    print(f"ok: {what}")


class Library:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.trainc_last_error.restype = ctypes.c_char_p
        self.lib.trainc_manifest.restype = ctypes.c_char_p
        self.keep = []

    def open(self):
        session = ctypes.c_void_p()
        status = self.lib.trainc_session_open(ctypes.byref(Options(1, 0, None)),
                                              ctypes.byref(session))
        return status, session, self.lib.trainc_last_error().decode()

    def tensor(self, array):
        result, shape = tensor(array)
        self.keep.append((array, shape))
        return result


def log_lines(path):
    with open(path) as f:
        lines = f.read().splitlines()
    open(path, "w").close()
    return lines


LIBRARIES = ("cublas", "cudnn")
# The fake cuDNN's record of each convolution kernel's call.
CUDNN_CALLS = {"graph.conv": "fwd", "graph.conv_backward_input": "bwd_data",
               "graph.conv_backward_weight": "bwd_filter"}
CUDNN_WORKSPACE = 12345  # bytes the fake's chosen algorithm asks for


def expected_launches(kernel_ir):
    """@train_step's launches from the kernel IR: per kernel.launch of a
    loop kernel, one per nest over a non-empty domain, named KERNEL_nestN;
    per launch on a library, its backend ("cublas", "cudnn")."""
    functions, current = {}, None
    for line in kernel_ir.splitlines():
        m = re.match(r"\s*func\.func (?:private )?@(\S+)\(", line)
        if m:
            current = m.group(1)
            functions[current] = []
        elif current and "kernel.launch" in line:
            callee = re.search(r"callee = @([\w.$-]+)", line)
            backend = re.search(r'backend = "(cublas|cudnn)"', line)
            if backend and backend.group(1) == "cudnn":
                op = re.search(r'kernel\.launch "([\w.]+)"', line).group(1)
                callee = f"cudnn {CUDNN_CALLS[op]}"
            else:
                callee = callee.group(1) if callee else backend and backend.group(1)
            functions[current].append(("launch", callee))
        elif current and "loop.nest" in line:
            domain = re.search(r"domain = \[([^\]]*)\]", line).group(1)
            empty = any(int(d) == 0 for d in domain.split(",") if d.strip())
            functions[current].append(("nest", empty))
    names = []
    for kind, callee in functions["train_step"]:
        assert callee, "a launch of the CUDA target neither a library's nor a loop kernel"
        if callee.split()[0] in LIBRARIES:
            names.append(callee)
            continue
        nests = [empty for k, empty in functions[callee] if k == "nest"]
        names += [f"{callee}_nest{i}" for i, empty in enumerate(nests) if not empty]
    return names


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trainc", required=True)
    p.add_argument("--fake-driver", required=True)
    p.add_argument("--fake-cublas", required=True)
    p.add_argument("--fake-cudnn", required=True)
    p.add_argument("--cuda-path", required=True)
    p.add_argument("--reference", required=True, help="the first model's .ref")
    p.add_argument("--workdir", required=True)
    p.add_argument("models", nargs="+")
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    cuda = ["--target", "cuda", "--cuda-path", args.cuda_path]

    # 1. Every model, for both architectures.
    for model in args.models:
        name = os.path.splitext(os.path.basename(model))[0]
        library = os.path.join(args.workdir, f"lib{name}.so")
        subprocess.run([args.trainc, "compile", model, "--batch", "8",
                        "--gpu-arch", "sm_80,sm_90", "-o", library] + cuda,
                       check=True)
        data = open(library, "rb").read()
        expect(data.count(bytes.fromhex("50ed55ba")) == 2,
               f"{name}: one fatbin each for sm_80 and sm_90 ({len(data)} bytes)")

    # The first model at its reference batch, for the runtime checks.
    ref = json.load(open(os.path.join(args.reference, "reference.json")))
    inputs = [np.load(os.path.join(args.reference, "fp32", "inputs", s["name"] + ".npy"))
              for s in ref["inputs"]]
    labels = np.load(os.path.join(args.reference, "fp32", "labels.npy"))
    library = os.path.join(args.workdir, "libfirst.so")
    common = [args.trainc, "compile", args.models[0], "--batch", str(inputs[0].shape[0])]
    subprocess.run(common + ["--gpu-arch", "sm_80,sm_90", "-o", library] + cuda,
                   check=True)
    kernel_ir = subprocess.run(common + ["--emit", "kernel"] + cuda, check=True,
                               capture_output=True, text=True).stdout
    ptx = subprocess.run(common + ["--emit", "ptx", "--gpu-arch", "sm_90"] + cuda,
                         check=True, capture_output=True, text=True).stdout
    entries = set(re.findall(r"\.entry (\w+)\(", ptx))
    lib = Library(library)
    manifest = json.loads(lib.lib.trainc_manifest().decode())

    # 2. No driver.
    os.environ.pop("TRAINC_LIBCUDA", None)
    try:
        ctypes.CDLL("libcuda.so.1")
        print("skipped: this machine has a CUDA driver (libcuda.so.1)")
    except OSError:
        status, _, message = lib.open()
        expect(status == DEVICE_ERROR and message.startswith("no CUDA driver: cannot load libcuda.so.1"),
               f"no driver on this machine: {status}, '{message}'")
    os.environ["TRAINC_LIBCUDA"] = os.path.join(args.workdir, "nowhere", "libcuda.so.1")
    status, _, message = lib.open()
    expect(status == DEVICE_ERROR and "no CUDA driver: cannot load" in message,
           f"a missing driver file: '{message}'")
    stub = os.path.join(args.cuda_path, "lib64", "stubs", "libcuda.so")
    if os.path.exists(stub):
        os.environ["TRAINC_LIBCUDA"] = stub
        status, _, message = lib.open()
        expect(status == DEVICE_ERROR and "stub" in message,
               f"the toolkit's stub driver: '{message}'")

    # 3. The fake driver.
    log = os.path.join(args.workdir, "fake-cuda.log")
    os.environ["TRAINC_LIBCUDA"] = args.fake_driver
    os.environ["TRAINC_LIBCUBLAS"] = args.fake_cublas
    os.environ["TRAINC_LIBCUDNN"] = args.fake_cudnn
    os.environ["FAKE_CUDNN_WORKSPACE"] = str(CUDNN_WORKSPACE)
    os.environ["FAKE_CUDA_LOG"] = log
    open(log, "w").close()
    sizes = {}
    for cc in (75, 80, 86, 90, 100):
        os.environ["FAKE_CUDA_CC"] = str(cc)
        status, session, message = lib.open()
        if cc == 75:
            expect(status == DEVICE_ERROR and message.startswith(
                "no code for this GPU: Fake GPU is sm_75, the library was compiled for sm_80, sm_90"),
                f"sm_75: '{message}'")
            continue
        expect(status == 0, f"sm_{cc}: the session opens" + (f": {message}" if status else ""))
        loaded = [int(l.split()[1]) for l in log_lines(log) if l.startswith("module")]
        expect(len(loaded) == 1, f"sm_{cc}: one image loaded ({loaded})")
        sizes[cc] = loaded[0]
        lib.lib.trainc_session_close(session)
    expect(sizes[80] == sizes[86] and sizes[90] == sizes[100] and sizes[80] != sizes[90],
           f"the newest image a device runs: sm_80/86 load {sizes[80]} bytes, sm_90/100 {sizes[90]}")

    os.environ["FAKE_CUDA_CC"] = "90"
    status, session, message = lib.open()
    opened = log_lines(log)
    persistent = [a for a in manifest["functions"]["train_step"]["arguments"]
                  if a["role"] not in ("input", "labels", "output", "loss")]
    persistent_bytes = sorted(int(np.prod(a["shape"], dtype=np.int64)) *
                              (8 if a["dtype"] in ("i64", "f64") else 4) for a in persistent)
    uploads = sorted(int(l.split()[1]) for l in opened if l.startswith("htod"))
    expect(["cublas create", "cublas stream", f"cublas workspace {32 << 20}"]
           == [l for l in opened if l.startswith("cublas")],
           "open: one cuBLAS handle, on the launch stream, with its own workspace")
    # (after the destroys of the sessions closed above)
    dnn = [l for l in opened if l.startswith("cudnn") and not l.startswith("cudnn destroy")]
    # Launches alike but for their buffers share one descriptor, prepared once.
    convolutions = len({re.sub(r"%\w+", "%", l) for l in kernel_ir.splitlines()
                        if 'backend = "cudnn"' in l})
    finds = [i for i, l in enumerate(dnn) if l.startswith("cudnn find")]
    expect(dnn[:2] == ["cudnn create", "cudnn stream"] and convolutions > 0
           and len(finds) == convolutions
           and all(dnn[i - 1] == "cudnn math 3" for i in finds),
           f"open: one cuDNN handle on the launch stream; each of the {convolutions} "
           "distinct convolutions' algorithm found once, in fp32 (FMA) math")
    expect([l for l in opened if l == f"alloc {CUDNN_WORKSPACE}"] == [f"alloc {CUDNN_WORKSPACE}"],
           "open: one cuDNN workspace, the size the chosen algorithms need")
    expect(all(b in uploads for b in persistent_bytes),
           f"open: every persistent tensor uploaded ({len(persistent)} tensors, "
           f"{len(uploads)} uploads with the constants)")

    xs = (Tensor * len(inputs))(*[lib.tensor(x) for x in inputs])
    y = lib.tensor(labels)
    loss = ctypes.c_float()

    def steps(count):
        lines = []
        for _ in range(count):
            status = lib.lib.trainc_train_step(session, xs, len(inputs), ctypes.byref(y),
                                               ctypes.byref(loss))
            expect(status == 0, "a step on the fake device" + (
                "" if status == 0 else f": {lib.lib.trainc_last_error().decode()}"))
            lines.append(log_lines(log))
        return lines

    def named(lines, kind):
        return [l.split()[1] for l in lines if l.startswith(kind + " ")]


    # The first step runs eagerly; the second is captured as CUDA graphs,
    # one segment per input check (the loss's label range), then replayed;
    # later steps replay them.
    first, second, third = steps(3)
    launches = expected_launches(kernel_ir)
    expected = [name for name in launches if name.split()[0] not in LIBRARIES]
    products = launches.count("cublas")
    expect(named(first, "launch") == expected,
           f"step 1 launches the kernel IR's nests in order ({len(expected)} launches)")
    calls = [l for l in first if l.startswith("cublas")]
    expect(products > 0 and len(calls) >= products
           and all(l.startswith(("cublas sgemm", "cublas scopy")) for l in calls),
           f"and its {products} products on cuBLAS ({len(calls)} calls)")
    expect([l for l in second if l.startswith("cublas")] == calls
           and not any(l.startswith("cublas") for l in third),
           "step 2 captures the same cuBLAS calls; step 3 replays them")
    convs = [l for l in first if l.startswith("cudnn") and l != "cudnn add_tensor"]
    expect([l.rsplit(" ", 2)[0] for l in convs] == [n for n in launches if n.startswith("cudnn")]
           and all(l.endswith(f" 1 {CUDNN_WORKSPACE}") for l in convs),
           f"and its {len(convs)} convolutions on cuDNN, with the algorithm chosen "
           "at open (the fastest that succeeded without tensor cores, FFT or "
           "Winograd) and its workspace")
    expect([l for l in second if l.startswith("cudnn")] == [l for l in first if l.startswith("cudnn")]
           and not any(l.startswith("cudnn") for l in third),
           "step 2 captures the same cuDNN calls; step 3 replays them")
    expect(set(expected) <= entries, "every launched kernel is an .entry of the PTX")
    blocks = [int(l.split()[3]) for l in first if l.startswith("launch")]
    expect(all(0 < b <= 256 for b in blocks), "blocks of at most 256 threads")
    segments = second.count("end capture")
    expect(named(second, "captured") == expected and not named(second, "launch")
           and segments == second.count("capture") and segments >= 2,
           f"step 2 captures the same launches as {segments} graphs")
    replays = [int(l.split()[1]) for l in third if l.startswith("graph")]
    expect(not named(third, "launch") and sum(replays) == len(expected)
           and len(replays) == segments,
           f"step 3 replays them: {len(replays)} graphs of {replays} launches")
    checks = [l for l in third if l.startswith(("graph", "dtoh 8"))]
    expect(all(a.startswith("graph") and b == "dtoh 8"
               for a, b in zip(checks[:-1:2], checks[1::2])),
           "each graph but the last is followed by its input check (8 bytes)")
    input_bytes = [x.nbytes for x in inputs] + [labels.nbytes]
    for number, lines in ((1, first), (3, third)):
        copies = [l for l in lines if l.startswith(("htod", "dtoh"))]
        expect([int(c.split()[1]) for c in copies if c.startswith("htod")] == input_bytes,
               f"step {number} uploads its inputs and labels only ({input_bytes} bytes)")
        expect(copies[-1] == "dtoh 4", f"step {number} downloads its loss last (4 bytes)")
        expect(not any(l.startswith("alloc") for l in lines),
               f"no allocation during step {number}")

    name = persistent[0]["name"]
    value = np.zeros(persistent[0]["shape"], np.float32)
    out = lib.tensor(value)
    for attempt in range(2):
        expect(lib.lib.trainc_get_parameter(session, name.encode(), ctypes.byref(out)) == 0,
               f"get '{name}'")
        reads = [l for l in log_lines(log) if l.startswith("dtoh")]
        expect(reads == ([f"dtoh {value.nbytes}"] if attempt == 0 else []),
               f"read #{attempt + 1} downloads {'it' if attempt == 0 else 'nothing'}: {reads}")
    value += 1.5
    expect(lib.lib.trainc_set_parameter(session, name.encode(), ctypes.byref(lib.tensor(value))) == 0,
           f"set '{name}'")
    expect(lib.lib.trainc_train_step(session, xs, len(inputs), ctypes.byref(y),
                                     ctypes.byref(loss)) == 0, "the step after the write")
    ups = [int(l.split()[1]) for l in log_lines(log) if l.startswith("htod")]
    expect(ups == [value.nbytes] + input_bytes,
           f"the written parameter goes up before the step's inputs: {ups}")
    lib.lib.trainc_session_close(session)
    closed = log_lines(log)
    expect(any(l == "free" for l in closed), "close frees the device memory")
    made = [l.split()[1] for l in dnn if l.split()[1] in ("tensor", "filter", "convolution")]
    destroyed = [l.split()[2] for l in closed if l.startswith("cudnn destroy")]
    expect(sorted(made) == sorted(destroyed),
           f"close destroys the {len(made)} cuDNN descriptors made at open")

    os.environ["TRAINC_CUDA_GRAPHS"] = "0"
    status, session, message = lib.open()
    log_lines(log)
    _, second = steps(2)
    expect(named(second, "launch") == expected and "capture" not in second,
           "TRAINC_CUDA_GRAPHS=0: every step runs eagerly")
    lib.lib.trainc_session_close(session)
    del os.environ["TRAINC_CUDA_GRAPHS"]

    os.environ["TRAINC_CUDNN_TRANSFORMS"] = "1"
    status, session, message = lib.open()
    log_lines(log)
    first, = steps(1)
    calls = [l for l in first if l.startswith(("cudnn fwd", "cudnn bwd"))]
    expect(calls and all(l.split()[2] == "5" for l in calls),
           "TRAINC_CUDNN_TRANSFORMS=1: the fastest, an FFT or Winograd algorithm")
    lib.lib.trainc_session_close(session)
    del os.environ["TRAINC_CUDNN_TRANSFORMS"]

    # --amp bf16: products and convolutions on bf16 operands, on tensor
    # cores; a bf16 convolution's bias added on cuBLAS.
    amp_library = os.path.join(args.workdir, "libfirst_amp.so")
    subprocess.run(common + ["--amp", "bf16", "--gpu-arch", "sm_90", "-o", amp_library]
                   + cuda, check=True)
    amp_ir = subprocess.run(common + ["--amp", "bf16", "--emit", "kernel"] + cuda,
                            check=True, capture_output=True, text=True).stdout
    amp = Library(amp_library)
    status, amp_session, message = amp.open()
    expect(status == 0, "--amp bf16: the session opens" + (f": {message}" if status else ""))
    opened = log_lines(log)
    dnn = [l for l in opened if l.startswith("cudnn") and not l.startswith("cudnn destroy")]
    finds = [i for i, l in enumerate(dnn) if l.startswith("cudnn find")]
    expect(finds and all(dnn[i - 1] == "cudnn math 1" for i in finds)
           and all(l.endswith(" type 9") for l in dnn if l.startswith(("cudnn tensor", "cudnn filter"))),
           "--amp bf16: each convolution's descriptors bf16, its algorithm found in "
           "tensor-core math")
    status = amp.lib.trainc_train_step(amp_session, xs, len(inputs), ctypes.byref(y),
                                       ctypes.byref(loss))
    expect(status == 0, "--amp bf16: a step" + (
        "" if status == 0 else f": {amp.lib.trainc_last_error().decode()}"))
    step = log_lines(log)
    amp_launches = expected_launches(amp_ir)
    expect(named(step, "launch") == [n for n in amp_launches if n.split()[0] not in LIBRARIES],
           "--amp bf16: step 1 launches the kernel IR's nests in order")
    blas = [l.split() for l in step if l.startswith("cublas")]
    # The train step's convolutions with a bias: [N, C, H, W] outputs.
    train_ir = amp_ir[amp_ir.index("@train_step("):]
    train_ir = train_ir[:train_ir.find("func.func")]
    biased = re.findall(r'kernel\.launch "graph\.conv"\(%\w+, %\w+, %\w+\) -> .*'
                        r'-> memref<(\d+)x(\d+)x(\d+)x(\d+)xbf16>', train_ir)
    expect(blas and all(c[1] in ("gemm_ex", "gemm_batched_ex") and c[-2:] == ["14", "68"]
                        for c in blas),
           f"--amp bf16: its {len(blas)} cuBLAS calls all GemmEx on bf16 (14) "
           "with f32 accumulation (68)")
    updates = [c[2:] for c in blas if c[1] == "gemm_batched_ex"]
    expect(biased and all(["0", "0", str(int(h) * int(w)), c, "1", n, "14", "68"] in updates
                          for n, c, h, w in biased),
           f"--amp bf16: each of the {len(biased)} convolution biases added on "
           "cuBLAS, one rank-1 update per image")
    convs = [l for l in step if l.startswith(("cudnn fwd", "cudnn bwd"))]
    expect([l.rsplit(" ", 2)[0] for l in convs]
           == [n for n in amp_launches if n.startswith("cudnn")],
           f"--amp bf16: its {len(convs)} convolutions on cuDNN")
    amp.lib.trainc_session_close(amp_session)
    log_lines(log)

    os.environ["FAKE_CUDA_MEMORY"] = "1000"
    status, _, message = lib.open()
    expect(status == OUT_OF_MEMORY and "out of GPU memory" in message,
           f"too little GPU memory: '{message}'")
    del os.environ["FAKE_CUDA_MEMORY"]
    os.environ["FAKE_CUDA_DEVICES"] = "0"
    status, _, message = lib.open()
    expect(status == DEVICE_ERROR and message == "no CUDA device: the driver found no GPU",
           f"no device: '{message}'")
    print("the CUDA target's host runtime checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
