"""Exports a small encoder-decoder with nn.ConvTranspose2d (stride 2,
padding, output_padding, groups, bias; and a 1x1 one without bias) with
Debian's torch 1.13, trains it 3 SGD steps in PyTorch and writes
conv_transpose.onnx, x.npy, y.npy and torch.txt (the losses) into DIR.

  conv_transpose_torch_export.py DIR                 export and train
  conv_transpose_torch_export.py DIR --compare F...  each F (trainc train's
                                                     output) against torch.txt
  conv_transpose_torch_export.py DIR --invalid       writes ConvTranspose
                                                     models trainc refuses,
                                                     and valid.onnx (also
                                                     fuzz seeds)
"""
import os
import sys

import onnx
from onnx import TensorProto, helper
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_steps import main


class EncoderDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(1, 4, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1,
                                     output_padding=1, groups=2)
        self.mix = nn.ConvTranspose2d(4, 2, 1, bias=False)
        self.fc = nn.Linear(2 * 8 * 8, 10)

    def forward(self, x):
        h = F.relu(self.down(x))
        h = F.relu(self.up(h))
        return self.fc(self.mix(h).flatten(1))


def build():
    return EncoderDecoder(), torch.randn(4, 1, 8, 8), \
        torch.randint(0, 10, (4,)), "conv_transpose", 13


def invalid(out):
    """One ConvTranspose each of x [1, 2, 3, 3] and w [2, 2, 3, 3], and
    one whose weight expects 3 input channels."""
    cases = {
        "valid": {"strides": [2, 2], "pads": [1, 0, 0, 1],
                  "output_padding": [1, 0], "dilations": [1, 2]},
        "output_padding": {"strides": [2, 2], "output_padding": [2, 0]},
        "unreachable": {"strides": [2, 2], "output_shape": [9, 7]},
        "kernel_shape": {"kernel_shape": [2, 2]},
        "huge_stride": {"strides": [1 << 40, 1]},
        "group": {"group": 4},
    }
    for name, attributes in cases.items():
        graph = helper.make_graph(
            [helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attributes)],
            name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3]),
                   helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 2, 3, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        onnx.save(model, os.path.join(out, name + ".onnx"))
    del graph.node[0].attribute[:]
    graph.input[1].type.tensor_type.shape.dim[0].dim_value = 3
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              os.path.join(out, "channels.onnx"))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "--invalid":
        os.makedirs(sys.argv[1], exist_ok=True)
        invalid(sys.argv[1])
    else:
        main(build)
