"""The eager reference: the entry point trained by plain PyTorch, and the
comparison of two sets of final values."""

import math

import torch

from .capture import read_json_gz
from .encode import dtype_from_name
from .entry import load_entry, named_state, optimizer_config, prepare, train_step
from .errors import CaptureError
from .values import as_tensor, read_values


def eager_train(entry, iterations, optimizer=None, lr=None, momentum=None, weight_decay=None,
                device="cpu", seed=0, initial=None, graph=None):
    """Trains the entry point for `iterations` steps, gradients set to None
    before each. initial/graph: a values file and its graph, whose values
    (matched by name) are loaded first and must equal what build() made.
    Returns (losses, {name: tensor}) of the final state."""
    setup = load_entry(entry, seed=seed)
    opt_name, cfg = optimizer_config(setup, optimizer, lr=lr, momentum=momentum,
                                     weight_decay=weight_decay)
    dev = torch.device(device)
    model, inputs, target, opt = prepare(setup, dev, opt_name, cfg)
    state = {n: t for n, t, _ in named_state(model, opt)}
    if initial is not None:
        _, vals = read_values(initial)
        g = read_json_gz(graph)
        for t in g["tensors"]:
            if t["id"] in vals and t.get("name") in state:
                dst = state[t["name"]]
                src = as_tensor(vals[t["id"]]).view(dst.dtype).view(dst.shape)
                if not torch.equal(src, dst.detach().cpu()):
                    raise CaptureError(f"initial value of {t['name']} differs from what build() "
                                       "made (is build() deterministic under torch.manual_seed?)")
    losses = []
    for _ in range(iterations):
        opt.zero_grad(set_to_none=True)
        loss = train_step(model, inputs, target, setup.loss_fn, opt)
        losses.append(float(loss.detach().float().cpu()))
    return losses, {n: t.detach().cpu().clone() for n, t in state.items()}


def tensors_by_name(values_path, graph_path):
    """{name: CPU tensor} of a values file, viewed with the graph's dtype and
    shape."""
    g = read_json_gz(graph_path)
    _, vals = read_values(values_path)
    out = {}
    for t in g["tensors"]:
        if t["id"] in vals and "name" in t:
            x = as_tensor(vals[t["id"]])
            if "dtype" in t:
                x = x.view(dtype_from_name(t["dtype"]))
                if "shape" in t and x.numel() == math.prod(t["shape"]):
                    x = x.view(t["shape"])
            out[t["name"]] = x
    return out


def rel_error(a, b):
    """max |a - b| / max |b| (0 when equal; inf when b is all zero and a is not)."""
    if a.shape != b.shape and a.numel() == b.numel():
        a = a.reshape(b.shape)
    if not a.dtype.is_floating_point:
        return 0.0 if torch.equal(a, b) else math.inf
    a, b = a.double(), b.double()
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))  # equal infinities count as equal
    if bool(same.all()):
        return 0.0
    if not bool(torch.isfinite(a[~same]).all() and torch.isfinite(b[~same]).all()):
        return math.inf
    diff = (a - b)[~same].abs().max().item()
    finite_b = b[torch.isfinite(b)]
    scale = finite_b.abs().max().item() if finite_b.numel() else 0.0
    return diff / scale if scale > 0 else math.inf
