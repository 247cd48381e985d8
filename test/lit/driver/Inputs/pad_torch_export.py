"""Exports a small CNN with padding (F.pad reflect, replicate and constant
with a crop; avg_pool2d(padding=1)) with Debian's torch 1.13, trains it 3
SGD steps in PyTorch and writes pad.onnx, x.npy, y.npy and torch.txt (the
losses) into DIR.

  pad_torch_export.py DIR                   export and train
  pad_torch_export.py DIR --compare F...    each F (trainc train's output)
                                            against torch.txt, relative
                                            error at most 1e-5 per step
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_steps import main


class Padded(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 8 * 9, 10)

    def forward(self, x):
        x = F.pad(x, (1, 1, 2, 0), mode="reflect")
        x = F.avg_pool2d(x, 3, stride=1, padding=1)
        x = F.relu(self.conv(F.pad(x, (1, 1, 0, 0), mode="replicate")))
        x = F.pad(x, (0, -1, 1, -1), value=0.5)
        return self.fc(x.flatten(1))


def build():
    model = Padded()
    return model, torch.randn(4, 1, 8, 8), torch.randint(0, 10, (4,)), "pad", 13


if __name__ == "__main__":
    main(build)
