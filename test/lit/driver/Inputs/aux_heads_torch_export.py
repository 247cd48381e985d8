"""Exports a small CNN with two auxiliary classifiers, as GoogLeNet and
Inception-v3 have them (three outputs: the logits, then aux1 and aux2,
each a head of its own on an intermediate feature map); trains it 3 SGD
steps in PyTorch on the weighted sum of the three losses (1, 0.3, 0.3,
GoogLeNet's weights) and writes aux_heads.onnx, x.npy, y.npy and torch.txt.

  aux_heads_torch_export.py DIR                   export and train
  aux_heads_torch_export.py DIR --compare F...    each F (trainc train's
                                                  output) against torch.txt
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_steps import main


class Head(nn.Module):
    """An auxiliary classifier: pool, 1x1 convolution, linear."""

    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, 4, 1)
        self.fc = nn.Linear(4 * 2 * 2, 10)

    def forward(self, x):
        x = F.relu(self.conv(F.adaptive_avg_pool2d(x, 2)))
        return self.fc(x.flatten(1))


class AuxHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3, padding=1)
        self.conv2 = nn.Conv2d(6, 8, 3, padding=1)
        self.aux1 = Head(6)
        self.aux2 = Head(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        a = F.relu(self.conv1(x))
        b = F.relu(self.conv2(F.max_pool2d(a, 2)))
        return self.fc(b.mean(dim=(2, 3))), self.aux1(a), self.aux2(b)


def build():
    return (AuxHeads(), torch.randn(4, 1, 28, 28), torch.randint(0, 10, (4,)), "aux_heads",
            13, [1.0, 0.3, 0.3])


if __name__ == "__main__":
    main(build)
