"""Writes ONNX GroupNormalization models (no exporter of Debian's torch 1.13
emits the op) into DIR: DIR/gn18 and DIR/gn21 hold group_norm.onnx,
x.npy, y.npy and torch.txt, the losses of the same model trained 3 SGD
steps in PyTorch (F.group_norm, then a Gemm to 10 classes); opset 18
scales and shifts per group, opset 21 per channel. DIR also gets models
that cannot be imported.

  group_norm_models.py DIR
  group_norm_models.py DIR --compare F...   (run in DIR/gnNN, torch_steps)
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

from torch_steps import compare

N, C, G, H, W = 4, 6, 3, 3, 3


def model(path, opset, scale, bias, weight, fc_bias, groups=G, shape=(N, C, H, W)):
    x = helper.make_tensor_value_info("image", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(scale, "gn.weight"),
             numpy_helper.from_array(bias, "gn.bias"),
             numpy_helper.from_array(weight, "fc.weight"),
             numpy_helper.from_array(fc_bias, "fc.bias")]
    nodes = [helper.make_node("GroupNormalization", ["image", "gn.weight", "gn.bias"],
                              ["normed"], num_groups=groups, epsilon=1e-5),
             helper.make_node("Flatten", ["normed"], ["flat"]),
             helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"],
                              transB=1)]
    graph = helper.make_graph(nodes, "group_norm", [x], [y], inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    with open(path, "wb") as f:
        f.write(onnx_model.SerializeToString())


def export_and_train(out, opset):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(opset)
    affine = G if opset < 21 else C
    scale = torch.empty(affine).uniform_(0.5, 1.5).requires_grad_()
    bias = torch.empty(affine).uniform_(-0.5, 0.5).requires_grad_()
    weight = (0.1 * torch.randn(10, C * H * W)).requires_grad_()
    fc_bias = torch.zeros(10).requires_grad_()
    x, y = torch.randn(N, C, H, W), torch.randint(0, 10, (N,))
    model(os.path.join(out, "group_norm.onnx"), opset,
          *(t.detach().numpy().copy() for t in (scale, bias, weight, fc_bias)))
    np.save(os.path.join(out, "x.npy"), x.numpy())
    np.save(os.path.join(out, "y.npy"), y.numpy())
    params = [scale, bias, weight, fc_bias]
    optimizer = torch.optim.SGD(params, lr=0.1)
    with open(os.path.join(out, "torch.txt"), "w") as f:
        for step in range(1, 4):
            optimizer.zero_grad()
            s, b = scale, bias
            if opset < 21:  # one value per group, repeated over its channels
                s, b = s.repeat_interleave(C // G), b.repeat_interleave(C // G)
            normed = F.group_norm(x, G, s, b, eps=1e-5)
            loss = F.cross_entropy(F.linear(normed.flatten(1), weight, fc_bias), y)
            loss.backward()
            optimizer.step()
            f.write(f"step {step}: loss {loss.item():.9g}\n")


out = sys.argv[1]
if len(sys.argv) > 2 and sys.argv[2] == "--compare":
    compare(out, sys.argv[3:])
    sys.exit(0)
export_and_train(os.path.join(out, "gn18"), 18)
export_and_train(os.path.join(out, "gn21"), 21)
zeros = lambda *s: np.zeros(s, np.float32)
model(os.path.join(out, "bad_groups.onnx"), 18, zeros(4), zeros(4), zeros(10, C * H * W),
      zeros(10), groups=4)
model(os.path.join(out, "bad_scale.onnx"), 21, zeros(G), zeros(G), zeros(10, C * H * W),
      zeros(10))
