#!/usr/bin/python3
"""Random-graph differential testing of trainc against PyTorch.

In the spirit of NNSmith and Csmith: a seeded generator builds a small valid
ONNX graph over the ops trainc supports (broadcasting both ways, expand,
concat, slice with negative and strided bounds, reshape, transpose, gather,
matmul/gemm, conv and pooling, layer norm, softmax, reductions, elementwise
chains; parameters and values read several times; size-1 dims; negative
axes), and the same computation in PyTorch. Every graph ends in a linear
head and softmax cross-entropy, and is trained by `trainc train` for 2 SGD
steps with each dispatch setting asked for (the default registry and
`--dispatch '*=generated'`). The two losses and every parameter after the
steps (which carry both steps' gradients) are compared with PyTorch's fp32
run by the parity criterion of docs/TRAINING.md:

  e(a, b) = ||a - b|| / (||b|| + 1e-6 sqrt(n)) <= 1e-4 against torch fp32,
  or, where e(torch fp32, torch fp64) > 1e-4, e(trainc, fp64) <= 4 e(fp32, fp64).

A mismatch, a crash, a compile failure or a hang is a finding. Each finding
is reduced (delta debugging over the graph's steps: a step whose output can
be replaced by its input, or whose dependents can go with it, is dropped
while the failure stays the same kind) and written to OUT/NAME/ as
model.onnx, inputs, the torch script of the twin (graph.txt) and what
failed (finding.json).

  difftest.py --trainc build/bin/trainc --seeds 0:300 --out DIR [--jobs 2]

exits 1 if any seed fails. Seeds are independent: seed S always builds the
same graph, so a finding is reproduced by --seeds S:S+1.
"""
import argparse
import concurrent.futures
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

torch.set_num_threads(1)

OPSET = 17
LR = 0.05
STEPS = 2
CLASSES = 5
MAX_ELEMENTS = 4096


# --------------------------------------------------------------------------- graphs

@dataclass
class Value:
    """A float tensor of the graph: its ONNX name, shape and what is known of
    its values (bounded: in [-1, 1]; positive: > 0; ties: may hold equal
    values, so max-like ops are not differentiable the same way everywhere)."""
    name: str
    shape: tuple
    bounded: bool = False
    positive: bool = False
    ties: bool = False


@dataclass
class Step:
    """One op of the graph: `kind`, the values it reads (indices into the
    graph's values; 0 is the input), its attributes and the parameters it
    creates (name -> array). `emit` builds its ONNX nodes and initializers,
    `twin` its PyTorch computation."""
    kind: str
    inputs: List[int]
    attrs: dict
    params: Dict[str, np.ndarray] = field(default_factory=dict)
    out: Optional[Value] = None
    index: int = 0  # the value it defines: v<index>

    def copy(self):
        return Step(self.kind, list(self.inputs), self.attrs, self.params,
                    self.out, self.index)


class Graph:
    def __init__(self, input_shape, rng):
        self.rng = rng
        self.input = Value("x", tuple(input_shape))
        self.steps: List[Step] = []

    def values(self):
        return [self.input] + [s.out for s in self.steps]


def prod(shape):
    return int(np.prod(shape)) if shape else 1


def norm_axis(axis, rank):
    return axis + rank if axis < 0 else axis


# Each op: (applicable(value) -> bool, make(graph, index, value) -> Step or
# None, emit(step, names) -> nodes + constant initializers, twin(step,
# tensors, params) -> tensor). `names` are the ONNX names of the inputs.

OPS = {}


def op(kind, weight=1.0):
    def register(cls):
        OPS[kind] = (cls, weight)
        return cls
    return register


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


class Unary:
    onnx_op = None
    bounded = positive = False

    @classmethod
    def applicable(cls, v):
        return True

    @classmethod
    def make(cls, g, i, v):
        return Step(cls.kind, [i], {})

    @classmethod
    def emit(cls, s, names, out):
        return [helper.make_node(cls.onnx_op, names, [out], **s.attrs)], []

    @classmethod
    def result(cls, s, v):
        return Value("", v.shape, cls.bounded, cls.positive,
                     v.ties or cls.kind == "relu")


def unary(kind, onnx_op, torch_fn, bounded=False, positive=False, needs=None,
          weight=1.0):
    cls = type(kind, (Unary,), dict(kind=kind, onnx_op=onnx_op, bounded=bounded,
                                    positive=positive))
    cls.twin = classmethod(lambda c, s, xs, p: torch_fn(xs[0]))
    if needs:
        cls.applicable = classmethod(lambda c, v: needs(v))
    OPS[kind] = (cls, weight)


unary("relu", "Relu", torch.relu)
unary("tanh", "Tanh", torch.tanh, bounded=True)
unary("sigmoid", "Sigmoid", torch.sigmoid, bounded=True, positive=True)
unary("erf", "Erf", torch.erf, bounded=True)
unary("sin", "Sin", torch.sin, bounded=True)
unary("cos", "Cos", torch.cos, bounded=True)
unary("softplus", "Softplus", torch.nn.functional.softplus, positive=True)
unary("neg", "Neg", torch.neg)
unary("abs", "Abs", torch.abs)
# Only where the input cannot overflow or leave the domain.
unary("exp", "Exp", torch.exp, positive=True, needs=lambda v: v.bounded)
unary("log", "Log", torch.log, needs=lambda v: v.positive)
unary("sqrt", "Sqrt", torch.sqrt, positive=True, needs=lambda v: v.positive)


@op("leaky_relu", 0.5)
class LeakyRelu(Unary):
    kind, onnx_op = "leaky_relu", "LeakyRelu"

    @classmethod
    def make(cls, g, i, v):
        return Step(cls.kind, [i], {"alpha": g.rng.choice([0.01, 0.2])})

    @classmethod
    def twin(cls, s, xs, p):
        return F.leaky_relu(xs[0], s.attrs["alpha"])


unary("hardswish", "HardSwish", F.hardswish, weight=0.5)


@op("hardsigmoid", 0.5)
class HardSigmoid(Unary):
    """As torch exports F.hardsigmoid: alpha 1/6, beta 0.5."""
    kind, onnx_op = "hardsigmoid", "HardSigmoid"
    bounded = positive = False

    @classmethod
    def make(cls, g, i, v):
        return Step(cls.kind, [i], {"alpha": 1.0 / 6.0, "beta": 0.5})

    @classmethod
    def result(cls, s, v):
        return Value("", v.shape, True, False, True)

    @classmethod
    def twin(cls, s, xs, p):
        return F.hardsigmoid(xs[0])


@op("softmax", 0.7)
class Softmax(Unary):
    kind, onnx_op = "softmax", "Softmax"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) >= 1

    @classmethod
    def make(cls, g, i, v):
        r = len(v.shape)
        return Step(cls.kind, [i], {"axis": g.rng.randrange(-r, r)})

    @classmethod
    def result(cls, s, v):
        return Value("", v.shape, True, True, v.ties)

    @classmethod
    def twin(cls, s, xs, p):
        return torch.softmax(xs[0], s.attrs["axis"])


@op("log_softmax", 0.5)
class LogSoftmax(Softmax):
    kind, onnx_op = "log_softmax", "LogSoftmax"

    @classmethod
    def result(cls, s, v):
        return Value("", v.shape, False, False, v.ties)

    @classmethod
    def twin(cls, s, xs, p):
        return torch.log_softmax(xs[0], s.attrs["axis"])


def broadcast_partner(rng, shape):
    """A shape that broadcasts with `shape`: each dim the same or 1 (or, where
    `shape` has 1, another size: broadcasting both ways), possibly without
    leading dims."""
    dims = []
    for d in shape:
        roll = rng.random()
        if d == 1 and roll < 0.3:
            dims.append(rng.choice([2, 3]))
        elif roll < 0.35:
            dims.append(1)
        else:
            dims.append(d)
    drop = rng.randrange(0, len(dims) + 1) if rng.random() < 0.3 else 0
    return tuple(dims[drop:])


def broadcast(a, b):
    return tuple(np.broadcast_shapes(a, b))


@op("binary", 3.0)
class Binary:
    kind = "binary"
    ONNX = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div"}
    # Whether an operand may hold ties (Max/Min: not, see Extremum).
    TIES = True

    @classmethod
    def applicable(cls, v):
        return cls.TIES or not v.ties

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        which = rng.choice(list(cls.ONNX))
        values = g.values()
        # The other operand: an earlier value that broadcasts (the input,
        # the value itself: read several times), or a new parameter.
        partners = [j for j, w in enumerate(values)
                    if j != i and w.shape == v.shape
                    and (cls.TIES or not w.ties)] + [i]
        if which == "div":
            partners = [j for j in partners if values[j].positive]
        params = {}
        if partners and rng.random() < 0.4:
            other = rng.choice(partners)
            inputs = [i, other]
        else:
            shape = broadcast_partner(rng, v.shape)
            if prod(broadcast(v.shape, shape)) > MAX_ELEMENTS:
                shape = v.shape
            low = 0.5 if which == "div" else -1.0
            params["p"] = rng_array(rng, shape, low, 1.0 if which != "div" else 1.5)
            inputs = [i]
        swap = which in ("add", "mul", "max", "min") and rng.random() < 0.5
        return Step(cls.kind, inputs, {"op": which, "swap": swap}, params)

    @classmethod
    def operands(cls, s, names):
        ops = list(names) + list(s.params)
        return ops[::-1] if s.attrs["swap"] else ops

    @classmethod
    def emit(cls, s, names, out):
        return [helper.make_node(cls.ONNX[s.attrs["op"]],
                                 cls.operands(s, names), [out])], []

    @classmethod
    def result(cls, s, v, other=None):
        shape = broadcast(v.shape, other.shape if other else
                          s.params["p"].shape)
        return Value("", shape, ties=True)

    @classmethod
    def twin(cls, s, xs, p):
        a = list(xs) + [p[k] for k in s.params]
        if s.attrs["swap"]:
            a = a[::-1]
        return {"add": torch.add, "sub": torch.sub, "mul": torch.mul,
                "div": torch.div, "max": torch.maximum,
                "min": torch.minimum}[s.attrs["op"]](a[0], a[1])


def rng_array(rng, shape, low=-1.0, high=1.0):
    seed = rng.randrange(2**31)
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


@op("transpose")
class Transpose:
    kind = "transpose"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) >= 2

    @classmethod
    def make(cls, g, i, v):
        perm = list(range(len(v.shape)))
        g.rng.shuffle(perm)
        return Step(cls.kind, [i], {"perm": perm})

    @classmethod
    def emit(cls, s, names, out):
        return [helper.make_node("Transpose", names, [out], perm=s.attrs["perm"])], []

    @classmethod
    def result(cls, s, v):
        return Value("", tuple(v.shape[d] for d in s.attrs["perm"]), v.bounded,
                     v.positive, v.ties)

    @classmethod
    def twin(cls, s, xs, p):
        return xs[0].permute(*s.attrs["perm"])


def factorizations(n, rank, rng):
    dims = []
    for _ in range(rank - 1):
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        d = rng.choice(divisors)
        dims.append(d)
        n //= d
    dims.append(n)
    rng.shuffle(dims)
    return dims


@op("reshape")
class Reshape:
    kind = "reshape"

    @classmethod
    def applicable(cls, v):
        return True

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        shape = factorizations(prod(v.shape), rng.randrange(1, 5), rng)
        target = list(shape)
        if rng.random() < 0.4:
            target[rng.randrange(len(target))] = -1
        return Step(cls.kind, [i], {"shape": target, "result": shape})

    @classmethod
    def emit(cls, s, names, out):
        n = out + "_shape"
        return ([helper.make_node("Reshape", [names[0], n], [out])],
                [const(n, np.array(s.attrs["shape"], np.int64))])

    @classmethod
    def result(cls, s, v):
        return Value("", tuple(s.attrs["result"]), v.bounded, v.positive, v.ties)

    @classmethod
    def twin(cls, s, xs, p):
        return xs[0].reshape(s.attrs["result"])


@op("unsqueeze", 0.5)
class Unsqueeze:
    kind = "unsqueeze"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) <= 4

    @classmethod
    def make(cls, g, i, v):
        r = len(v.shape) + 1
        return Step(cls.kind, [i], {"axis": g.rng.randrange(-r, r)})

    @classmethod
    def emit(cls, s, names, out):
        n = out + "_axes"
        return ([helper.make_node("Unsqueeze", [names[0], n], [out])],
                [const(n, np.array([s.attrs["axis"]], np.int64))])

    @classmethod
    def result(cls, s, v):
        shape = list(v.shape)
        shape.insert(norm_axis(s.attrs["axis"], len(shape) + 1), 1)
        return Value("", tuple(shape), v.bounded, v.positive, v.ties)

    @classmethod
    def twin(cls, s, xs, p):
        return xs[0].unsqueeze(s.attrs["axis"])


@op("squeeze", 0.5)
class Squeeze:
    kind = "squeeze"

    @classmethod
    def applicable(cls, v):
        return 1 in v.shape

    @classmethod
    def make(cls, g, i, v):
        ones = [a for a, d in enumerate(v.shape) if d == 1]
        axis = g.rng.choice(ones)
        if g.rng.random() < 0.5:
            axis -= len(v.shape)
        return Step(cls.kind, [i], {"axis": axis})

    @classmethod
    def emit(cls, s, names, out):
        n = out + "_axes"
        return ([helper.make_node("Squeeze", [names[0], n], [out])],
                [const(n, np.array([s.attrs["axis"]], np.int64))])

    @classmethod
    def result(cls, s, v):
        shape = list(v.shape)
        del shape[norm_axis(s.attrs["axis"], len(shape))]
        return Value("", tuple(shape), v.bounded, v.positive, v.ties)

    @classmethod
    def twin(cls, s, xs, p):
        return xs[0].squeeze(s.attrs["axis"])


@op("expand")
class Expand:
    kind = "expand"

    @classmethod
    def applicable(cls, v):
        return 1 in v.shape or len(v.shape) < 4

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        shape = [rng.choice([2, 3]) if d == 1 and rng.random() < 0.7 else d
                 for d in v.shape]
        if len(shape) < 4 and rng.random() < 0.4:
            shape.insert(0, rng.choice([1, 2]))
        if prod(shape) > MAX_ELEMENTS:
            return None
        # ONNX Expand broadcasts: a 1 in the target keeps the input's dim.
        target = [1 if rng.random() < 0.2 and a >= len(shape) - len(v.shape)
                  and v.shape[a - (len(shape) - len(v.shape))] == d else d
                  for a, d in enumerate(shape)]
        return Step(cls.kind, [i], {"shape": target, "result": shape})

    @classmethod
    def emit(cls, s, names, out):
        n = out + "_shape"
        return ([helper.make_node("Expand", [names[0], n], [out])],
                [const(n, np.array(s.attrs["shape"], np.int64))])

    @classmethod
    def result(cls, s, v):
        return Value("", tuple(s.attrs["result"]), v.bounded, v.positive, True)

    @classmethod
    def twin(cls, s, xs, p):
        return xs[0].expand(tuple(s.attrs["result"]))


@op("concat", 1.5)
class Concat:
    kind = "concat"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) >= 1

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        r = len(v.shape)
        axis = rng.randrange(-r, r)
        a = norm_axis(axis, r)
        values = g.values()
        same = [j for j, w in enumerate(values) if len(w.shape) == r and all(
            w.shape[d] == v.shape[d] for d in range(r) if d != a)]
        pieces, params = [], {}
        for k in range(rng.choice([1, 1, 2])):
            if rng.random() < 0.5:
                pieces.append(("value", rng.choice(same)))
            else:
                shape = list(v.shape)
                shape[a] = rng.choice([1, 2, 3])
                name = f"p{k}"
                params[name] = rng_array(rng, shape)
                pieces.append(("param", name))
        # The value first, last or between the others.
        order = list(range(len(pieces) + 1))
        rng.shuffle(order)
        total = v.shape[a] + sum(
            values[j].shape[a] if kind == "value" else params[j].shape[a]
            for kind, j in pieces)
        if prod(v.shape) // max(v.shape[a], 1) * total > MAX_ELEMENTS:
            return None
        inputs = [i] + [j for kind, j in pieces if kind == "value"]
        return Step(cls.kind, inputs, {"axis": axis, "pieces": pieces,
                                       "order": order}, params)

    @classmethod
    def operands(cls, s, items):
        """Items for the value, then each piece, in concatenation order."""
        return [items[k] for k in s.attrs["order"]]

    @classmethod
    def items(cls, s, ins, params):
        values = iter(ins[1:])
        out = [ins[0]]
        for kind, j in s.attrs["pieces"]:
            out.append(next(values) if kind == "value" else params[j])
        return out

    @classmethod
    def emit(cls, s, names, out):
        names = cls.operands(s, cls.items(s, names, {k: k for k in s.params}))
        return [helper.make_node("Concat", names, [out], axis=s.attrs["axis"])], []

    @classmethod
    def result(cls, s, v, *others):
        a = norm_axis(s.attrs["axis"], len(v.shape))
        shapes = cls.items(s, [v.shape] + [o.shape for o in others],
                           {k: p.shape for k, p in s.params.items()})
        shape = list(v.shape)
        shape[a] = sum(sh[a] for sh in shapes)
        return Value("", tuple(shape), ties=True)

    @classmethod
    def twin(cls, s, xs, p):
        return torch.cat(cls.operands(s, cls.items(s, xs, p)), s.attrs["axis"])


@op("slice", 1.5)
class Slice:
    kind = "slice"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) >= 1 and max(v.shape) >= 2

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        r = len(v.shape)
        axes = [a for a in range(r) if v.shape[a] >= 2]
        rng.shuffle(axes)
        axes = axes[:rng.randrange(1, len(axes) + 1)]
        starts, ends, steps, shape = [], [], [], list(v.shape)
        for a in axes:
            n = v.shape[a]
            step = rng.choice([1, 1, 1, 2, -1])
            if step > 0:
                start = rng.randrange(0, n)
                end = rng.randrange(start + 1, n + 1)
                length = len(range(start, end, step))
                if rng.random() < 0.3:
                    start -= n  # negative start
                if rng.random() < 0.2 and end == n:
                    end = 2**62  # past the end, as exporters write
            else:
                start = rng.randrange(1, n)
                end = rng.randrange(-1, start)
                length = len(range(start, end, step))
                if end == -1:
                    end = -(2**62)  # through index 0
            starts.append(start)
            ends.append(end)
            steps.append(step)
            shape[a] = length
        neg_axes = [a - r if rng.random() < 0.3 else a for a in axes]
        return Step(cls.kind, [i], {"starts": starts, "ends": ends,
                                    "axes": neg_axes, "steps": steps,
                                    "result": shape})

    @classmethod
    def emit(cls, s, names, out):
        inits, ins = [], [names[0]]
        for key in ("starts", "ends", "axes", "steps"):
            n = f"{out}_{key}"
            inits.append(const(n, np.array(s.attrs[key], np.int64)))
            ins.append(n)
        return [helper.make_node("Slice", ins, [out])], inits

    @classmethod
    def result(cls, s, v):
        return Value("", tuple(s.attrs["result"]), v.bounded, v.positive, v.ties)

    @classmethod
    def twin(cls, s, xs, p):
        x = xs[0]
        r = x.dim()
        index = [slice(None)] * r
        flips = []
        for start, end, axis, step in zip(s.attrs["starts"], s.attrs["ends"],
                                          s.attrs["axes"], s.attrs["steps"]):
            a = norm_axis(axis, r)
            n = x.shape[a]
            picked = list(range(*slice(start, None if abs(end) >= 2**62 else end,
                                       step).indices(n)))
            index[a] = torch.tensor(picked, dtype=torch.long)
            flips.append(a)
        # Advanced indexing one axis at a time keeps the axes in place.
        for a in flips:
            x = x.index_select(a, index[a])
        return x


@op("pad", 1.0)
class Pad:
    """ONNX Pad (constant, edge, reflect), negative pads included: trainc
    imports it as slices, constants, expands and concats."""
    kind = "pad"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) >= 1 and prod(v.shape) <= 256

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        r = len(v.shape)
        mode = rng.choice(["constant", "edge", "reflect"])
        begins, ends, shape = [], [], list(v.shape)
        for a in range(r):
            n = v.shape[a]
            b = e = 0
            if rng.random() < 0.6:
                # A crop keeps at least 2 elements (reflect needs them).
                low = -1 if n >= 4 else 0
                b, e = rng.randint(low, 2), rng.randint(low, 2)
                kept = n + min(b, 0) + min(e, 0)
                if mode == "reflect":
                    b, e = min(b, kept - 1), min(e, kept - 1)
            begins.append(b)
            ends.append(e)
            shape[a] = n + b + e
        if all(b == 0 and e == 0 for b, e in zip(begins, ends)):
            begins[0] = 1
            shape[0] += 1
            if mode == "reflect" and v.shape[0] < 2:
                mode = "edge"
        value = round(rng.uniform(-1, 1), 3)
        return Step(cls.kind, [i], {"mode": mode, "pads": begins + ends,
                                    "value": value, "result": shape})

    @classmethod
    def emit(cls, s, names, out):
        pads, value = f"{out}_pads", f"{out}_value"
        inits = [const(pads, np.array(s.attrs["pads"], np.int64))]
        ins = [names[0], pads]
        if s.attrs["mode"] == "constant":
            inits.append(const(value, np.array(s.attrs["value"], np.float32)))
            ins.append(value)
        return [helper.make_node("Pad", ins, [out], mode=s.attrs["mode"])], inits

    @classmethod
    def result(cls, s, v):
        c = s.attrs["value"]
        constant = s.attrs["mode"] == "constant"
        return Value("", tuple(s.attrs["result"]),
                     v.bounded and (not constant or abs(c) <= 1),
                     v.positive and (not constant or c > 0), True)

    @classmethod
    def twin(cls, s, xs, p):
        x = xs[0]
        r = x.dim()
        pads, mode = s.attrs["pads"], s.attrs["mode"]
        for a in range(r):
            b, e = pads[a], pads[a + r]
            n = x.shape[a]
            start, stop = max(0, -b), n - max(0, -e)
            x = x.narrow(a, start, stop - start)
            n = stop - start
            b, e = max(0, b), max(0, e)
            if b == 0 and e == 0:
                continue
            if mode == "constant":
                width = [0] * (2 * r)
                width[2 * (r - 1 - a)], width[2 * (r - 1 - a) + 1] = b, e
                x = F.pad(x, width, value=s.attrs["value"])
                continue
            picked = []
            for j in range(-b, n + e):
                if mode == "edge":
                    picked.append(min(max(j, 0), n - 1))
                else:
                    picked.append(-j if j < 0 else 2 * (n - 1) - j if j >= n else j)
            x = x.index_select(a, torch.tensor(picked, dtype=torch.long))
        return x


@op("tile", 0.7)
class Tile:
    """ONNX Tile: trainc imports it as reshape, expand, reshape per axis."""
    kind = "tile"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) >= 1 and prod(v.shape) <= 128

    @classmethod
    def make(cls, g, i, v):
        repeats = [g.rng.choice([1, 1, 2, 3]) for _ in v.shape]
        if all(r == 1 for r in repeats):
            repeats[g.rng.randrange(len(repeats))] = 2
        return Step(cls.kind, [i], {"repeats": repeats})

    @classmethod
    def emit(cls, s, names, out):
        repeats = f"{out}_repeats"
        return ([helper.make_node("Tile", [names[0], repeats], [out])],
                [const(repeats, np.array(s.attrs["repeats"], np.int64))])

    @classmethod
    def result(cls, s, v):
        shape = tuple(d * r for d, r in zip(v.shape, s.attrs["repeats"]))
        return Value("", shape, v.bounded, v.positive, True)

    @classmethod
    def twin(cls, s, xs, p):
        return xs[0].repeat(*s.attrs["repeats"])


@op("extremum", 0.7)
class Extremum(Binary):
    """ONNX Max and Min of two operands (broadcasting), drawn like binary's:
    trainc stacks them and reduces with reduce_max (Min through negations).
    No operand may hold ties (see Value)."""
    kind = "extremum"
    ONNX = {"max": "Max", "min": "Min"}
    TIES = False

    @classmethod
    def result(cls, s, v, other=None):
        o = other if other else Value("", s.params["p"].shape, True)
        positive = (v.positive or o.positive) if s.attrs["op"] == "max" else \
            (v.positive and o.positive)
        return Value("", broadcast(v.shape, o.shape), v.bounded and o.bounded,
                     positive, True)


@op("cumsum", 0.5)
class CumSum:
    """ONNX CumSum (exclusive, reverse): trainc imports it as log2(n)
    steps of slices, adds and concats."""
    kind = "cumsum"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) >= 1 and max(v.shape) >= 2

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        r = len(v.shape)
        axis = rng.choice([a for a in range(r) if v.shape[a] >= 2])
        if rng.random() < 0.3:
            axis -= r
        return Step(cls.kind, [i], {"axis": axis,
                                    "exclusive": int(rng.random() < 0.3),
                                    "reverse": int(rng.random() < 0.3)})

    @classmethod
    def emit(cls, s, names, out):
        axis = f"{out}_axis"
        return ([helper.make_node("CumSum", [names[0], axis], [out],
                                  exclusive=s.attrs["exclusive"],
                                  reverse=s.attrs["reverse"])],
                [const(axis, np.array(s.attrs["axis"], np.int64))])

    @classmethod
    def result(cls, s, v):
        return Value("", v.shape, False,
                     v.positive and not s.attrs["exclusive"], v.ties)

    @classmethod
    def twin(cls, s, xs, p):
        x = xs[0]
        a = norm_axis(s.attrs["axis"], x.dim())
        if s.attrs["reverse"]:
            x = x.flip(a)
        y = torch.cumsum(x, a)
        if s.attrs["exclusive"]:
            y = torch.cat([torch.zeros_like(y.narrow(a, 0, 1)),
                           y.narrow(a, 0, y.shape[a] - 1)], a)
        return y.flip(a) if s.attrs["reverse"] else y


@op("trilu", 0.5)
class Trilu:
    """ONNX Trilu (upper or lower, k in [-2, 2]): where(mask, x, 0)."""
    kind = "trilu"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) >= 2

    @classmethod
    def make(cls, g, i, v):
        return Step(cls.kind, [i], {"upper": g.rng.choice([0, 1]),
                                    "k": g.rng.randint(-2, 2)})

    @classmethod
    def emit(cls, s, names, out):
        k = f"{out}_k"
        return ([helper.make_node("Trilu", [names[0], k], [out],
                                  upper=s.attrs["upper"])],
                [const(k, np.array(s.attrs["k"], np.int64))])

    @classmethod
    def result(cls, s, v):
        return Value("", v.shape, v.bounded, False, True)

    @classmethod
    def twin(cls, s, xs, p):
        fn = torch.triu if s.attrs["upper"] else torch.tril
        return fn(xs[0], s.attrs["k"])


@op("gather")
class Gather:
    kind = "gather"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) >= 1

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        r = len(v.shape)
        axis = rng.randrange(-r, r)
        n = v.shape[norm_axis(axis, r)]
        ishape = rng.choice([(), (2,), (3,), (2, 2)])
        indices = np.array([rng.randrange(-n, n) for _ in range(prod(ishape))],
                           np.int64).reshape(ishape)
        return Step(cls.kind, [i], {"axis": axis, "indices": indices.tolist(),
                                    "ishape": list(ishape)})

    @classmethod
    def emit(cls, s, names, out):
        n = out + "_indices"
        idx = np.array(s.attrs["indices"], np.int64).reshape(s.attrs["ishape"])
        return ([helper.make_node("Gather", [names[0], n], [out], axis=s.attrs["axis"])],
                [const(n, idx)])

    @classmethod
    def result(cls, s, v):
        a = norm_axis(s.attrs["axis"], len(v.shape))
        shape = v.shape[:a] + tuple(s.attrs["ishape"]) + v.shape[a + 1:]
        return Value("", shape, v.bounded, v.positive, True)

    @classmethod
    def twin(cls, s, xs, p):
        x = xs[0]
        a = norm_axis(s.attrs["axis"], x.dim())
        idx = torch.tensor(s.attrs["indices"], dtype=torch.long).reshape(
            s.attrs["ishape"])
        idx = torch.where(idx < 0, idx + x.shape[a], idx)
        out = x.index_select(a, idx.reshape(-1))
        return out.reshape(x.shape[:a] + tuple(s.attrs["ishape"]) + x.shape[a + 1:])


@op("matmul", 1.5)
class MatMul:
    kind = "matmul"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) >= 1 and v.shape[-1] <= 64

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        k = v.shape[-1]
        n = rng.choice([1, 3, 4, 7])
        wshape = (k, n) if rng.random() < 0.8 or len(v.shape) < 3 else \
            (rng.choice([1, v.shape[-3]]), k, n)
        out = broadcast(v.shape[:-2], wshape[:-2]) + (
            (v.shape[-2],) if len(v.shape) >= 2 else ()) + (n,)
        if prod(out) > MAX_ELEMENTS:
            return None
        return Step(cls.kind, [i], {"result": list(out)},
                    {"w": rng_array(rng, wshape, -0.5, 0.5)})

    @classmethod
    def emit(cls, s, names, out):
        return [helper.make_node("MatMul", [names[0], "w"], [out])], []

    @classmethod
    def result(cls, s, v):
        return Value("", tuple(s.attrs["result"]))

    @classmethod
    def twin(cls, s, xs, p):
        return torch.matmul(xs[0], p["w"])


@op("gemm")
class Gemm:
    kind = "gemm"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) == 2 and max(v.shape) <= 64

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        trans_a, trans_b = rng.random() < 0.3, rng.random() < 0.5
        m, k = (v.shape[1], v.shape[0]) if trans_a else v.shape
        n = rng.choice([1, 2, 5])
        params = {"w": rng_array(rng, (n, k) if trans_b else (k, n), -0.5, 0.5)}
        if rng.random() < 0.7:
            params["c"] = rng_array(rng, rng.choice([(n,), (1, n), (m, 1), (m, n)]))
        return Step(cls.kind, [i], {"transA": int(trans_a), "transB": int(trans_b),
                                    "alpha": rng.choice([1.0, 0.5]),
                                    "beta": rng.choice([1.0, 2.0]),
                                    "result": [m, n]}, params)

    @classmethod
    def emit(cls, s, names, out):
        attrs = {k: s.attrs[k] for k in ("transA", "transB", "alpha", "beta")}
        return [helper.make_node("Gemm", [names[0]] + list(s.params), [out], **attrs)], []

    @classmethod
    def result(cls, s, v):
        return Value("", tuple(s.attrs["result"]))

    @classmethod
    def twin(cls, s, xs, p):
        a = xs[0].t() if s.attrs["transA"] else xs[0]
        b = p["w"].t() if s.attrs["transB"] else p["w"]
        y = s.attrs["alpha"] * (a @ b)
        return y + s.attrs["beta"] * p["c"] if "c" in p else y


@op("conv", 1.5)
class Conv:
    kind = "conv"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) == 4 and v.shape[1] <= 16

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        n, c, h, w = v.shape
        group = rng.choice([d for d in (1, 2, 3, c) if c % d == 0])
        m = group * rng.choice([1, 2])
        k = [rng.choice([1, 2, 3]), rng.choice([1, 2, 3])]
        dil = [rng.choice([1, 1, 2]), rng.choice([1, 1, 2])]
        stride = [rng.choice([1, 1, 2]), rng.choice([1, 2])]
        pads = [rng.randrange(0, k[0] + 1), rng.randrange(0, k[1] + 1)]
        pads = pads + [rng.randrange(0, k[0] + 1), rng.randrange(0, k[1] + 1)]
        out = []
        for d, size in enumerate((h, w)):
            span = size + pads[d] + pads[d + 2] - dil[d] * (k[d] - 1) - 1
            if span < 0:
                return None
            out.append(span // stride[d] + 1)
        params = {"w": rng_array(rng, (m, c // group, *k), -0.5, 0.5)}
        if rng.random() < 0.6:
            params["b"] = rng_array(rng, (m,))
        return Step(cls.kind, [i], {"group": group, "kernel": k, "dilations": dil,
                                    "strides": stride, "pads": pads,
                                    "result": [n, m, *out]}, params)

    @classmethod
    def emit(cls, s, names, out):
        a = s.attrs
        return [helper.make_node("Conv", [names[0]] + list(s.params), [out],
                                 group=a["group"], kernel_shape=a["kernel"],
                                 dilations=a["dilations"], strides=a["strides"],
                                 pads=a["pads"])], []

    @classmethod
    def result(cls, s, v):
        return Value("", tuple(s.attrs["result"]))

    @classmethod
    def twin(cls, s, xs, p):
        a = s.attrs
        x = F.pad(xs[0], (a["pads"][1], a["pads"][3], a["pads"][0], a["pads"][2]))
        return F.conv2d(x, p["w"], p.get("b"), a["strides"], 0, a["dilations"],
                        a["group"])


@op("conv_transpose", 0.7)
class ConvTranspose:
    """ONNX ConvTranspose (groups, strides, asymmetric pads, dilations,
    output_padding, bias): trainc imports it as conv_backward_input."""
    kind = "conv_transpose"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) == 4 and v.shape[1] <= 16 and prod(v.shape) <= 1024

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        n, c, h, w = v.shape
        group = rng.choice([d for d in (1, 2, c) if c % d == 0])
        m = group * rng.choice([1, 2])
        k = [rng.choice([1, 2, 3]), rng.choice([1, 2, 3])]
        dil = [rng.choice([1, 1, 2]), rng.choice([1, 1, 2])]
        stride = [rng.choice([1, 2]), rng.choice([1, 2, 3])]
        extra = [rng.randrange(0, st) for st in stride]
        out, pads = [], [0, 0, 0, 0]
        for d, size in enumerate((h, w)):
            full = stride[d] * (size - 1) + extra[d] + dil[d] * (k[d] - 1) + 1
            pads[d] = rng.randrange(0, min(k[d], full - 1) + 1) // 2
            pads[d + 2] = rng.randrange(0, min(k[d], full - pads[d] - 1) + 1) // 2
            out.append(full - pads[d] - pads[d + 2])
        if n * m * out[0] * out[1] > MAX_ELEMENTS:
            return None
        params = {"w": rng_array(rng, (c, m // group, *k), -0.5, 0.5)}
        if rng.random() < 0.6:
            params["b"] = rng_array(rng, (m,))
        return Step(cls.kind, [i], {"group": group, "kernel": k, "dilations": dil,
                                    "strides": stride, "pads": pads,
                                    "output_padding": extra,
                                    "result": [n, m, *out]}, params)

    @classmethod
    def emit(cls, s, names, out):
        a = s.attrs
        return [helper.make_node("ConvTranspose", [names[0]] + list(s.params), [out],
                                 group=a["group"], kernel_shape=a["kernel"],
                                 dilations=a["dilations"], strides=a["strides"],
                                 pads=a["pads"],
                                 output_padding=a["output_padding"])], []

    @classmethod
    def result(cls, s, v):
        return Value("", tuple(s.attrs["result"]))

    @classmethod
    def twin(cls, s, xs, p):
        a = s.attrs
        y = F.conv_transpose2d(xs[0], p["w"], p.get("b"), a["strides"], 0,
                               a["output_padding"], a["group"], a["dilations"])
        top, left, bottom, right = a["pads"]
        return y[:, :, top:y.shape[2] - bottom, left:y.shape[3] - right]


@op("resize", 0.6)
class Resize:
    """ONNX Resize as torch exports F.interpolate: nearest (asymmetric,
    floor) by whole factors, bilinear and bicubic (half_pixel or
    align_corners) to any size; trainc imports it as gathers and weights."""
    kind = "resize"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) == 4 and prod(v.shape) <= 1024

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        mode = rng.choice(["nearest", "linear", "cubic"])
        size = []
        for n in v.shape[2:]:
            if mode == "nearest":
                # Whole factors: torch's float scale then floors exactly.
                factors = [n * k for k in (1, 2, 3)] + \
                    [n // k for k in (2, 3) if n % k == 0]
                size.append(rng.choice(factors))
            else:
                size.append(rng.randrange(1, 2 * n + 2))
        if prod(v.shape[:2]) * prod(size) > MAX_ELEMENTS:
            return None
        corners = mode != "nearest" and rng.random() < 0.4
        return Step(cls.kind, [i], {"mode": mode, "size": size,
                                    "align_corners": corners,
                                    "result": list(v.shape[:2]) + size})

    @classmethod
    def emit(cls, s, names, out):
        a = s.attrs
        sizes = f"{out}_sizes"
        transform = ("asymmetric" if a["mode"] == "nearest" else
                     "align_corners" if a["align_corners"] else "half_pixel")
        node = helper.make_node("Resize", [names[0], "", "", sizes], [out],
                                mode=a["mode"], nearest_mode="floor",
                                coordinate_transformation_mode=transform,
                                cubic_coeff_a=-0.75)
        return [node], [const(sizes, np.array(a["result"], np.int64))]

    @classmethod
    def result(cls, s, v):
        return Value("", tuple(s.attrs["result"]),
                     v.bounded and s.attrs["mode"] != "cubic",
                     v.positive and s.attrs["mode"] != "cubic", True)

    @classmethod
    def twin(cls, s, xs, p):
        a = s.attrs
        mode = {"nearest": "nearest", "linear": "bilinear", "cubic": "bicubic"}[a["mode"]]
        corners = a["align_corners"] if mode != "nearest" else None
        return F.interpolate(xs[0], size=tuple(a["size"]), mode=mode,
                             align_corners=corners)


@op("pool")
class Pool:
    kind = "pool"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) == 4 and min(v.shape[2:]) >= 2

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        is_max = rng.random() < 0.6 and not v.ties
        k = [rng.choice([2, 3]), rng.choice([1, 2, 3])]
        k = [min(k[0], v.shape[2]), min(k[1], v.shape[3])]
        stride = [rng.choice([1, 2]), rng.choice([1, 2])]
        pads = [rng.randrange(0, k[0] // 2 + 1), rng.randrange(0, k[1] // 2 + 1)]
        ceil = int(is_max and rng.random() < 0.3)
        include = int(not is_max and rng.random() < 0.5)
        out = []
        for d, size in enumerate(v.shape[2:]):
            room = size + 2 * pads[d] - k[d]
            o = (-(-room // stride[d]) if ceil else room // stride[d]) + 1
            if ceil and (o - 1) * stride[d] >= size + pads[d]:
                o -= 1
            out.append(o)
        return Step(cls.kind, [i], {"max": is_max, "kernel": k, "strides": stride,
                                    "pads": pads + pads, "ceil": ceil,
                                    "include": include,
                                    "result": [*v.shape[:2], *out]})

    @classmethod
    def emit(cls, s, names, out):
        a = s.attrs
        extra = {"ceil_mode": a["ceil"]} if a["max"] else \
            {"count_include_pad": a["include"]}
        return [helper.make_node("MaxPool" if a["max"] else "AveragePool", names,
                                 [out], kernel_shape=a["kernel"],
                                 strides=a["strides"], pads=a["pads"], **extra)], []

    @classmethod
    def result(cls, s, v):
        return Value("", tuple(s.attrs["result"]), v.bounded,
                     v.positive and s.attrs["max"], v.ties)

    @classmethod
    def twin(cls, s, xs, p):
        a = s.attrs
        if a["max"]:
            return F.max_pool2d(xs[0], a["kernel"], a["strides"], a["pads"][:2],
                                ceil_mode=bool(a["ceil"]))
        return F.avg_pool2d(xs[0], a["kernel"], a["strides"], a["pads"][:2],
                            count_include_pad=bool(a["include"]))


@op("layer_norm", 0.7)
class LayerNorm:
    kind = "layer_norm"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) >= 1 and not v.ties and v.shape[-1] >= 2

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        r = len(v.shape)
        axis = rng.choice([-1, r - 1] + ([-2] if r >= 2 and v.shape[-2] >= 2 else []))
        norm = v.shape[norm_axis(axis, r):]
        return Step(cls.kind, [i], {"axis": axis},
                    {"scale": rng_array(rng, norm, 0.5, 1.5),
                     "bias": rng_array(rng, norm)})

    @classmethod
    def emit(cls, s, names, out):
        return [helper.make_node("LayerNormalization", [names[0], "scale", "bias"],
                                 [out], axis=s.attrs["axis"], epsilon=1e-5)], []

    @classmethod
    def result(cls, s, v):
        return Value("", v.shape)

    @classmethod
    def twin(cls, s, xs, p):
        x = xs[0]
        norm = x.shape[norm_axis(s.attrs["axis"], x.dim()):]
        return F.layer_norm(x, norm, p["scale"], p["bias"], 1e-5)


@op("reduce", 1.5)
class Reduce:
    kind = "reduce"

    @classmethod
    def applicable(cls, v):
        return len(v.shape) >= 1

    @classmethod
    def make(cls, g, i, v):
        rng = g.rng
        r = len(v.shape)
        which = rng.choice(["sum", "mean"] + ([] if v.ties else ["max"]))
        axes = sorted(rng.sample(range(r), rng.randrange(1, r + 1)))
        axes = [a - r if rng.random() < 0.3 else a for a in axes]
        keep = int(rng.random() < 0.5)
        shape = [1 if any(norm_axis(a, r) == d for a in axes) else n
                 for d, n in enumerate(v.shape)]
        if not keep:
            shape = [n for d, n in enumerate(v.shape)
                     if not any(norm_axis(a, r) == d for a in axes)]
        return Step(cls.kind, [i], {"op": which, "axes": axes, "keepdims": keep,
                                    "result": shape})

    @classmethod
    def emit(cls, s, names, out):
        a = s.attrs
        if a["op"] == "sum":  # axes as an input since opset 13
            n = out + "_axes"
            return ([helper.make_node("ReduceSum", [names[0], n], [out],
                                      keepdims=a["keepdims"])],
                    [const(n, np.array(a["axes"], np.int64))])
        onnx_op = {"mean": "ReduceMean", "max": "ReduceMax"}[a["op"]]
        return [helper.make_node(onnx_op, names, [out], axes=a["axes"],
                                 keepdims=a["keepdims"])], []

    @classmethod
    def result(cls, s, v):
        return Value("", tuple(s.attrs["result"]), v.bounded and s.attrs["op"] != "sum",
                     v.positive, v.ties)

    @classmethod
    def twin(cls, s, xs, p):
        a = s.attrs
        fn = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax}[a["op"]]
        return fn(xs[0], dim=tuple(a["axes"]), keepdim=bool(a["keepdims"]))


@op("mask", 0.7)
class Mask:
    """An attention-mask style select: where(!isnan(x) && x > t, x, 0), the
    And/IsNaN/Not/Greater/Where pattern of exported HF masks."""
    kind = "mask"

    @classmethod
    def applicable(cls, v):
        return True

    @classmethod
    def make(cls, g, i, v):
        return Step(cls.kind, [i], {"threshold": round(g.rng.uniform(-0.5, 0.5), 3)})

    @classmethod
    def emit(cls, s, names, out):
        t, z = out + "_threshold", out + "_zero"
        nodes = [
            helper.make_node("Constant", [], [t], value=helper.make_tensor(
                t, TensorProto.FLOAT, [], [s.attrs["threshold"]])),
            helper.make_node("Constant", [], [z], value=helper.make_tensor(
                z, TensorProto.FLOAT, [], [0.0])),
            helper.make_node("IsNaN", names, [out + "_nan"]),
            helper.make_node("Not", [out + "_nan"], [out + "_number"]),
            helper.make_node("Greater", [names[0], t], [out + "_above"]),
            helper.make_node("And", [out + "_number", out + "_above"], [out + "_keep"]),
            helper.make_node("Where", [out + "_keep", names[0], z], [out]),
        ]
        return nodes, []

    @classmethod
    def result(cls, s, v):
        return Value("", v.shape, v.bounded, False, True)

    @classmethod
    def twin(cls, s, xs, p):
        x = xs[0]
        keep = ~torch.isnan(x) & (x > s.attrs["threshold"])
        return torch.where(keep, x, torch.zeros((), dtype=x.dtype))


# --------------------------------------------------------------------------- building

def generate(seed):
    """The graph of `seed`: an input of rank 1-4 (size-1 dims likely), then
    2-8 steps, each on a random earlier value (later ones likelier)."""
    rng = random.Random(seed)
    rank = rng.randrange(1, 5)
    shape = [rng.choice([1, 2, 3, 4, 5, 8]) for _ in range(rank)]
    if rank == 4:
        shape[2], shape[3] = rng.choice([3, 5, 6, 8]), rng.choice([3, 4, 7])
    g = Graph(shape, rng)
    kinds = list(OPS)
    weights = [OPS[k][1] for k in kinds]
    target = rng.randrange(2, 9)
    attempts = 0
    while len(g.steps) < target and attempts < 200:
        attempts += 1
        values = g.values()
        i = len(values) - 1 if rng.random() < 0.6 else rng.randrange(len(values))
        v = values[i]
        kind = rng.choices(kinds, weights)[0]
        cls = OPS[kind][0]
        if not cls.applicable(v):
            continue
        step = cls.make(g, i, v)
        if step is None:
            continue
        step.out = result_of(step, values)
        step.index = len(values)
        if prod(step.out.shape) == 0 or prod(step.out.shape) > MAX_ELEMENTS:
            continue
        g.steps.append(step)
    return g


def result_of(step, values):
    cls = OPS[step.kind][0]
    ins = [values[j] for j in step.inputs]
    out = cls.result(step, *ins)
    return out


def head_rows(v):
    return v.shape[0] if len(v.shape) >= 2 else 1


def build_onnx(g, steps):
    """The ONNX model of the graph restricted to `steps` (a subset, in order),
    plus a head: reshape to [rows, -1], MatMul by a [K, CLASSES] parameter."""
    names = {0: "x"}
    nodes, inits = [], []
    params = {}
    for s in steps:
        index = s.index
        out = f"v{index}"
        ins = [names[j] for j in s.inputs]
        cls = OPS[s.kind][0]
        ns, cs = cls.emit(s, ins, out)
        # Parameters get unique names: the step's index prefix.
        rename = {k: f"{out}_{k}" for k in s.params}
        for node in ns:
            node.input[:] = [rename.get(n, n) for n in node.input]
            node.name = out
        nodes += ns
        inits += cs
        for k, a in s.params.items():
            params[rename[k]] = a
        names[index] = out
    last_index = (steps[-1].index) if steps else 0
    last = g.values()[last_index]
    rows = head_rows(last)
    k = prod(last.shape) // rows
    head = np.random.default_rng(last_index + 7).uniform(
        -0.5, 0.5, (k, CLASSES)).astype(np.float32)
    params["head"] = head
    inits.append(const("head_shape", np.array([rows, k], np.int64)))
    nodes.append(helper.make_node("Reshape", [names[last_index], "head_shape"], ["flat"]))
    nodes.append(helper.make_node("MatMul", ["flat", "head"], ["logits"]))
    for name, a in params.items():
        inits.append(numpy_helper.from_array(a, name))
    graph = helper.make_graph(
        nodes, "difftest",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(g.input.shape))],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [rows, CLASSES])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model, params, rows


def torch_run(g, steps, params, x, labels, dtype):
    """2 SGD steps in `dtype`: the losses and the parameters after them."""
    p = {k: torch.tensor(a, dtype=dtype, requires_grad=True) for k, a in params.items()}
    xt = torch.tensor(x, dtype=dtype)
    yt = torch.tensor(labels)
    losses = []
    for _ in range(STEPS):
        values = {0: xt}
        for s in steps:
            index = s.index
            local = {k: p[f"v{index}_{k}"] for k in s.params}
            values[index] = OPS[s.kind][0].twin(s, [values[j] for j in s.inputs], local)
        last_index = (steps[-1].index) if steps else 0
        last = values[last_index]
        logits = last.reshape(head_rows(g.values()[last_index]), -1) @ p["head"]
        loss = F.cross_entropy(logits, yt)
        for t in p.values():
            t.grad = None
        loss.backward()
        with torch.no_grad():
            for t in p.values():
                t -= LR * t.grad
        losses.append(loss.item())
    return np.array(losses), {k: t.detach().numpy().astype(np.float64) for k, t in p.items()}


def error(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(np.linalg.norm(a - b) / (np.linalg.norm(b) + 1e-6 * math.sqrt(max(a.size, 1))))


def run_trainc(trainc, model, x, labels, dispatch, work):
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "model.onnx")
    onnx.save(model, path)
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "labels.npy"), labels)
    out = os.path.join(work, "trained.onnx")
    cmd = [trainc, "train", path, "--feed", "x=" + os.path.join(work, "x.npy"),
           "--labels", os.path.join(work, "labels.npy"), "--steps", str(STEPS),
           "--optimizer", "sgd", "--lr", str(LR), "--threads", "1", "--save", out]
    if dispatch:
        cmd += ["--dispatch", dispatch]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return {"kind": "hang", "detail": " ".join(cmd)}
    if proc.returncode != 0:
        # The message, without the file name and node numbers that reduction
        # changes.
        message = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
        return {"kind": "crash" if proc.returncode < 0 else "error",
                "detail": f"exit {proc.returncode}: {message}"}
    losses = [float(line.split("loss")[1]) for line in proc.stdout.splitlines()
              if line.startswith("step ")]
    trained = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(out).graph.initializer}
    return {"kind": "ok", "losses": np.array(losses), "params": trained}


def compare(result, ref32, ref64):
    """Findings of one trainc run against torch fp32 (fp64 where ill-conditioned)."""
    bad = []
    pairs = [("losses", result["losses"], ref32[0], ref64[0])]
    for name in ref32[1]:
        pairs.append((name, result["params"].get(name), ref32[1][name], ref64[1][name]))
    for name, got, r32, r64 in pairs:
        if got is None or np.shape(got) != np.shape(r32):
            bad.append(f"{name}: missing or wrong shape")
            continue
        if not np.all(np.isfinite(got)):
            bad.append(f"{name}: not finite")
            continue
        e32, cond = error(got, r32), error(r32, r64)
        if cond <= 1e-4:
            if e32 > 1e-4:
                bad.append(f"{name}: e(trainc, torch fp32) = {e32:.2e}")
        elif error(got, r64) > 4 * cond:
            bad.append(f"{name}: e(trainc, fp64) = {error(got, r64):.2e} > 4 x {cond:.2e}")
    return bad


def live(g, steps):
    """The steps the last one reads, transitively (the others are dead)."""
    if not steps:
        return []
    needed = {steps[-1].index}
    out = []
    for s in reversed(steps):
        index = s.index
        if index in needed:
            out.append(s)
            needed.update(s.inputs)
    return out[::-1]


def check(g, steps, trainc, dispatch, work):
    """None if trainc agrees with torch on the graph of `steps`, else the
    finding's kind and details."""
    steps = live(g, steps)
    model, params, rows = build_onnx(g, steps)
    rng = np.random.default_rng(12345)
    x = rng.standard_normal(g.input.shape).astype(np.float32)
    labels = rng.integers(0, CLASSES, (rows,)).astype(np.int64)
    ref32 = torch_run(g, steps, params, x, labels, torch.float32)
    ref64 = torch_run(g, steps, params, x, labels, torch.float64)
    if not (np.all(np.isfinite(ref32[0])) and np.all(np.isfinite(ref64[0]))):
        return None  # torch itself overflowed: not a test of trainc
    result = run_trainc(trainc, model, x, labels, dispatch, work)
    if result["kind"] != "ok":
        return result
    bad = compare(result, ref32, ref64)
    return {"kind": "mismatch", "detail": "; ".join(bad)} if bad else None


def dependents(g, steps, s):
    """`s` and every step of `steps` that reads it, transitively."""
    gone = {s.index}
    out = []
    for t in steps:
        if t is s or any(j in gone for j in t.inputs):
            gone.add(t.index)
            out.append(t)
    return out


def signature(finding):
    """What must stay the same while reducing: the kind, and for an error
    or a crash its message without locations, names and numbers."""
    if finding["kind"] in ("error", "crash"):
        message = re.sub(r"loc\(.*\)\): ", "", finding["detail"])
        return finding["kind"], re.sub(r"[0-9]+", "N", message.split(": ")[-1])[:60]
    return finding["kind"], ""


def at_least_as_safe(src, out):
    """Whether readers of a value `out` may read `src` instead: it must
    promise what `out` promised (bounded, positive, free of ties), or a
    rewired reader may compute what is not comparable (a MaxPool of ties,
    a Log of a negative) and fail for another reason."""
    return ((src.bounded or not out.bounded) and (src.positive or not out.positive)
            and (out.ties or not src.ties))


def reduce_finding(g, steps, finding, trainc, dispatch, work):
    """Greedy delta debugging: drop steps (with their dependents, or
    rewiring their readers to a same-shaped, as constrained input) while
    the failure keeps its signature."""
    wanted = signature(finding)

    def same(f):
        return f is not None and signature(f) == wanted

    def attempt(trial):
        try:
            return check(g, trial, trainc, dispatch, work)
        except Exception:  # a graph the twin cannot run: not the same
            return None
    changed = True
    while changed:
        changed = False
        for s in list(steps):
            if s not in steps:
                continue
            index = s.index
            candidates = []
            # Rewire: readers of s read its first input instead.
            src = s.inputs[0]
            value = g.values()[src]
            if value.shape == s.out.shape and at_least_as_safe(value, s.out):
                candidates.append(("rewire", src))
            candidates.append(("drop", None))
            for how, src in candidates:
                if how == "drop":
                    trial = [t for t in steps if t not in dependents(g, steps, s)]
                    saved = None
                else:
                    trial = [t for t in steps if t is not s]
                    saved = [(t, list(t.inputs)) for t in trial]
                    for t in trial:
                        t.inputs = [src if j == index else j for j in t.inputs]
                f = attempt(trial)
                if same(f):
                    steps[:] = trial
                    finding = f
                    changed = True
                    break
                if saved:
                    for t, inputs in saved:
                        t.inputs = inputs
            if changed:
                break
    return steps, finding


def describe(g, steps):
    lines = [f"x: {list(g.input.shape)}"]
    for s in steps:
        index = s.index
        attrs = {k: v for k, v in s.attrs.items() if k != "result"}
        params = {k: list(a.shape) for k, a in s.params.items()}
        lines.append(f"v{index} = {s.kind}({', '.join(f'v{j}' if j else 'x' for j in s.inputs)})"
                     f" {attrs} params {params} -> {list(s.out.shape)}")
    return "\n".join(lines)


def run_seed(seed, trainc, dispatches, out, reduce):
    """Checks seed's graph with each dispatch; reduces and keeps findings."""
    g = generate(seed)
    findings = []
    with tempfile.TemporaryDirectory(prefix=f"difftest{seed}_") as work:
        for dispatch in dispatches:
            steps = live(g, [s.copy() for s in g.steps])
            try:
                f = check(g, steps, trainc, dispatch, work)
                if f is not None and reduce:
                    steps, f = reduce_finding(g, steps, f, trainc, dispatch, work)
                    # Again, to leave the reduced model and its inputs in `work`.
                    f = check(g, steps, trainc, dispatch, work) or f
            except Exception as e:  # a bug of this script: report, go on
                f = {"kind": "tester", "detail": f"{type(e).__name__}: {e}"}
            if f is None:
                continue
            name = f"seed{seed}-{'generated' if dispatch else 'default'}"
            target = os.path.join(out, name)
            os.makedirs(target, exist_ok=True)
            for file in ("model.onnx", "x.npy", "labels.npy"):
                if os.path.exists(os.path.join(work, file)):
                    shutil.copy(os.path.join(work, file), target)
            steps = live(g, steps)
            with open(os.path.join(target, "graph.txt"), "w") as fh:
                fh.write(describe(g, steps) + "\n")
            record = {"seed": seed, "dispatch": dispatch or "default",
                      "kind": f["kind"], "detail": f["detail"],
                      "steps": len(steps), "original_steps": len(live(g, g.steps))}
            with open(os.path.join(target, "finding.json"), "w") as fh:
                json.dump(record, fh, indent=1)
            findings.append(record)
    return seed, len(live(g, g.steps)), findings


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trainc", required=True)
    p.add_argument("--seeds", default="0:100", help="FIRST:END (END excluded)")
    p.add_argument("--out", required=True, help="where reduced findings go")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--dispatch", action="append", choices=["default", "generated"],
                   help="dispatch settings to run (default: both)")
    p.add_argument("--no-reduce", action="store_true")
    a = p.parse_args()
    first, end = map(int, a.seeds.split(":"))
    dispatches = [None if d == "default" else "*=generated"
                  for d in (a.dispatch or ["default", "generated"])]
    os.makedirs(a.out, exist_ok=True)
    graphs = failed = 0
    steps = 0
    with concurrent.futures.ProcessPoolExecutor(a.jobs) as pool:
        futures = [pool.submit(run_seed, s, a.trainc, dispatches, a.out,
                               not a.no_reduce) for s in range(first, end)]
        for future in concurrent.futures.as_completed(futures):
            seed, n, findings = future.result()
            graphs += 1
            steps += n
            for f in findings:
                failed += 1
                print(f"seed {seed} ({f['dispatch']}): {f['kind']}: {f['detail']} "
                      f"[reduced to {f['steps']} of {f['original_steps']} steps: "
                      f"{a.out}/seed{seed}-...]", flush=True)
    runs = graphs * len(dispatches)
    print(f"difftest: {graphs} graphs ({steps} ops), {runs} trainc runs, "
          f"{failed} findings")
    print(f"{runs - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
