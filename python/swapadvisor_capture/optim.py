"""Optimizers whose step is a fixed sequence of tensor ops, so that one
captured step can be replayed for every iteration.

* SGD (with momentum): torch.optim.SGD with foreach=False (one op per
  parameter, no multi-tensor kernels) and the momentum buffers created as
  zeros before the first step. torch creates them on the first step as a copy
  of the gradient; momentum * 0 + grad is bit-for-bit that copy, so the
  captured step is the steady-state step and the first iteration is exact.

* Adam: torch.optim.Adam reads its step counter into Python (`.item()`) and
  bakes the bias corrections into the ops as Python floats, different every
  iteration; a replay of one captured step would reuse the first iteration's.
  TensorAdam computes the same update with the step counter as a tensor,
  exactly as torch.optim.Adam(capturable=True) does on CUDA (torch 2.x), but
  on any device. The eager reference runs TensorAdam too.

* AdamW: torch.optim.AdamW(capturable=True) is that Adam with the weight
  decay applied to the parameter (p.mul_(1 - lr * weight_decay), a constant
  while lr is) instead of to the gradient: TensorAdam(decoupled=True).

An entry point names its optimizer with a dict ({"name": "adam", "lr": 1e-3})
or gives a torch.optim.SGD, Adam or AdamW object (config_from_torch), whose
settings are taken when these optimizers compute exactly its step; any other
optimizer or setting is an error naming it, never silently dropped.
"""

import math

import torch

from .errors import CaptureError


def _zeros_state(p):
    return torch.zeros_like(p, memory_format=torch.preserve_format)


class TensorAdam(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 decoupled=False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)
        self.decoupled = decoupled  # AdamW: decay the parameter, not the gradient
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state[p]
                st["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
                st["exp_avg"] = _zeros_state(p)
                st["exp_avg_sq"] = _zeros_state(p)

    @torch.no_grad()
    def step(self, closure=None):
        assert closure is None, "TensorAdam.step takes no closure"
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                st = self.state[p]
                step_t, exp_avg, exp_avg_sq = st["step"], st["exp_avg"], st["exp_avg_sq"]
                step_t.add_(1)
                if self.decoupled:
                    p.mul_(1 - lr * wd)  # torch.optim.AdamW's, even when wd is 0
                elif wd != 0:
                    grad = grad.add(p, alpha=wd)
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                # torch.optim.Adam's capturable formulation
                bias_correction1 = 1 - torch.pow(beta1, step_t)
                bias_correction2 = 1 - torch.pow(beta2, step_t)
                step_size = lr / bias_correction1
                step_size_neg = step_size.neg()
                bias_correction2_sqrt = bias_correction2.sqrt()
                denom = (exp_avg_sq.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(
                    eps / step_size_neg)
                p.addcdiv_(exp_avg, denom)


DEFAULTS = {
    "sgd": dict(lr=0.01, momentum=0.9, weight_decay=0.0),
    "adam": dict(lr=1e-3, weight_decay=0.0),
    "adamw": dict(lr=1e-3, weight_decay=1e-2),  # torch.optim.AdamW's
}

# The settings each optimizer takes (an entry point's optimizer dict, the
# command line's --lr, --momentum, --weight-decay).
SETTINGS = {
    "sgd": ("lr", "momentum", "weight_decay"),
    "adam": ("lr", "betas", "eps", "weight_decay"),
    "adamw": ("lr", "betas", "eps", "weight_decay"),
}
NAMES = tuple(SETTINGS)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_config(name, cfg, what="the optimizer"):
    """Checks an optimizer's name and settings ({"lr": 0.1, ...}); a
    CaptureError names the first that is wrong and what to do."""
    if not isinstance(name, str) or name not in SETTINGS:
        hint = f" (names are lower case: {str(name).lower()!r})" if str(name).lower() in SETTINGS \
            else ""
        raise CaptureError(f"{what}: unknown optimizer name {name!r}{hint}; use one of "
                           f"{', '.join(NAMES)}")
    for k, v in cfg.items():
        if k not in SETTINGS[name]:
            raise CaptureError(f"{what}: {name} takes no setting {k!r}; its settings are "
                               f"{', '.join(SETTINGS[name])}")
        if k == "betas":
            if not (isinstance(v, (tuple, list)) and len(v) == 2 and
                    all(_is_number(b) and 0 <= b < 1 for b in v)):
                raise CaptureError(f"{what}: betas is {v!r}; give two numbers in [0, 1), "
                                   "e.g. (0.9, 0.999)")
        elif not _is_number(v) or v < 0:
            raise CaptureError(f"{what}: {k} is {v!r}; give a finite number >= 0")
        elif k == "momentum" and v >= 1:
            raise CaptureError(f"{what}: momentum is {v!r}; give a number in [0, 1)")


# torch.optim settings that change the step beyond what SGD / TensorAdam
# compute, and the value under which they do not (foreach, fused,
# capturable and differentiable choose kernels, not the math).
_EXACT_ONLY = {
    "SGD": {"dampening": 0, "nesterov": False, "maximize": False},
    "Adam": {"amsgrad": False, "maximize": False},
    "AdamW": {"amsgrad": False, "maximize": False},
}
_TAKEN = {"SGD": ("lr", "momentum", "weight_decay"),
          "Adam": ("lr", "betas", "eps", "weight_decay"),
          "AdamW": ("lr", "betas", "eps", "weight_decay")}


def check_params(opt, model):
    """A CaptureError unless opt updates exactly the model's trainable
    parameters (the capture updates every one of them)."""
    cls = type(opt).__name__
    mine = {id(p) for g in opt.param_groups for p in g["params"]}
    names = {id(p): n for n, p in model.named_parameters()}
    if mine - set(names):
        raise CaptureError(f"the {cls} optimizer updates {len(mine - set(names))} tensor(s) "
                           "that are not parameters of the model; give it model.parameters()")
    left_out = [n for n, p in model.named_parameters() if p.requires_grad and id(p) not in mine]
    if left_out:
        raise CaptureError(f"the {cls} optimizer leaves out {len(left_out)} trainable "
                           f"parameter(s) of the model ({', '.join(left_out[:3])}"
                           f"{', ...' if len(left_out) > 3 else ''}); the capture updates "
                           "every trainable parameter: give it model.parameters() (or set "
                           "requires_grad=False on those it must not train)")


def config_from_torch(opt, model):
    """An optimizer dict ({"name": "sgd", "lr": ...}) for a torch.optim
    object that an entry point gives: SGD, Adam or AdamW over all the
    model's trainable parameters with one setting each, which this module's
    optimizers compute exactly; else a CaptureError naming what differs."""
    cls = type(opt).__name__
    if type(opt) not in (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW):
        raise CaptureError(f"the optimizer is a {cls} object; the capture records "
                           "torch.optim.SGD, Adam and AdamW only (or a dict naming "
                           f"{', '.join(NAMES)})")
    groups = opt.param_groups
    ref = {k: v for k, v in groups[0].items() if k != "params"}
    for g in groups[1:]:
        if {k: v for k, v in g.items() if k != "params"} != ref:
            raise CaptureError(f"the {cls} optimizer has param groups with different "
                               "settings; the capture applies one setting to every parameter: "
                               "give one group (or a dict)")
    for k, want in _EXACT_ONLY[cls].items():
        if k in ref and ref[k] != want:
            raise CaptureError(f"the {cls} optimizer has {k}={ref[k]!r}, which the capture "
                               f"cannot record; use {k}={want!r}")
    lr = ref.get("lr")
    if isinstance(lr, torch.Tensor):
        raise CaptureError(f"the {cls} optimizer's lr is a tensor; give a Python float")
    check_params(opt, model)
    cfg = {k: ref[k] for k in _TAKEN[cls] if k in ref}
    if "betas" in cfg:
        cfg["betas"] = tuple(cfg["betas"])
    name = cls.lower()
    check_config(name, cfg, f"the {cls} optimizer")
    return dict(cfg, name=name)


def make_optimizer(name, params, **cfg):
    """name: "sgd", "adam" or "adamw"; cfg: lr, momentum (sgd), weight_decay,
    betas, eps (adam, adamw). The optimizer's state exists when this
    returns."""
    cfg = {k: v for k, v in cfg.items() if v is not None}
    check_config(name, cfg)
    params = list(params)
    c = dict(DEFAULTS[name])
    c.update(cfg)
    if name == "sgd":
        opt = torch.optim.SGD(params, lr=c["lr"], momentum=c["momentum"],
                              weight_decay=c["weight_decay"], foreach=False)
        if c["momentum"] != 0:
            for p in params:
                opt.state[p]["momentum_buffer"] = _zeros_state(p)
        return opt
    kw = {k: c[k] for k in ("lr", "weight_decay", "betas", "eps") if k in c}
    return TensorAdam(params, decoupled=name == "adamw", **kw)
