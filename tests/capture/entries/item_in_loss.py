"""A loss that reads a tensor value into Python and branches on it: not
representable (the capture must name aten::_local_scalar_dense)."""
import torch
import torch.nn as nn


def build():
    model = nn.Linear(4, 2)

    def loss_fn(out, target):
        loss = ((out - target) ** 2).mean()
        if loss.item() > 100:  # data-dependent control flow
            loss = loss * 0.5
        return loss

    return model, lambda: (torch.ones(3, 4), torch.zeros(3, 2)), loss_fn
