"""capture(): one training iteration of an entry point, recorded, and the
three files written from it."""

import contextlib
import gzip
import json
import os

import torch

from . import __version__, step_scalars
from .step_scalars import no_profiler_markers as _no_profiler_markers
from .encode import dtype_name
from .entry import (autocast_context, backward, forward_loss, load_entry, named_state,
                    optimizer_config, prepare)
from .errors import CaptureError, in_entry
from .recorder import Recorder, TensorInfo, round_up, storage_bytes_view, storage_of
from .values import write_values


class Capture:
    """The result of capture(): graph and exec documents, initial values."""

    def __init__(self):
        self.graph = None
        self.exec = None
        self.values = []          # (tensor id, name, kind, uint8 CPU tensor)
        self.loss = None          # the loss of the captured iteration (float)
        self.recorder = None
        self.unused_state = []    # names of persistent tensors no op touched

    def write(self, prefix):
        d = os.path.dirname(prefix)
        if d:
            os.makedirs(d, exist_ok=True)
        write_json_gz(prefix + ".graph.json.gz", self.graph)
        write_json_gz(prefix + ".exec.json.gz", self.exec)
        if self.values:
            write_values(prefix + ".values.bin", self.values, self.graph["name"])
        return [prefix + s for s in (".graph.json.gz", ".exec.json.gz", ".values.bin")
                if s != ".values.bin" or self.values]


def write_json_gz(path, doc):
    text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        f.write(text)


def read_json_gz(path):
    """The JSON document of a file (gzip-compressed when its name ends with
    .gz); a file that is not one is a CaptureError naming it."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (gzip.BadGzipFile, EOFError, UnicodeDecodeError, json.JSONDecodeError) as e:
        what = "gzip-compressed JSON" if path.endswith(".gz") else "JSON"
        raise CaptureError(f"{path}: not {what} ({e}); give a file that swapadvisor-capture "
                           "wrote", entry=False) from None


def _module_hooks(model, rec):
    handles = []
    for name, mod in model.named_modules():
        label = name or type(mod).__name__

        def pre(m, inp, label=label):
            rec.module_stack.append(label)

        def post(m, inp, out):
            if rec.module_stack:
                rec.module_stack.pop()

        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))
    return handles


def op_math(tensors, r):
    """The math an op runs in, as graph format 1.2's op "dtype": a half type
    when it reads or writes a tensor of one, else None (float32, the
    default)."""
    dtypes = {tensors[t].dtype for t in list(r.inputs) + list(r.outputs) + list(r.updates)}
    for name in ("bfloat16", "float16"):
        if name in dtypes:
            return name
    return None


def capture(entry, optimizer=None, lr=None, momentum=None, weight_decay=None, device="cpu",
            name=None, align=64, check_mutations=True, seed=0, entry_args=None, autocast=None):
    """entry_args: keyword arguments for the entry point's build(). autocast:
    "bf16" or "fp16" records the iteration with the forward pass under
    torch.autocast (the casts it makes are recorded ops, so a replay needs no
    autocast); each op touching a tensor of that type gets the op field
    "dtype" (graph format 1.2). A mistake in the entry point is a
    CaptureError naming the entry file."""
    with in_entry(entry):
        return _capture(entry, optimizer, lr, momentum, weight_decay, device, name, align,
                        check_mutations, seed, entry_args, autocast)


def _capture(entry, optimizer, lr, momentum, weight_decay, device, name, align, check_mutations,
             seed, entry_args, autocast):
    setup = load_entry(entry, seed=seed, args=entry_args)
    opt_name, opt_cfg = optimizer_config(setup, optimizer, lr=lr, momentum=momentum,
                                         weight_decay=weight_decay)
    dev = torch.device(device)
    model, inputs, target, opt = prepare(setup, dev, opt_name, opt_cfg)
    if name is None:
        name = os.path.splitext(os.path.basename(entry))[0]
    origin = os.path.basename(entry) + "".join(
        f", {k}={v!r}" for k, v in sorted((entry_args or {}).items()))
    return capture_step(model, inputs, target, setup.loss_fn, opt, opt_name, opt_cfg, dev, name,
                        origin, align=align, check_mutations=check_mutations, seed=seed,
                        autocast=autocast)


def capture_step(model, inputs, target, loss_fn, opt, opt_name, opt_cfg, dev, name, origin,
                 align=64, check_mutations=True, seed=0, autocast=None, opt_step=None):
    """One step of model (in training mode, on dev) on inputs (a tuple of
    tensors) and target, with opt, an optimizer of this package's
    (make_optimizer) whose state exists, recorded: a Capture. origin says
    where the model came from in the graph's "source" (an entry file, a
    training script). The step runs for real: it updates model and opt.

    opt_step: opt is a torch.optim.SGD, Adam or AdamW (foreach off, state
    made by step_scalars.init_state) taking its step numbered opt_step, and
    the exec file gets its step scalars (step_scalars.py); cap.step_structure
    is what each step's values fit."""

    # The state that exists before the iteration.
    registry = {}
    keep = []
    state = named_state(model, opt)
    batch = [("input" if len(inputs) == 1 else f"input.{i}", t) for i, t in enumerate(inputs)]
    if isinstance(target, tuple):
        batch += [(f"target.{i}", t) for i, t in enumerate(target)]
    else:
        batch.append(("target", target))
    for nm, t, kind in state + [(n, t, "input") for n, t in batch]:
        s = storage_of(t)
        if s._cdata in registry:
            continue  # tied weights: the first name wins
        info = TensorInfo(s._cdata, s, kind if s.nbytes() > 0 else "empty", nm)
        info.describe(t)
        if dev.type != "meta" and s.nbytes() > 0:
            info.initial = storage_bytes_view(s, s.device).clone().cpu()
        registry[s._cdata] = info
        keep.append(s)

    # The iteration's random draws start from the seed, as the eager
    # reference's first iteration's do (reference.eager_run) and as the
    # runtime's do (exec "rng"; Note [ATen recompute] in
    # src/runtime/aten_kernels.h).
    torch.manual_seed(seed)
    rec = Recorder(registry, dev, check_mutations=check_mutations)
    handles = _module_hooks(model, rec)

    def on_phase(p):
        rec.phase = p

    try:
        with _no_profiler_markers(), rec:
            on_phase("forward")
            with autocast_context(dev.type, autocast):
                loss = forward_loss(model, inputs, target, loss_fn)
            loss_info = registry.get(storage_of(loss)._cdata) if isinstance(loss, torch.Tensor) else None
            loss_geom = None
            if loss_info is not None:
                loss_geom = (loss.dtype, list(loss.shape), list(loss.stride()), loss.storage_offset())
            on_phase("backward")
            backward(loss, model)
            on_phase("update")
            counts = [sum(p.grad is not None for p in g["params"]) for g in opt.param_groups]
            if opt_step is not None:
                rec.opt_dispatch = 0
            opt.step()
            rec.opt_dispatch = None
    finally:
        for h in handles:
            h.remove()

    if loss_info is None or loss_info.id is None:
        raise CaptureError("the loss is not the result of a recorded op (was it made outside "
                           "the model and loss_fn?); compute it from the model's output")

    # Nothing may have swapped storages behind the dispatcher's back.
    for nm, t, kind in named_state(model, opt):
        s = storage_of(t)
        if s._cdata not in registry or registry[s._cdata].kind not in (kind, "empty"):
            raise CaptureError(f"{kind} {nm} is not the tensor it was before the step (was it "
                               "replaced, e.g. through .data, or created by the optimizer?); "
                               "the step must update state in place")

    cap = Capture()
    cap.recorder = rec
    cap.loss = float(loss.detach().float().cpu()) if dev.type != "meta" else None
    tensors = rec.tensors
    touched = {id(t) for t in tensors}
    cap.unused_state = [i.name for i in registry.values()
                        if i.kind in ("param", "buffer", "optimizer_state") and id(i) not in touched]

    g_tensors = []
    for i, info in enumerate(tensors):
        info.nbytes = max(info.nbytes, info.storage.nbytes())
        e = {"id": i, "bytes": round_up(info.nbytes, align), "kind": info.kind}
        if info.name:
            e["name"] = info.name
        if info.dtype is not None:
            e["dtype"] = info.dtype
            e["shape"] = info.shape
        g_tensors.append(e)
    g_ops = []
    for r in rec.ops:
        e = {"id": r.index, "type": r.type, "phase": r.phase, "inputs": r.inputs,
             "outputs": r.outputs, "updates": r.updates, "flops": float(r.flops),
             "bytes_accessed": int(r.bytes_accessed)}
        if r.module:
            e["name"] = r.module
        if r.random:
            e["random"] = True  # graph format 1.1 (docs/graph-format.md)
        if r.skips_updates:
            e["recompute_skips_updates"] = True  # graph format 1.3
        math = op_math(tensors, r)
        if math:
            e["dtype"] = math  # graph format 1.2: the math its flops run in
        g_ops.append(e)
    src = (f"swapadvisor-capture {__version__}: torch {torch.__version__}, one {opt_name} "
           f"training iteration recorded at the ATen dispatcher on {dev.type} "
           f"({origin}); bytes are storage bytes rounded up to {align}")
    cap.graph = {"format": "swapadvisor-graph", "version": 1, "name": name, "source": src,
                 "tensors": g_tensors, "ops": g_ops}
    if any(r.skips_updates for r in rec.ops):
        cap.graph["minor_version"] = 3
    elif any("dtype" in o for o in g_ops):
        cap.graph["minor_version"] = 2
    elif any(r.random for r in rec.ops):
        cap.graph["minor_version"] = 1

    # The last forward op that wrote the loss: its value is read right after it.
    after = None
    for r in rec.ops:
        if r.phase == "forward" and (loss_info.id in r.outputs or loss_info.id in r.updates):
            after = r.index
    x_ops = []
    for r in rec.ops:
        e = {"id": r.index, "op": r.qualname, "args": r.args, "kwargs": r.kwargs,
             "results": r.results}
        if r.random:
            e["random"] = True
        x_ops.append(e)
    cap.exec = {
        "format": "swapadvisor-exec", "version": 1,
        "graph": {"name": name, "ops": len(g_ops), "tensors": len(g_tensors)},
        "torch_version": torch.__version__, "capture_device": dev.type, "align": align,
        "optimizer": dict(opt_cfg, name=opt_name),
        "rng": {"seed": seed},
        "tensors": [{"id": i, "storage_bytes": int(info.nbytes)} for i, info in enumerate(tensors)],
        "ops": x_ops,
        "loss": {"after_op": after,
                 "value": {"tensor": loss_info.id, "dtype": dtype_name(loss_geom[0]),
                           "sizes": loss_geom[1], "strides": loss_geom[2],
                           "offset": loss_geom[3]}},
    }
    if cap.loss is not None:
        cap.exec["loss"]["captured"] = cap.loss
    cap.step_structure = None
    if opt_step is not None:
        shadow = step_scalars.Shadow(opt)
        cap.step_structure, values = shadow.step_values(opt.param_groups, opt_step)
        step_scalars.tag(cap.exec, rec.ops, rec.dispatch, counts, cap.step_structure, values)
    if dev.type != "meta":
        for i, info in enumerate(tensors):
            if info.initial is not None:
                cap.values.append((i, info.name, info.kind, info.initial))
    return cap
