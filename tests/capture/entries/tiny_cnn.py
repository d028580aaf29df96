"""A tiny CNN (conv, batch norm, ReLU, max pool, a residual add, adaptive
pooling, linear): the committed test capture of the ATen kernels
(tests/data/capture/), small enough to keep in the repository."""
import torch
import torch.nn as nn


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.pool(y + self.conv2(y))
        y = nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)
        return self.head(y)


def build():
    def make_batch():
        g = torch.Generator().manual_seed(3)
        return torch.randn(2, 3, 8, 8, generator=g), torch.randint(0, 4, (2,), generator=g)

    return TinyCNN(), make_batch, nn.CrossEntropyLoss()
