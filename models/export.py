#!/usr/bin/python3
"""Reference models and PyTorch oracles for trainc's tests.

Run with Debian's interpreter (torch 1.13, torchvision 0.14, onnx 1.12):

  /usr/bin/python3 models/export.py onnx --out DIR [--only NAME ...]
      Export the reference models to DIR/NAME.onnx. Deterministic: every model
      is built under its own fixed seed and exported in training mode without
      constant folding, so initializer names are the PyTorch state_dict names and
      BatchNorm keeps its training form.

  /usr/bin/python3 models/export.py reference --model NAME --onnx FILE --out DIR [--no-autocast]
      Rebuild the torch module, load its weights from FILE's initializers by
      name, and write PyTorch's results (loss, gradients, 3 steps of SGD with
      momentum and of AdamW) in fp32/ and fp64/, the losses of the same steps
      under torch.autocast("cpu", torch.bfloat16) in autocast_bf16/, plus
      DIR/reference.json.

  /usr/bin/python3 models/export.py all --out DIR
      Both, for every model (the reference of NAME goes to DIR/NAME.ref).

  /usr/bin/python3 models/export.py info FILE.onnx ...
      Print opset, inputs/outputs, initializer count and op-type counts.

The committed files are regenerated with
  /usr/bin/python3 models/export.py onnx --out models --only mlp cnn \
      cnn_bn_opset13 cnn_bn_opset15 transformer opset18_mlp class_token tied_head \
      gpt2 bert
(resnet18, ~45 MB, and the torchvision classifiers of TORCHVISION are generated
at test time only). opset18_mlp is built with
onnx.helper, is valid opset 18, and is NOT checked: ONNX 1.12's checker does not
know opset 18. It has no torch twin, so it has no reference.
"""
import argparse
import collections
import contextlib
import hashlib
import json
import math
import os
import shutil
import sys
import warnings
from dataclasses import dataclass, replace
from typing import Callable, List, Optional, Tuple

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

torch.set_num_threads(1)
# Expected: BN's `num_batches_tracked += 1` is dropped from the export (not needed).
warnings.filterwarnings("ignore", message="ONNX Preprocess - Removing mutation")

NUM_CLASSES = 10
VOCAB = 1000
LM_VOCAB = 50
STEPS = 3
INPUT_SEED = 1234
SGD = dict(lr=0.01, momentum=0.9)
ADAMW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)


NOTES = [
    "BatchNorm running stats follow PyTorch: momentum 0.1 (ONNX momentum 0.9) and the "
    "UNBIASED batch variance n/(n-1)*var for running_var; normalization uses the biased one.",
    "num_batches_tracked is not exported (torch drops the in-place += 1) and not written.",
    "Some gradients are exactly zero in exact arithmetic (conv bias feeding BatchNorm, the "
    "key part of in_proj_bias); fp32 leaves ~1e-8 noise there, which AdamW amplifies. "
    "Compare those tensors with an absolute tolerance.",
]

# --------------------------------------------------------------------------- models

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 256), nn.Linear(256, 128), nn.Linear(128, 10)

    def forward(self, image):
        x = torch.flatten(image, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class CNN(nn.Module):
    """LeNet-style: two conv/relu/maxpool stages and two linear layers."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1, self.fc2 = nn.Linear(3136, 128), nn.Linear(128, 10)

    def forward(self, image):
        x = F.max_pool2d(F.relu(self.conv1(image)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


class CNNBN(nn.Module):
    """Tiny CNN with BatchNorm2d (exported in training mode)."""

    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.conv2, self.bn2 = nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, image):
        x = F.relu(self.bn1(self.conv1(image)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.adaptive_avg_pool2d(x, 1)
        return self.fc(torch.flatten(x, 1))


class Transformer(nn.Module):
    """Token classifier: embedding + learned positions, 2 encoder layers, mean pool."""

    def __init__(self, seq=64, d=128):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(0.02 * torch.randn(seq, d))
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model=d, nhead=4, dim_feedforward=512, dropout=0.0,
                                       activation="gelu", batch_first=True)
            for _ in range(2))
        self.head = nn.Linear(d, 10)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.head(x.mean(dim=1))


class ClassToken(nn.Module):
    """A ViT's class token: a [1, 1, D] parameter expanded over the batch and
    concatenated before the patch embeddings (issue 26: its gradient must sum
    over the batch)."""

    def __init__(self, tokens=6, d=16):
        super().__init__()
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, d))
        self.embed = nn.Linear(d, d)
        self.head = nn.Linear((tokens + 1) * d, NUM_CLASSES)

    def forward(self, patches):
        x = self.embed(patches)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)
        return self.head(torch.flatten(F.gelu(x), 1))


class TiedHead(nn.Module):
    """A language model's head without a bias, its logits permuted to
    [N, V, T] for a per-token loss (issue 26: the product's transpose at the
    output)."""

    def __init__(self, d=8):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.W = nn.Parameter(0.3 * torch.randn(d, LM_VOCAB))

    def forward(self, states):
        return torch.matmul(torch.tanh(self.proj(states)), self.W).transpose(1, 2)


def attention(q, k, v, heads, bias):
    """Multi-head attention of [N, T, D] projections, `bias` added to the
    [N, H, T, T] scores (a causal or padding mask)."""
    n, t, d = q.shape
    split = lambda x: x.reshape(n, t, heads, d // heads).transpose(1, 2)
    scores = split(q) @ split(k).transpose(-2, -1) / math.sqrt(d // heads) + bias
    return (scores.softmax(-1) @ split(v)).transpose(1, 2).reshape(n, t, d)


class GPT2(nn.Module):
    """GPT-2-style decoder: token and learned position embeddings, pre-LN
    blocks of causal self-attention and a tanh-GELU MLP, a final LayerNorm,
    the token embedding tied as the output layer; logits [N, V, T] for the
    per-token (next-token) loss."""

    def __init__(self, seq=16, d=32, heads=4, layers=2):
        super().__init__()
        self.heads = heads
        self.wte, self.wpe = nn.Embedding(VOCAB, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            ln1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d),
            ln2=nn.LayerNorm(d), fc=nn.Linear(d, 4 * d), out=nn.Linear(4 * d, d)))
            for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        causal = torch.full((seq, seq), float("-inf")).triu(1)
        self.register_buffer("causal", causal, persistent=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(t))
        for b in self.blocks:
            q, k, v = b["qkv"](b["ln1"](x)).chunk(3, dim=-1)
            x = x + b["proj"](attention(q, k, v, self.heads, self.causal[:t, :t]))
            x = x + b["out"](F.gelu(b["fc"](b["ln2"](x)), approximate="tanh"))
        return (self.ln_f(x) @ self.wte.weight.t()).transpose(1, 2)


class BERT(nn.Module):
    """BERT-style encoder: token, position and token-type embeddings with a
    LayerNorm, post-LN blocks whose attention masks padding (an additive
    -10000 where `attention_mask` is 0), and a masked-LM head (dense, GELU,
    LayerNorm, the token embedding tied as the decoder, its own bias);
    logits [N, V, T]; the labels of unmasked positions are -100 (ignored)."""

    def __init__(self, seq=16, d=32, heads=4, layers=2):
        super().__init__()
        self.heads = heads
        self.word, self.pos = nn.Embedding(VOCAB, d), nn.Embedding(seq, d)
        self.token_type, self.ln = nn.Embedding(2, d), nn.LayerNorm(d)
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            q=nn.Linear(d, d), k=nn.Linear(d, d), v=nn.Linear(d, d),
            o=nn.Linear(d, d), ln1=nn.LayerNorm(d), fc=nn.Linear(d, 4 * d),
            out=nn.Linear(4 * d, d), ln2=nn.LayerNorm(d)))
            for _ in range(layers))
        self.dense, self.ln_head = nn.Linear(d, d), nn.LayerNorm(d)
        self.decoder_bias = nn.Parameter(torch.zeros(VOCAB))

    def forward(self, tokens, token_types, attention_mask):
        t = tokens.shape[1]
        x = self.ln(self.word(tokens) + self.pos(torch.arange(t)) + self.token_type(token_types))
        bias = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for b in self.blocks:
            x = b["ln1"](x + b["o"](attention(b["q"](x), b["k"](x), b["v"](x),
                                              self.heads, bias)))
            x = b["ln2"](x + b["out"](F.gelu(b["fc"](x))))
        h = self.ln_head(F.gelu(self.dense(x)))
        return (h @ self.word.weight.t() + self.decoder_bias).transpose(1, 2)


def resnet18():
    import torchvision
    return torchvision.models.resnet18(num_classes=NUM_CLASSES)


def torchvision_classifier(name, **kwargs):
    """torchvision 0.14's `name` with NUM_CLASSES classes (and `kwargs`),
    its Dropout and StochasticDepth probabilities set to 0 (random masks
    cannot match)."""
    def build():
        import torchvision
        model = getattr(torchvision.models, name)(num_classes=NUM_CLASSES, **kwargs)
        for module in model.modules():
            if isinstance(module, (nn.Dropout, torchvision.ops.StochasticDepth)):
                module.p = 0.0
        return model
    return build


# The smallest torchvision families, at 64 px and batch 8 (ResNet-18 is
# its own entry), generated at test time like resnet18. GoogLeNet and
# Inception-v3 (AUX_HEADS) train with their auxiliary classifiers, with
# the loss weights of their papers; Inception-v3's auxiliary head needs
# 299 px.
TORCHVISION = ["mobilenet_v2", "mobilenet_v3_small", "shufflenet_v2_x0_5",
               "squeezenet1_0", "mnasnet0_5", "efficientnet_b0", "regnet_x_400mf",
               "regnet_y_400mf", "convnext_tiny", "swin_t"]


@dataclass
class Spec:
    build: Callable[[], nn.Module]
    inputs: List[Tuple[str, Tuple[int, ...], str]]  # (name, shape, "float32" | "int64")
    opset: int
    seed: int = 0
    # Class labels: one per batch element of NUM_CLASSES by default; a
    # per-token loss has labels [N, T] over `classes`.
    labels: Optional[Tuple[int, ...]] = None
    classes: int = NUM_CLASSES
    # Masked-LM labels: all but every `masked`-th position are -100.
    masked: int = 0
    # A model of several outputs (auxiliary heads): the names of the
    # outputs after the logits, and the weight of the loss on each output
    # (the loss is the weighted sum, against the same labels; trainc
    # compile --output-weights).
    aux_outputs: Tuple[str, ...] = ()
    output_weights: Optional[Tuple[float, ...]] = None

    def label_shape(self):
        return self.labels or (self.inputs[0][1][0],)

    def output_names(self):
        return ["logits", *self.aux_outputs]

    def loss(self, loss_fn, outputs, labels, to_f32=False):
        """The training loss: loss_fn on the output, or the weighted sum
        over the outputs of a model with auxiliary heads (each output
        converted to f32 first with `to_f32`, for autocast)."""
        def one(output):
            return loss_fn(output.float() if to_f32 else output, labels)
        if not self.output_weights:
            return one(outputs)
        return sum(w * one(o) for w, o in zip(self.output_weights, outputs))


AUX_HEADS = {
    "googlenet": Spec(torchvision_classifier("googlenet"), [("image", (8, 3, 128, 128), "float32")],
                      17, aux_outputs=("aux_logits2", "aux_logits1"),
                      output_weights=(1.0, 0.3, 0.3)),
    "inception_v3": Spec(torchvision_classifier("inception_v3"),
                         [("image", (2, 3, 299, 299), "float32")], 17,
                         aux_outputs=("aux_logits",), output_weights=(1.0, 0.4)),
}

IMG = "image"
SPECS = {
    "mlp": Spec(MLP, [(IMG, (64, 1, 28, 28), "float32")], 17),
    "cnn": Spec(CNN, [(IMG, (64, 1, 28, 28), "float32")], 13),
    "cnn_bn_opset13": Spec(CNNBN, [(IMG, (8, 3, 16, 16), "float32")], 13),
    "cnn_bn_opset15": Spec(CNNBN, [(IMG, (8, 3, 16, 16), "float32")], 15),
    "resnet18": Spec(resnet18, [(IMG, (32, 3, 32, 32), "float32")], 14),
    "transformer": Spec(Transformer, [("tokens", (16, 64), "int64")], 17),
    "class_token": Spec(ClassToken, [("patches", (8, 6, 16), "float32")], 17),
    "tied_head": Spec(TiedHead, [("states", (4, 16, 8), "float32")], 17,
                      labels=(4, 16), classes=LM_VOCAB),
    "gpt2": Spec(GPT2, [("tokens", (4, 16), "int64")], 17, labels=(4, 16),
                 classes=VOCAB),
    "bert": Spec(BERT, [("tokens", (4, 16), "int64"), ("token_types", (4, 16), "int64:2"),
                        ("attention_mask", (4, 16), "padding")], 17, labels=(4, 16),
                 classes=VOCAB, masked=3),
    **{name: Spec(torchvision_classifier(name), [(IMG, (8, 3, 64, 64), "float32")], 17)
       for name in TORCHVISION},
    **AUX_HEADS,
}
HANDBUILT = ["opset18_mlp", "mlp_with_loss"]
ALL_MODELS = list(SPECS) + HANDBUILT


def build(spec: Spec) -> nn.Module:
    torch.manual_seed(spec.seed)
    return spec.build()


def tensor_dtype(kind: str) -> str:
    """An input's element type: "int64:K" and "padding" are int64."""
    return "float32" if kind == "float32" else "int64"


def make_inputs(spec: Spec):
    """Fixed-seed input batch and labels: images ~ randn, tokens ~ randint(0, VOCAB)."""
    g = torch.Generator().manual_seed(INPUT_SEED)
    xs = []
    for _, shape, dtype in spec.inputs:
        if dtype.startswith("int64"):  # "int64:K": values below K, else VOCAB
            high = int(dtype.partition(":")[2] or VOCAB)
            xs.append(torch.randint(0, high, shape, generator=g, dtype=torch.int64))
        elif dtype == "padding":  # 1s, then 0s past a random length per row
            lengths = torch.randint(shape[1] // 2, shape[1] + 1, (shape[0], 1), generator=g)
            xs.append((torch.arange(shape[1]) < lengths).to(torch.int64))
        else:
            xs.append(torch.randn(shape, generator=g, dtype=torch.float32))
    labels = torch.randint(0, spec.classes, spec.label_shape(), generator=g, dtype=torch.int64)
    if spec.masked:
        ignored = torch.ones_like(labels, dtype=torch.bool)
        ignored.view(-1)[::spec.masked] = False
        labels[ignored] = -100
    return xs, labels


# --------------------------------------------------------------------------- export

def export_torch(name: str, spec: Spec, path: str):
    model = build(spec)
    model.train()
    args = tuple(torch.zeros(s, dtype=getattr(torch, tensor_dtype(d))) for _, s, d in spec.inputs)
    torch.onnx.export(model, args, path, opset_version=spec.opset,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=[n for n, _, _ in spec.inputs],
                      output_names=spec.output_names(),
                      # A symbolic batch, as users export: shape subgraphs then
                      # derive batch-dependent sizes from Shape, which the
                      # importer must fold into batch-relative reshapes.
                      dynamic_axes={**{n: {0: "batch"} for n, _, _ in spec.inputs},
                                    **{n: {0: "batch"} for n in spec.output_names()}})
    check_torch_export(name, spec, model, onnx.load(path))


def check_torch_export(name: str, spec: Spec, module: nn.Module, m: onnx.ModelProto):
    """Self-check: valid model, state_dict names kept, I/O as asked, BN in training form."""
    onnx.checker.check_model(m)
    inits = {t.name for t in m.graph.initializer}
    missing = [k for k in module.state_dict()
               if k not in inits and not k.endswith("num_batches_tracked")]
    assert not missing, f"{name}: state_dict keys not among initializers: {missing}"
    assert [i.name for i in m.graph.input] == [n for n, _, _ in spec.inputs], name
    assert [o.name for o in m.graph.output] == spec.output_names(), name
    assert m.opset_import[0].version == spec.opset, name
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t)
              for n in m.graph.node if n.op_type == "Constant" and n.attribute[0].name == "value"}
    for n in m.graph.node:
        if n.op_type == "Dropout":  # torch keeps nn.Dropout(p=0) as Dropout(ratio=0, training)
            assert consts[n.input[1]] == 0.0, f"{name}: {n.name} has a nonzero ratio"
        if n.op_type != "BatchNormalization":
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if spec.opset < 14:  # BN-9: training is expressed by the 5-output form
            assert len(n.output) == 5 and "training_mode" not in attrs, (name, n)
        else:                # BN-14/15: training_mode=1, 3 outputs
            assert attrs.get("training_mode") == 1 and len(n.output) == 3, (name, n)


def export_opset18_mlp(path: str):
    """Hand-built opset-18 model: ReduceMean-18 takes `axes` as an input."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((16, 8)) * 0.25).astype(np.float32)
    b = (rng.standard_normal(8) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(w, "fc.weight"), numpy_helper.from_array(b, "fc.bias"),
             numpy_helper.from_array(np.array([1], np.int64), "mean.axes"),
             numpy_helper.from_array(np.array([0, -1], np.int64), "reshape.shape")]
    nodes = [
        helper.make_node("MatMul", ["x", "fc.weight"], ["fc.mm"], name="fc.matmul"),
        helper.make_node("Add", ["fc.mm", "fc.bias"], ["fc.out"], name="fc.add"),
        helper.make_node("Relu", ["fc.out"], ["h"], name="relu"),
        helper.make_node("ReduceMean", ["h", "mean.axes"], ["mean"], name="mean", keepdims=1),
        helper.make_node("Sub", ["h", "mean"], ["centered"], name="center"),
        helper.make_node("Reshape", ["centered", "reshape.shape"], ["flat"], name="reshape"),
        helper.make_node("Softmax", ["flat"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "opset18_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [4, 8])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                          producer_name="trainc-models-export")
    m.ir_version = 8
    onnx.save(m, path)
    # No checker: ONNX 1.12 rejects opset 18. Check the numbers by hand instead.
    x = rng.standard_normal((4, 16)).astype(np.float32)
    h = np.maximum(x @ w + b, 0)
    c = h - h.mean(axis=1, keepdims=True)
    p = np.exp(c - c.max(-1, keepdims=True))
    assert np.allclose((p / p.sum(-1, keepdims=True)).sum(-1), 1)


class MLPWithLoss(nn.Module):
    """A tiny MLP whose ONNX graph ends in its loss (SoftmaxCrossEntropyLoss)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 8), nn.Linear(8, 4)

    def forward(self, x, labels):
        return F.cross_entropy(self.fc2(torch.relu(self.fc1(x))), labels)


def export_mlp_with_loss(path: str):
    """A model that already computes its scalar loss: trainc trains on it as is."""
    torch.manual_seed(0)
    model = MLPWithLoss().train()
    args = (torch.zeros(4, 16), torch.zeros(4, dtype=torch.int64))
    torch.onnx.export(model, args, path, opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["x", "labels"], output_names=["loss"],
                      dynamic_axes={"x": {0: "batch"}, "labels": {0: "batch"}})
    m = onnx.load(path)
    onnx.checker.check_model(m)
    assert any(n.op_type == "SoftmaxCrossEntropyLoss" for n in m.graph.node), \
        [n.op_type for n in m.graph.node]


def cmd_onnx(out: str, only=None):
    os.makedirs(out, exist_ok=True)
    for name in only or ALL_MODELS:
        path = os.path.join(out, name + ".onnx")
        if name == "opset18_mlp":
            export_opset18_mlp(path)
        elif name == "mlp_with_loss":
            export_mlp_with_loss(path)
        elif name in SPECS:
            export_torch(name, SPECS[name], path)
        else:
            sys.exit(f"unknown model {name!r}; known: {', '.join(ALL_MODELS)}")
        print(f"wrote {path} ({os.path.getsize(path)} bytes)")


# --------------------------------------------------------------------------- reference

def load_from_onnx(module: nn.Module, path: str):
    """Load `module`'s state_dict from the ONNX initializers of the same names."""
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    state = module.state_dict()
    missing = [k for k in state if k not in inits and not k.endswith("num_batches_tracked")]
    if missing:
        raise SystemExit(f"{path}: initializers missing for state_dict keys: {missing}")
    for k, v in state.items():
        if k in inits:
            a = inits[k]
            if tuple(a.shape) != tuple(v.shape):
                raise SystemExit(f"{path}: {k} has shape {a.shape}, torch wants {tuple(v.shape)}")
            state[k] = torch.from_numpy(a.copy()).to(v.dtype)
    module.load_state_dict(state)
    return state


def with_file_batch_norms(spec: Spec, path: str) -> Spec:
    """`spec` whose BatchNorm modules take their momentum and epsilon from
    the file's BatchNormalization nodes (found by their scale, an
    initializer named MODULE.weight) where those differ from the module's
    beyond float32 rounding: PyTorch's reference is the file's model.
    torchvision 0.29's MaxViT keeps running statistics with momentum 0.01
    where 0.14's, which the reference is built from, uses 0.99."""
    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    norms = {}
    for n in m.graph.node:
        if n.op_type == "BatchNormalization" and len(n.input) > 1 and \
                n.input[1] in inits and n.input[1].endswith(".weight"):
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            # ONNX's momentum weighs the running value, PyTorch's the batch's.
            norms[n.input[1][:-len(".weight")]] = (1 - attrs.get("momentum", 0.9),
                                                   attrs.get("epsilon", 1e-5))

    def build_like_file():
        model = spec.build()
        changed = []
        for name, module in model.named_modules():
            if not isinstance(module, nn.modules.batchnorm._BatchNorm) or name not in norms:
                continue
            momentum, eps = norms[name]
            if module.momentum is not None and abs(module.momentum - momentum) > 1e-6:
                changed.append(f"{name}: momentum {module.momentum} -> {momentum:.6g}")
                module.momentum = momentum
            if abs(module.eps - eps) > 1e-6 * max(eps, 1e-6):
                changed.append(f"{name}: eps {module.eps} -> {eps:.6g}")
                module.eps = eps
        if changed and not getattr(build_like_file, "reported", False):
            build_like_file.reported = True
            print(f"{path}: BatchNorm settings taken from the file for {len(changed)} "
                  f"module(s), e.g. {changed[0]}")
        return model
    return replace(spec, build=build_like_file) if norms else spec


def save(root: str, rel: str, a):
    path = os.path.join(root, rel + ".npy")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, np.asarray(a))


def run_precision(spec: Spec, state, xs, labels, dtype, root):
    """Loss, grads and 3 optimizer steps in `dtype`; returns {relative name:
    array}, saved under `root` unless it is None."""
    def fresh():
        m = build(spec)
        m.load_state_dict(state)
        return m.to(dtype).train()

    xs = [x.to(dtype) if x.is_floating_point() else x for x in xs]
    loss_fn = nn.CrossEntropyLoss()
    out = {}
    for (name, _, _), x in zip(spec.inputs, xs):
        out[f"inputs/{name}"] = x.numpy()
    out["labels"] = labels.numpy()

    model = fresh()
    loss = spec.loss(loss_fn, model(*xs), labels)
    loss.backward()
    out["loss"] = loss.detach().numpy()
    for n, p in model.named_parameters():
        out[f"grads/{n}"] = p.grad.numpy()

    optimizers = {"sgd_momentum": lambda ps: torch.optim.SGD(ps, **SGD),
                  "adamw": lambda ps: torch.optim.AdamW(ps, **ADAMW)}
    for opt_name, make in optimizers.items():
        model = fresh()
        opt = make(model.parameters())
        losses = []
        for _ in range(STEPS):
            opt.zero_grad()
            loss = spec.loss(loss_fn, model(*xs), labels)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        out[f"{opt_name}/losses"] = np.array(losses, dtype=out["loss"].dtype)
        for n, t in model.state_dict().items():
            if not n.endswith("num_batches_tracked"):
                out[f"{opt_name}/params/{n}"] = t.detach().numpy()

    if root is not None:
        for rel, a in out.items():
            save(root, rel, a)
    return out


# PyTorch's fp32 error against fp64 is the yardstick of the parity criterion
# (docs/TRAINING.md), and one fp32 run can underestimate it: where a ReLU's
# input or a tie sits within rounding of a threshold, whether fp32 takes
# fp64's side depends on the kernels' summation order (RegNetY-400MF's
# squeeze-excitation ReLUs flip with OpenBLAS's SkylakeX kernels and not
# with its Haswell ones, and its step-1 gradients then differ from fp64 by
# 5e-2 or by 4e-5). So the fp32 steps run PERTURBED_RUNS more times, each on
# the weights moved by one fp32 rounding (a relative 2^-24, random signs),
# and the fp32 result farthest from fp64 per tensor is the yardstick.
PERTURBED_RUNS = 3


# And one more on the plain weights with THREADED_RUN_THREADS threads:
# PyTorch's CPU kernels (oneDNN's convolutions among them) split their
# reductions by thread, so this is PyTorch fp32 with another summation
# order (SqueezeNet 1.0's last biases move by 4.6 % with it: a ReLU before
# the final average pool flips).
THREADED_RUN_THREADS = 2


@contextlib.contextmanager
def torch_threads(n: int):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def perturbed(state, seed: int):
    """`state` with every floating tensor moved by a relative 2^-24 in a
    random direction per element (one fp32 rounding)."""
    g = torch.Generator().manual_seed(seed)
    out = collections.OrderedDict()
    for n, t in state.items():
        if t.is_floating_point():
            signs = torch.randint(0, 2, t.shape, generator=g).to(t.dtype) * 2 - 1
            t = t * (1 + signs * 2.0 ** -24)
        out[n] = t
    # load_state_dict hands each module its version from here (MNASNet
    # refuses a state without one).
    if hasattr(state, "_metadata"):
        out._metadata = state._metadata
    return out


def run_autocast(spec: Spec, state, xs, labels, root):
    """3 optimizer steps of the f32 model under torch.autocast("cpu",
    torch.bfloat16) (PyTorch's mixed precision on CPU: convolutions and
    products in bf16, f32 parameters); returns {relative name: array}."""
    loss_fn = nn.CrossEntropyLoss()
    optimizers = {"sgd_momentum": lambda ps: torch.optim.SGD(ps, **SGD),
                  "adamw": lambda ps: torch.optim.AdamW(ps, **ADAMW)}
    out = {}
    for opt_name, make in optimizers.items():
        model = build(spec)
        model.load_state_dict(state)
        model.train()
        opt = make(model.parameters())
        losses = []
        for _ in range(STEPS):
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = spec.loss(loss_fn, model(*xs), labels, to_f32=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        out[f"{opt_name}/losses"] = np.array(losses, dtype=np.float32)
    for rel, a in out.items():
        save(root, rel, a)
    return out


def rel_error(a, b):
    """e(a, b) = ||a-b|| / (||b|| + 1e-6 sqrt(n)), in float64."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / (np.linalg.norm(b) + 1e-6 * math.sqrt(max(b.size, 1))))


def cmd_reference(name: str, onnx_path: str, out: str, spec: Optional[Spec] = None,
                  autocast_bf16: bool = True):
    """PyTorch's results for SPECS[name] (or `spec`) on the weights of
    `onnx_path`, into `out`; without `autocast_bf16`, no autocast run."""
    if spec is None and name not in SPECS:
        sys.exit(f"no torch reference for {name!r}; known: {', '.join(SPECS)}")
    spec = with_file_batch_norms(spec or SPECS[name], onnx_path)
    module = build(spec)
    state = load_from_onnx(module, onnx_path)
    xs, labels = make_inputs(spec)
    results = {p: run_precision(spec, state, xs, labels, dt, os.path.join(out, p))
               for p, dt in (("fp32", torch.float32), ("fp64", torch.float64))}
    try:
        autocast = (run_autocast(spec, state, xs, labels, os.path.join(out, "autocast_bf16"))
                    if autocast_bf16 else {})
    except RuntimeError as e:  # torch 1.13 lacks some bf16 CPU gradients (hardtanh's)
        print(f"{name}: no autocast reference: {e}")
        autocast = {}
    errors = {k: rel_error(results["fp32"][k], v) for k, v in results["fp64"].items()
              if not k.startswith("inputs/") and k != "labels"}
    # The farthest fp32 result from fp64 per tensor, where a perturbed run's
    # or the threaded run's is farther than the plain run's:
    # <out>/fp32_spread/<rel>.npy.
    spread_errors = dict(errors)
    shutil.rmtree(os.path.join(out, "fp32_spread"), ignore_errors=True)
    for i in range(PERTURBED_RUNS + 1):
        weights = perturbed(state, i) if i < PERTURBED_RUNS else state
        with torch_threads(1 if i < PERTURBED_RUNS else THREADED_RUN_THREADS):
            run = run_precision(spec, weights, xs, labels, torch.float32, None)
        for k in errors:
            e = rel_error(run[k], results["fp64"][k])
            if e > spread_errors[k]:
                spread_errors[k] = e
                save(os.path.join(out, "fp32_spread"), k, run[k])
    autocast_errors = {k: rel_error(v, results["fp32"][k]) for k, v in autocast.items()}
    groups = collections.defaultdict(float)
    for k, e in errors.items():
        g = k.split("/")[0] if "/" in k else k
        groups[g] = max(groups[g], e)
    with open(onnx_path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    info = {
        "model": name,
        "onnx": os.path.basename(onnx_path),
        "onnx_sha256": sha,
        "opset": spec.opset,
        "mode": "module.train(): BatchNorm normalizes with batch statistics",
        "notes": NOTES,
        "loss": "CrossEntropyLoss(reduction='mean') on logits" + (
            f", weighted sum over the outputs {spec.output_names()}"
            if spec.output_weights else ""),
        "output_weights": list(spec.output_weights or ()),
        "steps": STEPS,
        "same_batch_every_step": True,
        "optimizers": {"sgd_momentum": {"type": "torch.optim.SGD", **SGD, "dampening": 0.0,
                                        "nesterov": False, "weight_decay": 0.0},
                       "adamw": {"type": "torch.optim.AdamW", **ADAMW, "amsgrad": False}},
        "seeds": {"weights": spec.seed, "inputs": INPUT_SEED},
        "inputs": [{"name": n, "shape": list(s), "dtype": tensor_dtype(d), "fp64_dtype":
                    "float64" if d == "float32" else tensor_dtype(d)}
                   for n, s, d in spec.inputs],
        "labels": {"shape": list(spec.label_shape()), "dtype": "int64",
                   "range": [0, spec.classes]},
        "parameters": [n for n, _ in module.named_parameters()],
        "buffers": [n for n, _ in module.named_buffers() if not n.endswith("num_batches_tracked")
                    and n in module.state_dict()],  # not GPT-2's causal mask
        "precisions": ["fp32", "fp64"],
        "files": "<precision>/{inputs/<input>.npy, labels.npy, loss.npy, grads/<param>.npy, "
                 "<opt>/losses.npy [steps], <opt>/params/<param or buffer>.npy}",
        "error_fp32_vs_fp64_def": "||a-b|| / (||b|| + 1e-6*sqrt(n)), a=fp32, b=fp64",
        "error_fp32_vs_fp64_max": dict(groups),
        "error_fp32_vs_fp64": errors,
        "fp32_spread": f"fp32_spread/<rel>.npy: of {PERTURBED_RUNS} more fp32 runs on the "
                       "weights moved by a relative 2^-24 (random signs) and one on "
                       f"{THREADED_RUN_THREADS} threads, the result farthest from fp64 "
                       "where it is farther than fp32/<rel>.npy",
        "error_fp32_spread_vs_fp64": spread_errors,
        "autocast_bf16": "autocast_bf16/<opt>/losses.npy: the same steps with the "
                         "forward and loss under torch.autocast('cpu', torch.bfloat16)",
        "error_autocast_bf16_vs_fp32": autocast_errors,
    }
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(info, f, indent=1, sort_keys=False)
    print(f"wrote {out} (max e(fp32,fp64): {max(errors.values()):.3g})")


def cmd_all(out: str):
    cmd_onnx(out)
    for name in SPECS:
        cmd_reference(name, os.path.join(out, name + ".onnx"), os.path.join(out, name + ".ref"))


def cmd_info(paths):
    for path in paths:
        m = onnx.load(path)
        g = m.graph
        def io(vs):
            return ", ".join(f"{v.name}:{TensorProto.DataType.Name(v.type.tensor_type.elem_type)}"
                             f"{[d.dim_value or d.dim_param for d in v.type.tensor_type.shape.dim]}"
                             for v in vs)
        print(f"{path}: {os.path.getsize(path)} bytes, ir {m.ir_version}, opset "
              f"{[(o.domain or 'ai.onnx', o.version) for o in m.opset_import]}")
        print(f"  inputs  {io(g.input)}\n  outputs {io(g.output)}")
        print(f"  {len(g.initializer)} initializers, {len(g.node)} nodes")
        for op, c in sorted(collections.Counter(n.op_type for n in g.node).items()):
            print(f"    {op:24s} {c}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("onnx", help="export the models to DIR/NAME.onnx")
    p.add_argument("--out", required=True)
    p.add_argument("--only", nargs="+", choices=ALL_MODELS, metavar="NAME")
    p = sub.add_parser("reference", help="write PyTorch's reference results for one model")
    p.add_argument("--model", required=True, choices=list(SPECS))
    p.add_argument("--onnx", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--no-autocast", action="store_true",
                   help="skip the torch.autocast bf16 steps (no test of the model reads them)")
    p = sub.add_parser("all", help="onnx + reference for every model into DIR")
    p.add_argument("--out", required=True)
    p = sub.add_parser("info", help="summarize ONNX files")
    p.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    if a.cmd == "onnx":
        cmd_onnx(a.out, a.only)
    elif a.cmd == "reference":
        cmd_reference(a.model, a.onnx, a.out, autocast_bf16=not a.no_autocast)
    elif a.cmd == "all":
        cmd_all(a.out)
    else:
        cmd_info(a.files)


if __name__ == "__main__":
    main()
