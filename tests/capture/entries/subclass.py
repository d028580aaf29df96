"""A tensor subclass with its own __torch_dispatch__ in the model: not
representable (the capture must say so and name the op)."""
import torch
import torch.nn as nn


class Wrapped(torch.Tensor):
    @staticmethod
    def __new__(cls, elem):
        return torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype,
                                                   device=elem.device)

    def __init__(self, elem):
        self.elem = elem

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(x):
            return x.elem if isinstance(x, Wrapped) else x
        return func(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in (kwargs or {}).items()})


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x):
        return self.lin(Wrapped(x))


def build():
    return M(), lambda: (torch.ones(3, 4), torch.zeros(3, 2)), nn.MSELoss()
