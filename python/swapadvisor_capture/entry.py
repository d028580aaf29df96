"""User entry points and the eager training step.

An entry point is a Python file defining

    def build():
        return model, make_batch, loss_fn

(or a dict with those keys and, optionally, "optimizer": {"name": "adam",
"lr": 1e-3, ...} or a torch.optim.SGD, Adam or AdamW object for the default
optimizer). make_batch() returns
(inputs, target), inputs a tensor or a tuple of tensors; one training step is

    loss = loss_fn(model(*inputs), target); loss.backward(); optimizer.step()

build() is called after torch.manual_seed(seed), so that the capture and the
eager reference build the same model. build() may take keyword arguments
(e.g. build(batch=32, image_size=224)): `--entry-arg KEY=VALUE` on the
command line passes them (parse_entry_args), so one file serves several
sizes without editing it.

Every mistake in an entry point (docs/capture.md, "Mistakes in an entry
point") is a CaptureError naming the entry file, what is wrong and what to
do: wrong types from build() or make_batch(), a loss that is no scalar, an
exception in the user's code (usercode.user_call).
"""

import ast
import contextlib
import importlib.machinery
import importlib.util
import inspect
import os

import torch

from .errors import CaptureError, in_entry
from .optim import SETTINGS, check_config, config_from_torch, make_optimizer
from .usercode import describe, user_call


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
            raise CaptureError(f"--entry-arg {item!r}: expected KEY=VALUE, KEY a Python identifier",
                               entry=False)
        try:
            out[key] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            out[key] = text
    return out


def _check_entry_args(build, args):
    """build() must take every --entry-arg and need no other argument."""
    try:
        sig = inspect.signature(build)
    except (TypeError, ValueError):
        return  # a builtin or C callable: let the call say what is wrong
    params = sig.parameters.values()
    needed = [p.name for p in params if p.default is p.empty and
              p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in args]
    if needed:
        raise CaptureError(f"build() needs the argument(s) {', '.join(needed)}, which have no "
                           f"default; give them with --entry-arg {needed[0]}=VALUE or give "
                           "them defaults")
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    unknown = sorted(set(args) - names)
    if unknown:
        takes = ", ".join(sorted(names)) or "no arguments"
        raise CaptureError(f"build() takes no argument {', '.join(unknown)} "
                           f"(--entry-arg); it takes {takes}")


_KEYS = ("model", "make_batch", "loss_fn", "optimizer")
_FIX_STEP = "fix it so that one plain PyTorch training step runs"


def _check_setup(model, make_batch, loss_fn, optimizer):
    """The types build() returned (docs/capture.md, "Mistakes in an entry
    point"); a torch.optim object becomes the optimizer dict it stands for."""
    import torch.nn as nn
    if isinstance(model, type) and issubclass(model, nn.Module):
        raise CaptureError(f"build()'s model is the class {model.__name__}, not a module; "
                           f"return an instance ({model.__name__}(...))")
    if not isinstance(model, nn.Module):
        raise CaptureError(f"build()'s model is {describe(model)}, not a torch.nn.Module; "
                           "return the model as an nn.Module")
    if isinstance(make_batch, (tuple, list, dict, torch.Tensor)):
        raise CaptureError(f"build()'s make_batch is {describe(make_batch)}, not a function; "
                           "return a function that makes the batch, e.g. "
                           "lambda: (inputs, target)")
    if not callable(make_batch):
        raise CaptureError(f"build()'s make_batch is {describe(make_batch)}, not a function; "
                           "return a function that returns (inputs, target)")
    if isinstance(loss_fn, type):
        raise CaptureError(f"build()'s loss_fn is the class {loss_fn.__name__}; return an "
                           f"instance ({loss_fn.__name__}()) or a function (out, target) -> loss")
    if not callable(loss_fn):
        raise CaptureError(f"build()'s loss_fn is {describe(loss_fn)}, not a function; "
                           "return a function (out, target) -> scalar loss tensor")
    if optimizer is None:
        return {}
    if isinstance(optimizer, torch.optim.Optimizer):
        return config_from_torch(optimizer, model)
    if isinstance(optimizer, type) and issubclass(optimizer, torch.optim.Optimizer):
        raise CaptureError(f"build()'s optimizer is the class {optimizer.__name__}; give a dict "
                           f"such as {{\"name\": \"sgd\", \"lr\": 0.01}} or an instance "
                           f"({optimizer.__name__}(model.parameters(), ...))")
    if not isinstance(optimizer, dict):
        raise CaptureError(f"build()'s optimizer is {describe(optimizer)}; give a dict such as "
                           "{\"name\": \"adam\", \"lr\": 1e-3} or a torch.optim.SGD, Adam or "
                           "AdamW object")
    cfg = dict(optimizer)
    check_config(cfg.pop("name", "sgd"), cfg, "build()'s optimizer")
    return dict(optimizer)


def load_entry(path, seed=0, args=None):
    """Loads the entry point and calls build(**args) after
    torch.manual_seed(seed). Mistakes in the file are CaptureErrors naming
    the entry file (in_entry)."""
    with in_entry(path):
        return _load_entry(path, seed, args)


def _load_entry(path, seed, args):
    if not os.path.exists(path):
        raise CaptureError("no such entry point file; give the Python file that defines build()")
    if os.path.isdir(path):
        raise CaptureError("is a directory; give the Python file that defines build()")
    name = "swapadvisor_entry_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    # A loader by source, whatever the file's name ends with.
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    user_call("importing it", "fix the entry file so that Python can run it",
              loader.exec_module, mod)
    build = getattr(mod, "build", None)
    if build is None:
        raise CaptureError("defines no build(); define build() returning "
                           "(model, make_batch, loss_fn)")
    if not callable(build):
        raise CaptureError(f"build is {describe(build)}, not a function; define build() "
                           "returning (model, make_batch, loss_fn)")
    args = dict(args or {})
    _check_entry_args(build, args)
    torch.manual_seed(seed)
    built = user_call("build()", "fix build() so that it returns (model, make_batch, loss_fn)",
                      build, **args)
    if isinstance(built, dict):
        missing = [k for k in ("model", "make_batch", "loss_fn") if k not in built]
        if missing:
            raise CaptureError(f"build() returned a dict without {', '.join(missing)}; its keys "
                               "are model, make_batch, loss_fn and optionally optimizer")
        unknown = [k for k in built if k not in _KEYS]
        if unknown:
            raise CaptureError(f"build() returned a dict with the unknown key(s) "
                               f"{', '.join(repr(k) for k in unknown)}; its keys are "
                               "model, make_batch, loss_fn and optionally optimizer")
        parts = [built[k] for k in _KEYS[:3]]
        opt = _check_setup(*parts, built.get("optimizer"))
        return Setup(*parts, opt, path)
    if isinstance(built, (tuple, list)) and len(built) == 3:
        return Setup(*built[:3], _check_setup(*built, None), path)
    if isinstance(built, (tuple, list)) and len(built) == 4:
        raise CaptureError(f"build() returned {describe(built)}; it returns (model, make_batch, "
                           "loss_fn), or a dict with those keys and \"optimizer\" to give the "
                           "optimizer")
    raise CaptureError(f"build() returned {describe(built)}; it must return (model, make_batch, "
                       "loss_fn) or a dict with those keys")


def _tensors(v, what):
    is_ = "are" if what == "inputs" else "is"
    if isinstance(v, torch.Tensor):
        return v
    if isinstance(v, dict):
        raise CaptureError(f"make_batch()'s {what} {is_} {describe(v)}; the step calls "
                           "model(*inputs) and loss_fn(out, target): give a tensor or a tuple of "
                           "tensors in the order forward() takes them")
    if not isinstance(v, (tuple, list)):
        raise CaptureError(f"make_batch()'s {what} {is_} {describe(v)}, not a tensor; give a "
                           "tensor or a tuple of tensors (torch.tensor(...) converts)")
    for i, t in enumerate(v):
        if not isinstance(t, torch.Tensor):
            raise CaptureError(f"make_batch()'s {what}[{i}] is {describe(t)}, not a tensor; "
                               "every element must be a tensor (torch.tensor(...) converts)")
    return tuple(v)


def split_batch(batch, device):
    """(inputs, target) of make_batch()'s result on the device: inputs a
    tuple of tensors, target a tensor or a tuple of tensors."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise CaptureError(f"make_batch() returned {describe(batch)}; it must return "
                           "(inputs, target)")
    inputs, target = batch
    if target is None:
        raise CaptureError("make_batch() returned no target (None); the step computes "
                           "loss_fn(model(*inputs), target): return (inputs, target)")
    inputs = _tensors(inputs, "inputs")
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    target = _tensors(target, "target")
    inputs = tuple(t.to(device) for t in inputs)
    if isinstance(target, tuple):
        target = tuple(t.to(device) for t in target)
    else:
        target = target.to(device)
    return inputs, target


def make_batch(setup, device):
    """The batch of the entry point's make_batch() on the device."""
    batch = user_call("make_batch()", "fix make_batch() so that it returns (inputs, target)",
                      setup.make_batch)
    return split_batch(batch, device)


def optimizer_config(setup, name=None, **overrides):
    """The optimizer's name and settings: the entry point's, or `name`
    (--optimizer) without the entry point's settings when it names another;
    overrides (--lr, --momentum, --weight-decay) on top."""
    cfg = dict(setup.optimizer)
    default = cfg.pop("name", "sgd")
    opt_name = name or default
    if opt_name != default:
        cfg = {}  # the entry point's settings are for its own optimizer
    given = {k: v for k, v in overrides.items() if v is not None}
    if opt_name in SETTINGS:
        for k in given:
            if k not in SETTINGS[opt_name]:
                raise CaptureError(f"--{k.replace('_', '-')} does not apply to {opt_name}; "
                                   f"leave it out ({opt_name} takes "
                                   f"{', '.join(SETTINGS[opt_name])})", entry=False)
    cfg.update(given)
    return opt_name, cfg


def prepare(setup, device, opt_name, opt_cfg):
    """Model on the device in training mode, the batch, and the optimizer
    with its state created."""
    model = setup.model.to(device)
    model.train()
    inputs, target = make_batch(setup, device)
    if not any(True for _ in model.parameters()):
        raise CaptureError("the model has no parameters; there is nothing to train")
    opt = make_optimizer(opt_name, model.parameters(), **opt_cfg)
    opt.zero_grad(set_to_none=True)
    return model, inputs, target, opt


def check_loss(loss, needs_grad=True):
    """loss_fn's result must be a one-element floating-point tensor that
    depends on the parameters: what loss.backward() needs (needs_grad
    False: an evaluation step's, under no_grad)."""
    if not isinstance(loss, torch.Tensor):
        raise CaptureError(f"loss_fn returned {describe(loss)}, not a tensor; return the loss "
                           "as a one-element floating-point tensor")
    if loss.numel() != 1:
        raise CaptureError(f"loss_fn returned {describe(loss)}, not one element; reduce it to "
                           "a scalar (e.g. .mean(), or the loss module's reduction='mean')")
    if not loss.dtype.is_floating_point:
        raise CaptureError(f"loss_fn returned {describe(loss)}; the loss must be a "
                           "floating-point tensor")
    if needs_grad and not loss.requires_grad:
        raise CaptureError("loss_fn returned a loss that does not require grad (computed under "
                           "torch.no_grad(), detached, or from no trainable parameter); "
                           "compute it from the model's output")


def forward_loss(model, inputs, target, loss_fn, needs_grad=True):
    """loss_fn(model(*inputs), target), checked (check_loss); an exception
    in the user's code becomes a CaptureError naming it."""
    out = user_call("the model's forward", _FIX_STEP, model, *inputs, model=model)
    loss = user_call("loss_fn", _FIX_STEP, loss_fn, out, target, model=model)
    check_loss(loss, needs_grad)
    return loss


def backward(loss, model):
    user_call("the backward pass", _FIX_STEP, loss.backward, model=model)


AUTOCAST_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def autocast_context(device_type, autocast):
    """The forward pass's context: torch.autocast with the low-precision type
    of autocast ("bf16" or "fp16"), or nothing when autocast is None. On the
    CPU, PyTorch before 2.3 autocasts to bfloat16 only."""
    if autocast is None:
        return contextlib.nullcontext()
    if autocast not in AUTOCAST_DTYPES:
        raise CaptureError(f"unknown autocast type {autocast!r} (use bf16 or fp16)", entry=False)
    dtype = getattr(torch, AUTOCAST_DTYPES[autocast])
    if device_type == "cpu" and dtype != torch.bfloat16 and not (
            hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler")):
        # torch 1.13 only warns and runs without autocast.
        raise CaptureError(f"autocast on the CPU supports bf16 only in torch {torch.__version__} "
                           "(fp16 from torch 2.3); use --autocast bf16", entry=False)
    return torch.autocast(device_type=device_type, dtype=dtype)


def train_step(model, inputs, target, loss_fn, opt, on_phase=None, autocast=None):
    """One eager training iteration; returns the loss tensor. autocast: "bf16"
    or "fp16" runs the forward pass and the loss under torch.autocast (the
    backward follows the types autocast chose, as in PyTorch's recipe)."""
    if on_phase:
        on_phase("forward")
    device_type = inputs[0].device.type if inputs else "cpu"
    with autocast_context(device_type, autocast):
        loss = forward_loss(model, inputs, target, loss_fn)
    if on_phase:
        on_phase("backward")
    backward(loss, model)
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
