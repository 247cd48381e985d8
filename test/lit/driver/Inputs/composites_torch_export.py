"""Exports a small CNN using torch.cumsum, torch.maximum and torch.minimum
(ONNX CumSum, Max and Min, each with broadcasting) with Debian's torch
1.13, trains it 3 SGD steps in PyTorch and writes composites.onnx, x.npy,
y.npy and torch.txt (the losses) into DIR.

  composites_torch_export.py DIR                 export and train
  composites_torch_export.py DIR --compare F...  each F (trainc train's
                                                 output) against torch.txt
  composites_torch_export.py DIR --runtime-axis F
                                                 writes F: a CumSum whose
                                                 axis is a graph input
"""
import sys

import onnx
from onnx import TensorProto, helper
import torch
import torch.nn as nn

from torch_steps import main


class Composites(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        x = torch.cumsum(x, dim=3) / 4
        h = self.conv(x)
        h = torch.maximum(h, h.mean(dim=1, keepdim=True))
        h = torch.minimum(h, torch.tensor(0.75))
        return self.fc(h.flatten(1))


def build():
    return Composites(), torch.randn(4, 1, 8, 8), torch.randint(0, 10, (4,)), \
        "composites", 13


def runtime_axis(path):
    graph = helper.make_graph(
        [helper.make_node("CumSum", ["x", "axis"], ["y"])], "runtime_axis",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("axis", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              path)


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[2] == "--runtime-axis":
        runtime_axis(sys.argv[3])
    else:
        main(build)
