"""Exports a small CNN with the ops of issue 22's second batch as Debian's
torch 1.13 writes them: InstanceNorm2d (InstanceNormalization), GroupNorm
(Reshape, InstanceNormalization, Reshape, Mul, Add), softplus, sin, cos,
amin (ReduceMin) and a norm over rows (ReduceL2); trains it 3 SGD
steps in PyTorch and writes norms.onnx, x.npy, y.npy and torch.txt.

  norm_torch_export.py DIR                   export and train
  norm_torch_export.py DIR --compare F...    each F (trainc train's output)
                                             against torch.txt
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_steps import main


class Normed(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.instance = nn.InstanceNorm2d(8, affine=True)
        self.group = nn.GroupNorm(2, 8)
        self.fc = nn.Linear(8 * 6 * 6 + 8 + 8 * 6, 10)

    def forward(self, x):
        x = F.softplus(self.instance(self.conv(x)))
        x = self.group(x)
        waves = torch.sin(x) * torch.cos(0.5 * x)
        lowest = x.amin(dim=(2, 3))
        # Softplus keeps every row away from a zero norm.
        norm = F.softplus(x).norm(p=2, dim=3)
        return self.fc(torch.cat([waves.flatten(1), lowest, 0.1 * norm.flatten(1)], 1))


def build():
    model = Normed()
    # Affine parameters away from their initial 1 and 0, so that their
    # gradients and the per-channel broadcast are exercised.
    with torch.no_grad():
        for norm in (model.instance, model.group):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    return model, torch.randn(4, 1, 6, 6), torch.randint(0, 10, (4,)), "norms", 13


if __name__ == "__main__":
    main(build)
