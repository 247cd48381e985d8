"""Exports a small window-attention model in the style of torchvision's
Swin and MaxViT with Debian's torch 1.13: attention written with
torch.einsum ("bhid,bhjd->bhij", "bhij,bhjd->bhid"), the window padding
computed with % from shapes (ONNX Mod), and a shifted-window mask built by
slice assignment on a zero tensor (ONNX ScatterND), all of which the
importer evaluates or rewrites. Trains it 3 SGD steps in PyTorch and writes
attention.onnx, x.npy, y.npy and torch.txt into DIR.

  attention_torch_export.py DIR                   export and train
  attention_torch_export.py DIR --compare F...    trainc's runs against it
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_steps import main


class WindowAttention(nn.Module):
    def __init__(self, dim=8, heads=2, window=4, classes=10):
        super().__init__()
        self.heads, self.window = heads, window
        self.embed = nn.Conv2d(1, dim, 2, stride=2)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, image):
        x = self.embed(image).permute(0, 2, 3, 1)  # N, H, W, C
        n, h, w, c = x.shape
        ws = self.window
        pad_h, pad_w = (ws - h % ws) % ws, (ws - w % ws) % ws
        x = F.pad(x, (0, 0, 0, pad_w, 0, pad_h))
        hp, wp = h + pad_h, w + pad_w
        # The shifted-window mask: regions numbered by slice assignment.
        mask = x.new_zeros((hp, wp))
        count = 0
        for hs in (slice(0, -ws), slice(-ws, -2), slice(-2, None)):
            for wsl in (slice(0, -ws), slice(-ws, -2), slice(-2, None)):
                mask[hs, wsl] = count
                count += 1
        mask = mask.view(hp // ws, ws, wp // ws, ws).permute(0, 2, 1, 3).reshape(-1, ws * ws)
        mask = mask.unsqueeze(1) - mask.unsqueeze(2)
        mask = mask.masked_fill(mask != 0, -100.0)
        windows = x.view(n, hp // ws, ws, wp // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        windows = windows.reshape(-1, ws * ws, c)
        q, k, v = self.qkv(windows).reshape(windows.shape[0], ws * ws, 3, self.heads,
                                            c // self.heads).permute(2, 0, 3, 1, 4)
        scores = torch.einsum("bhid,bhjd->bhij", q, k) / (c // self.heads) ** 0.5
        scores = scores.view(n, -1, self.heads, ws * ws, ws * ws) + mask.unsqueeze(1)
        attn = scores.view(-1, self.heads, ws * ws, ws * ws).softmax(-1)
        out = torch.einsum("bhij,bhjd->bhid", attn, v).transpose(1, 2).reshape(-1, ws * ws, c)
        out = self.proj(out)
        return self.head(out.reshape(n, -1, c).mean(1))


def build():
    model = WindowAttention()
    return model, torch.randn(2, 1, 12, 12), torch.randint(0, 10, (2,)), "attention", 17


if __name__ == "__main__":
    main(build)
