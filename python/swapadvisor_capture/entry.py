"""User entry points and the eager training step.

An entry point is a Python file defining

    def build():
        return model, make_batch, loss_fn

(or a dict with those keys and, optionally, "optimizer": {"name": "adam",
"lr": 1e-3, ...} for the default optimizer). make_batch() returns
(inputs, target), inputs a tensor or a tuple of tensors; one training step is

    loss = loss_fn(model(*inputs), target); loss.backward(); optimizer.step()

build() is called after torch.manual_seed(seed), so that the capture and the
eager reference build the same model. build() may take keyword arguments
(e.g. build(batch=32, image_size=224)): `--entry-arg KEY=VALUE` on the
command line passes them (parse_entry_args), so one file serves several
sizes without editing it.
"""

import ast
import contextlib
import importlib.util
import inspect
import os

import torch

from .errors import CaptureError
from .optim import make_optimizer


class Setup:
    def __init__(self, model, make_batch, loss_fn, optimizer=None, path=""):
        self.model = model
        self.make_batch = make_batch
        self.loss_fn = loss_fn
        self.optimizer = dict(optimizer or {})
        self.path = path


def parse_entry_args(items):
    """{"batch": 4, ...} from ["batch=4", ...]: each KEY=VALUE, VALUE a Python
    literal (4, 0.5, True, None, "x", (1, 2)) or else the string as it is."""
    out = {}
    for item in items or ():
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise CaptureError(f"--entry-arg {item!r}: expected KEY=VALUE, KEY a Python identifier")
        try:
            out[key] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            out[key] = text
    return out


def _check_entry_args(path, build, args):
    try:
        sig = inspect.signature(build)
    except (TypeError, ValueError):
        return  # a builtin or C callable: let the call say what is wrong
    params = sig.parameters.values()
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    unknown = sorted(set(args) - names)
    if unknown:
        takes = ", ".join(sorted(names)) or "no arguments"
        raise CaptureError(f"{path}: build() takes no argument {', '.join(unknown)} "
                           f"(--entry-arg; it takes {takes})")


def load_entry(path, seed=0, args=None):
    """Loads the entry point and calls build(**args) after
    torch.manual_seed(seed)."""
    if not os.path.exists(path):
        raise CaptureError(f"{path}: no such entry point file")
    name = "swapadvisor_entry_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not hasattr(mod, "build"):
        raise CaptureError(f"{path}: defines no build() (it must return model, make_batch, loss_fn)")
    args = dict(args or {})
    if args:
        _check_entry_args(path, mod.build, args)
    torch.manual_seed(seed)
    built = mod.build(**args)
    if isinstance(built, dict):
        missing = [k for k in ("model", "make_batch", "loss_fn") if k not in built]
        if missing:
            raise CaptureError(f"{path}: build() returned a dict without {', '.join(missing)}")
        return Setup(built["model"], built["make_batch"], built["loss_fn"],
                     built.get("optimizer"), path)
    if not isinstance(built, (tuple, list)) or len(built) != 3:
        raise CaptureError(f"{path}: build() must return (model, make_batch, loss_fn) or a dict")
    return Setup(*built, path=path)


def split_batch(batch, device):
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise CaptureError("make_batch() must return (inputs, target)")
    inputs, target = batch
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    inputs = tuple(t.to(device) for t in inputs)
    if isinstance(target, (tuple, list)):
        target = tuple(t.to(device) for t in target)
    else:
        target = target.to(device)
    return inputs, target


def optimizer_config(setup, name=None, **overrides):
    cfg = dict(setup.optimizer)
    default = cfg.pop("name", "sgd")
    opt_name = name or default
    if opt_name != default:
        cfg = {}  # the entry point's settings are for its own optimizer
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    return opt_name, cfg


def prepare(setup, device, opt_name, opt_cfg):
    """Model on the device in training mode, the batch, and the optimizer
    with its state created."""
    model = setup.model.to(device)
    model.train()
    inputs, target = split_batch(setup.make_batch(), device)
    opt = make_optimizer(opt_name, model.parameters(), **opt_cfg)
    opt.zero_grad(set_to_none=True)
    return model, inputs, target, opt


AUTOCAST_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def autocast_context(device_type, autocast):
    """The forward pass's context: torch.autocast with the low-precision type
    of autocast ("bf16" or "fp16"), or nothing when autocast is None. On the
    CPU, PyTorch 1.13 autocasts to bfloat16 only."""
    if autocast is None:
        return contextlib.nullcontext()
    if autocast not in AUTOCAST_DTYPES:
        raise CaptureError(f"unknown autocast type {autocast!r} (use bf16 or fp16)")
    dtype = getattr(torch, AUTOCAST_DTYPES[autocast])
    if device_type == "cpu" and dtype != torch.bfloat16:
        raise CaptureError("autocast on the CPU supports bf16 only")
    return torch.autocast(device_type=device_type, dtype=dtype)


def train_step(model, inputs, target, loss_fn, opt, on_phase=None, autocast=None):
    """One eager training iteration; returns the loss tensor. autocast: "bf16"
    or "fp16" runs the forward pass and the loss under torch.autocast (the
    backward follows the types autocast chose, as in PyTorch's recipe)."""
    if on_phase:
        on_phase("forward")
    device_type = inputs[0].device.type if inputs else "cpu"
    with autocast_context(device_type, autocast):
        loss = loss_fn(model(*inputs), target)
    if on_phase:
        on_phase("backward")
    loss.backward()
    if on_phase:
        on_phase("update")
    opt.step()
    return loss


def named_state(model, opt):
    """(name, tensor, kind) for every parameter, buffer and optimizer state
    tensor; names are state_dict keys ("layer1.0.conv1.weight") and, for
    optimizer state, the parameter's key and the state's
    ("layer1.0.conv1.weight.momentum_buffer")."""
    out = []
    param_ids = {id(p) for p in model.parameters()}
    pname = {}
    for k, v in model.state_dict(keep_vars=True).items():
        kind = "param" if id(v) in param_ids else "buffer"
        out.append((k, v, kind))
        if kind == "param":
            pname.setdefault(id(v), k)
    for k, v in model.named_buffers():
        out.append((k, v, "buffer"))  # non-persistent buffers; duplicates are merged later
    for p, st in opt.state.items():
        base = pname.get(id(p), f"param@{id(p):x}")
        for k, v in st.items():
            if isinstance(v, torch.Tensor):
                out.append((f"{base}.{k}", v, "optimizer_state"))
    return out
