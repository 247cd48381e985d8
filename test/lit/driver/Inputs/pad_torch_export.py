"""Exports a small CNN with padding (F.pad reflect, replicate and constant
with a crop; avg_pool2d(padding=1)) with Debian's torch 1.13, trains it 3
SGD steps in PyTorch and writes pad.onnx, x.npy, y.npy and torch.txt (the
losses) into DIR.

  pad_torch_export.py DIR                   export and train
  pad_torch_export.py DIR --compare F...    each F (trainc train's output)
                                            against torch.txt, relative
                                            error at most 1e-5 per step
"""
import os
import re
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

out = sys.argv[1]


def losses(path):
    return [float(v) for v in re.findall(r"loss ([-0-9.e+]+)", open(path).read())]


if len(sys.argv) > 2 and sys.argv[2] == "--compare":
    expected = losses(os.path.join(out, "torch.txt"))
    for path in sys.argv[3:]:
        got = losses(path)
        assert len(got) == len(expected), (path, got, expected)
        for step, (a, b) in enumerate(zip(got, expected), 1):
            assert abs(a - b) <= 1e-5 * abs(b), f"{path}: step {step}: {a} != torch {b}"
    print(f"{len(sys.argv) - 3} runs of {len(expected)} steps match torch")
    sys.exit(0)


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


os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
model = Padded()
x = torch.randn(4, 1, 8, 8)
y = torch.randint(0, 10, (4,))
torch.onnx.export(model, x, os.path.join(out, "pad.onnx"), opset_version=13,
                  input_names=["image"], output_names=["logits"])
np.save(os.path.join(out, "x.npy"), x.numpy())
np.save(os.path.join(out, "y.npy"), y.numpy())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
with open(os.path.join(out, "torch.txt"), "w") as f:
    for step in range(1, 4):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        f.write(f"step {step}: loss {loss.item():.9g}\n")
