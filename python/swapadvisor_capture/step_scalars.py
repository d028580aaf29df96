"""Step scalars: the arguments an optimizer's step computes in Python from
its settings and its step count, given anew at every step (Note [Step
scalars] in src/runtime/aten/aten_program.h).

torch.optim.Adam computes `-lr / (1 - beta1 ** t)` and `sqrt(1 - beta2 ** t)`
from the step count t it reads with .item(), and passes them to its ops as
Python floats; SGD passes `-lr`, AdamW `1 - lr * weight_decay`. A captured
step holds one step's values. So that a replay computes what eager PyTorch
computes at every step (learning-rate schedules included), the capture tags
every Python float argument of the optimizer's ops as a step scalar, and at
every step the same optimizer class computes their values:

* a shadow of the optimizer, one per param group: the user's class over one
  1-element parameter, with that group's settings and a state like the
  captured one (Adam's step count set to the step's), runs its step() under
  a probe that notes every op and its float arguments. Its values are those
  the real optimizer passes at that step: the same code on the same numbers
  (none of them depends on a tensor's value but the step count);
* the real step (foreach=False, so one op sequence per parameter, the same
  for every parameter of a group) is the shadow's sequence repeated for each
  parameter: the capture counts the ops the optimizer dispatches and tags
  each recorded op's float arguments with the slot of the shadow's argument
  at that place, checking that the ops and the captured values agree.

The structure (each group's op names, float positions and other arguments)
is what a step's values fit; when a setting changes it (a weight decay that
becomes non-zero adds an op), the step is captured again.
"""

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .errors import CaptureError
from .optim import check_params

# The classes whose step is a fixed op sequence per parameter with
# foreach=False, and the state their step() creates on its first call.
CLASSES = (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW)


# Settings under which the step is not one op sequence per parameter on the
# CPU, or needs state init_state does not make; and the value it needs.
_NEEDS = {"fused": (None, False), "capturable": (False,), "differentiable": (False,),
          "amsgrad": (False,)}


def check_optimizer(opt, model):
    """A CaptureError naming what the capture cannot take from opt: a class
    other than SGD, Adam and AdamW, a setting in _NEEDS, a tensor learning
    rate, parameters that are not the model's, or trainable parameters of
    the model it leaves out."""
    cls = type(opt).__name__
    if type(opt) not in CLASSES:
        raise CaptureError(f"the optimizer is a {cls} object; swapadvisor trains with "
                           "torch.optim.SGD, Adam and AdamW")
    for i, g in enumerate(opt.param_groups):
        for k, allowed in _NEEDS.items():
            if g.get(k, allowed[0]) not in allowed:
                raise CaptureError(f"the {cls} optimizer has {k}={g[k]!r} (param group {i}), "
                                   f"which the capture cannot record; use {k}={allowed[-1]!r}")
        if isinstance(g.get("lr"), torch.Tensor):
            raise CaptureError(f"the {cls} optimizer's lr is a tensor (param group {i}); give "
                               "a Python float")
    check_params(opt, model)


def like(opt, model, copy):
    """An optimizer of opt's class and param groups (their settings, foreach
    off) over copy, a copy of model, each parameter its namesake; its state
    made by init_state, with opt's state where it has some."""
    names = {id(p): n for n, p in model.named_parameters()}
    params = dict(copy.named_parameters())
    groups = [dict(settings(g), params=[params[names[id(p)]] for p in g["params"]])
              for g in opt.param_groups]
    out = type(opt)(groups, lr=opt.param_groups[0]["lr"])
    for g, mine in zip(opt.param_groups, out.param_groups):
        for p, q in zip(g["params"], mine["params"]):
            for k, v in opt.state.get(p, {}).items():
                out.state[q][k] = v.detach().clone() if isinstance(v, torch.Tensor) else v
    init_state(out)
    return out


def init_state(opt):
    """The state opt's first step() would create, created now (as torch
    creates it), so that the captured step is the steady one: SGD's momentum
    buffers as zeros (momentum * 0 + grad is bit for bit torch's first-step
    copy of the gradient), Adam's step count and moments."""
    for g in opt.param_groups:
        for p in g["params"]:
            st = opt.state[p]
            if isinstance(opt, torch.optim.SGD):
                if g.get("momentum", 0) != 0 and "momentum_buffer" not in st:
                    st["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            elif not st:
                st["step"] = torch.tensor(0.0)
                st["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)


def settings(group):
    """A param group's settings for a step that records one op sequence per
    parameter (foreach off; fused and capturable are refused earlier)."""
    s = {k: v for k, v in group.items() if k != "params"}
    s["foreach"] = False
    return s


class _NoMarker:
    """Stands in for torch.autograd.profiler.record_function while capturing:
    the optimizer's profiler markers would add a 4-byte handle tensor
    (torch.zeros(1) in torch 1.13) and marker ops with no numerical effect."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        return fn


@contextlib.contextmanager
def no_profiler_markers():
    prof = torch.autograd.profiler
    saved = prof.record_function
    prof.record_function = _NoMarker
    try:
        yield
    finally:
        prof.record_function = saved


def _other(v):
    if isinstance(v, torch.Tensor):
        return "T"
    if isinstance(v, (list, tuple)):
        return tuple(_other(x) for x in v)
    return v if v is None or isinstance(v, (bool, int, str)) else repr(v)


class _Probe(TorchDispatchMode):
    """Notes each op's name, its float arguments ((argument, value): a
    position or a keyword) and the rest of its non-tensor arguments."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        s = func._schema
        if not s.name.startswith("profiler::"):
            floats = [(i, v) for i, v in enumerate(args) if type(v) is float]
            floats += [(k, v) for k, v in kwargs.items() if type(v) is float]
            other = tuple(_other(v) for v in args if type(v) is not float) + tuple(
                (k, _other(v)) for k, v in kwargs.items() if type(v) is not float)
            self.ops.append((f"{s.name}.{s.overload_name or 'default'}", floats, other))
        return func(*args, **kwargs)


def is_optimizer_dispatch(schema):
    """Whether an op counts in the optimizer's sequence (as the probe counts)."""
    return not schema.name.startswith("profiler::")


class Shadow:
    """One shadow optimizer per param group of `opt` (module docstring)."""

    def __init__(self, opt):
        if type(opt) not in CLASSES:
            raise CaptureError(f"step scalars: a {type(opt).__name__} optimizer")
        self.cls = type(opt)
        self.opts = []
        for g in opt.param_groups:
            p = torch.nn.Parameter(torch.ones(1, dtype=g["params"][0].dtype))
            p.grad = torch.ones_like(p)
            shadow = self.cls([p], lr=g["lr"])
            self.opts.append(shadow)

    @staticmethod
    def structure_key(groups):
        """A key that fixes step_values' structure: every setting but the
        values of its floats (of those, whether each is 0 or 1, values some
        step might branch on). The step number is left out: the state
        init_state makes is the steady one, so the first step runs the ops
        of every other. Equal keys give equal structures (the Trainer checks
        it at every step)."""
        def shape(v):
            if type(v) is float:
                return ("float", v == 0.0, v == 1.0)
            if isinstance(v, (list, tuple)):
                return tuple(shape(x) for x in v)
            return v if v is None or isinstance(v, (bool, int, str)) else repr(v)
        return tuple(tuple(sorted((k, shape(v)) for k, v in settings(g).items()))
                     for g in groups)

    def step_values(self, groups, step):
        """For the step numbered `step` (1 for the first) of an optimizer with
        these param groups (the user's, whose settings a scheduler changes):
        (structure, values), the structure a tuple per group of (op, float
        arguments, other arguments) and the values every float argument of
        every group's sequence, in order."""
        if len(groups) != len(self.opts):
            raise CaptureError("step scalars: the optimizer's param groups changed in number")
        structure, values = [], []
        for g, shadow in zip(groups, self.opts):
            sg = shadow.param_groups[0]
            sg.update(settings(g))
            init_state(shadow)
            p = sg["params"][0]
            st = shadow.state[p]
            if "step" in st:
                st["step"] = torch.tensor(float(step - 1))
            probe = _Probe()
            with no_profiler_markers(), probe:
                shadow.step()
            seq = []
            for name, floats, other in probe.ops:
                seq.append((name, tuple(a for a, _ in floats), other))
                values.extend(v for _, v in floats)
            structure.append(tuple(seq))
        return tuple(structure), values


def tag(exec_doc, ops, counts, structure, values):
    """Tags the optimizer's recorded ops in exec_doc (the capture's exec
    dict): ops, the Recorder's OpRecords (their dispatch: the place in the
    optimizer's op sequence, or None outside it); counts: per param group, the parameters the
    step updated; structure, values: Shadow.step_values at the captured step.
    Adds each op's "step_scalars" and the file's "step_scalars"."""
    # Per group: where its sequence starts among the dispatches, how long one
    # parameter's is, and where its values start among the slots.
    spans = []
    d0 = s0 = 0
    for seq, n in zip(structure, counts):
        starts, k = [], s0
        for _, floats, _ in seq:
            starts.append(k)
            k += len(floats)
        spans.append((d0, len(seq), n, starts))
        d0 += len(seq) * n
        s0 = k
    total = d0
    if len(values) != s0:
        raise CaptureError("step scalars: the shadow's values do not fit its structure")
    x_ops = exec_doc["ops"]
    for r in ops:
        d = r.dispatch
        if d is None:
            continue
        if d >= total:
            raise CaptureError(f"step scalars: the optimizer dispatched more ops ({d + 1}) than "
                               f"its shadow's sequence for {sum(counts)} parameters ({total})")
        for (start, length, n, starts), seq in zip(spans, structure):
            if start <= d < start + length * n:
                j = (d - start) % length
                name, floats, _ = seq[j]
                break
        if name != r.qualname:
            raise CaptureError(f"step scalars: the optimizer's op {d} is {r.qualname}, its "
                               f"shadow's {name}; the step is not one sequence per parameter")
        uses = []
        for i, arg in enumerate(floats):
            slot = starts[j] + i
            got = r.args[arg] if isinstance(arg, int) else r.kwargs.get(arg)
            if got != values[slot]:
                raise CaptureError(f"step scalars: {r.qualname} argument {arg} is {got!r} in the "
                                   f"capture, {values[slot]!r} in the shadow")
            uses.append([arg, slot])
        if uses:
            x_ops[r.index]["step_scalars"] = uses
    exec_doc["step_scalars"] = {"values": list(values)}
