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
"""

import torch


def _zeros_state(p):
    return torch.zeros_like(p, memory_format=torch.preserve_format)


class TensorAdam(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)
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
                if wd != 0:
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
}


def make_optimizer(name, params, **cfg):
    """name: "sgd" or "adam"; cfg: lr, momentum (sgd), weight_decay, betas, eps (adam).
    The optimizer's state exists when this returns."""
    params = list(params)
    if name == "sgd":
        c = dict(DEFAULTS["sgd"])
        c.update({k: v for k, v in cfg.items() if v is not None})
        opt = torch.optim.SGD(params, lr=c["lr"], momentum=c["momentum"],
                              weight_decay=c["weight_decay"], foreach=False)
        if c["momentum"] != 0:
            for p in params:
                opt.state[p]["momentum_buffer"] = _zeros_state(p)
        return opt
    if name == "adam":
        c = dict(DEFAULTS["adam"])
        c.update({k: v for k, v in cfg.items() if v is not None})
        kw = {k: c[k] for k in ("lr", "weight_decay", "betas", "eps") if k in c}
        return TensorAdam(params, **kw)
    raise ValueError(f"unknown optimizer {name!r} (expected sgd or adam)")
