"""PyTorch peer of bench/run.py: the reference model of models/export.py with
the ONNX file's weights, trained on the fixed batch with SGD + momentum and
softmax cross-entropy, in one of three modes:

  eager        the module as it is
  torchscript  torch.jit.script (torch.jit.trace where scripting fails)
  compile      torch.compile (PyTorch 2; the optimizer step stays eager)

With --autocast bf16 the forward pass and the loss run under
torch.autocast("cpu", torch.bfloat16) (PyTorch's CPU mixed precision;
f32 parameters and optimizer).

With --ddp, the process is one rank of a data-parallel job started by
mpirun (Open MPI's OMPI_COMM_WORLD_RANK and _SIZE): the module is wrapped
in DistributedDataParallel over gloo (PyTorch's CPU backend; TCP on
127.0.0.1), each rank training on the fixed batch; every rank prints its
line, and takes exactly --min-steps timed steps (bench/data_parallel.py).

Usage: peer_torch.py --mode MODE [--autocast bf16] [--ddp] [bench/measure.py's options]
Prints one JSON line."""
import argparse
import contextlib
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import export  # noqa: E402  (models/export.py: the modules and the weight loader)
import measure  # noqa: E402


def load_batch(spec, directory):
    inputs = [torch.from_numpy(np.load(os.path.join(directory, f"{name}.npy")))
              for name, _, _ in spec.inputs]
    labels = torch.from_numpy(np.load(os.path.join(directory, "labels.npy")))
    return inputs, labels


def prepare(module, mode, inputs):
    """The module to train in `mode`, and how it was made."""
    if mode == "eager":
        return module, "eager"
    if mode == "torchscript":
        try:
            return torch.jit.script(module), "torch.jit.script"
        except Exception:  # some modules only trace
            return torch.jit.trace(module, tuple(inputs)), "torch.jit.trace"
    if mode == "compile":
        if not hasattr(torch, "compile"):
            raise SystemExit(f"torch {torch.__version__} has no torch.compile")
        return torch.compile(module), "torch.compile"
    raise SystemExit(f"unknown mode {mode}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["eager", "torchscript", "compile"],
                        required=True)
    parser.add_argument("--autocast", choices=["bf16"],
                        help="run forward and loss under torch.autocast")
    parser.add_argument("--ddp", action="store_true",
                        help="one rank of a DistributedDataParallel job (mpirun)")
    parser.add_argument("--bucket-mb", type=float, default=25.0,
                        help="--ddp: DistributedDataParallel's bucket_cap_mb")
    measure.add_arguments(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)  # export.py sets 1 when imported
    rank = 0
    if args.ddp:
        import torch.distributed as dist
        rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
        dist.init_process_group(
            "gloo", init_method="tcp://127.0.0.1:29517", rank=rank,
            world_size=int(os.environ["OMPI_COMM_WORLD_SIZE"]))
        args.max_steps = args.min_steps  # the same step count on every rank

    if args.model not in export.SPECS:
        raise SystemExit(f"unknown model {args.model}")
    spec = export.SPECS[args.model]
    module = export.build(spec)
    export.load_from_onnx(module, args.onnx)
    module.train()
    inputs, labels = load_batch(spec, args.data)
    model, how = prepare(module, args.mode, inputs)
    if args.ddp:
        model = torch.nn.parallel.DistributedDataParallel(
            model, bucket_cap_mb=args.bucket_mb)
        how += " + DistributedDataParallel (gloo)"
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr,
                                momentum=args.momentum)
    loss_function = torch.nn.CrossEntropyLoss()

    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if args.autocast
                else contextlib.nullcontext())

    def step():
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = loss_function(model(*inputs).float(), labels)
        loss.backward()
        optimizer.step()
        return loss.item()

    name = f"torch-{args.mode}" + (f"-autocast-{args.autocast}" if args.autocast else "")
    if args.ddp:
        name += "-ddp"
    measure.run(step, args, framework=name, how=how, version=torch.__version__,
                rank=rank)


if __name__ == "__main__":
    main()
