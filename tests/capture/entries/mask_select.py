"""Boolean-mask indexing: the output's shape depends on the data (the
capture must name aten::nonzero or aten::index)."""
import torch
import torch.nn as nn


def build():
    model = nn.Linear(4, 2)

    def loss_fn(out, target):
        return out[target > 0].sum()

    return model, lambda: (torch.ones(3, 4), torch.tensor([[1.0, -1.0]] * 3)), loss_fn
