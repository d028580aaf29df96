"""An MLP with batch norm: Linear, BatchNorm1d, ReLU(inplace=True) per
layer. The capture marks each training batch norm recompute_skips_updates
(its output does not depend on the running statistics it updates), so a
plan may drop a batch norm's output and run it again from the linear
layer's output, without counting the batch twice in the running statistics
(Note [Recompute without updates]), and replay the relu_ after it."""
import torch
import torch.nn as nn


class BatchNormMLP(nn.Module):
    def __init__(self, width=256, depth=5):
        super().__init__()
        self.inp = nn.Linear(32, width)
        self.layers = nn.ModuleList(
            nn.Sequential(nn.Linear(width, width), nn.BatchNorm1d(width), nn.ReLU(inplace=True))
            for _ in range(depth))
        self.out = nn.Linear(width, 10)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        for layer in self.layers:
            h = layer(h)
        return self.out(h)


def build():
    def make_batch():
        g = torch.Generator().manual_seed(13)
        return torch.randn(512, 32, generator=g), torch.randint(0, 10, (512,), generator=g)

    return BatchNormMLP(), make_batch, nn.CrossEntropyLoss()
