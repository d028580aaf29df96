"""A small MLP with batch norm whose sizes are build()'s keyword arguments
(`--entry-arg batch=3 --entry-arg hidden=8`): exercises entry arguments,
and save_on_cpu in the eager reference."""
import torch
import torch.nn as nn


def build(batch=5, features=6, hidden=16, classes=3):
    model = nn.Sequential(nn.Linear(features, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                          nn.Linear(hidden, classes))

    def make_batch():
        g = torch.Generator().manual_seed(7)
        return (torch.randn(batch, features, generator=g),
                torch.randint(0, classes, (batch,), generator=g))

    return model, make_batch, nn.CrossEntropyLoss()
