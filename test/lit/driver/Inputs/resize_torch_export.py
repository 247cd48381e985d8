"""Exports a small CNN with F.interpolate (nearest by a scale, bilinear to
a size, bicubic with align_corners) with Debian's torch 1.13, trains it 3
SGD steps in PyTorch and writes resize.onnx, x.npy, y.npy and torch.txt
(the losses) into DIR.

  resize_torch_export.py DIR                 export and train
  resize_torch_export.py DIR --compare F...  each F (trainc train's output)
                                             against torch.txt
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_steps import main


class Resized(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, stride=2, padding=1)
        self.fc = nn.Linear(4 * 9 * 7, 10)

    def forward(self, x):
        h = F.relu(self.conv1(x))
        h = F.interpolate(h, scale_factor=2, mode="nearest")
        h = self.conv2(h)
        h = F.interpolate(h, size=(6, 5), mode="bilinear", align_corners=False)
        h = F.interpolate(h, size=(9, 7), mode="bicubic", align_corners=True)
        return self.fc(h.flatten(1))


def build():
    return Resized(), torch.randn(4, 1, 8, 8), torch.randint(0, 10, (4,)), \
        "resize", 13


if __name__ == "__main__":
    main(build)
