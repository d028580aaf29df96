"""An MLP that draws random numbers three ways: nn.Dropout (on the CPU
empty_like, an in-place bernoulli_, div_ and mul), native_dropout (the one
op CUDA's dropout lowers to: output and mask) and randn_like noise. The
capture must mark exactly those ops random (tests/capture/test_recompute.py)."""
import torch
import torch.nn as nn


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        h = self.drop(torch.relu(self.fc1(x)))
        h = torch.native_dropout(h, 0.25, self.training)[0]
        return self.fc2(h + 0.01 * torch.randn_like(h))


def build():
    def make_batch():
        g = torch.Generator().manual_seed(7)
        return torch.randn(5, 6, generator=g), torch.randint(0, 3, (5,), generator=g)

    return Noisy(), make_batch, nn.CrossEntropyLoss()
