"""A tiny MLP with a constant made in Python (torch.tensor) and a buffer that
changes every step: exercises constants, buffers and Python scalars."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.steps.add_(1)
        scale = torch.tensor(0.5)
        return self.fc2(F.gelu(self.fc1(x)) * scale + 1.0)


def build():
    def make_batch():
        g = torch.Generator().manual_seed(7)
        return torch.randn(5, 6, generator=g), torch.randint(0, 3, (5,), generator=g)

    return MLP(), make_batch, nn.CrossEntropyLoss()
