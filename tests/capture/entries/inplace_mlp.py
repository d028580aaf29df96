"""An MLP with ReLU(inplace=True): aten::relu_ updates each linear layer's
output in place, so a plan that recomputes a linear layer replays the relu_
after it (Note [Update replay]). Wide enough that its activations dominate
its parameters."""
import torch
import torch.nn as nn


class InplaceMLP(nn.Module):
    def __init__(self, width=256, depth=6):
        super().__init__()
        self.inp = nn.Linear(32, width)
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.act = nn.ReLU(inplace=True)
        self.out = nn.Linear(width, 10)

    def forward(self, x):
        h = self.act(self.inp(x))
        for layer in self.layers:
            h = self.act(layer(h))
        return self.out(h)


def build():
    def make_batch():
        g = torch.Generator().manual_seed(11)
        return torch.randn(512, 32, generator=g), torch.randint(0, 10, (512,), generator=g)

    return InplaceMLP(), make_batch, nn.CrossEntropyLoss()
