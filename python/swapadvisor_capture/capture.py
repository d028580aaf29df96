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


def micro_batch_split(inputs, target, micro_batches, dim=0):
    """(inputs, target) of each micro-batch: every tensor chunked along
    dimension dim (Tensor.chunk); one micro-batch: the batch itself."""
    if micro_batches == 1:
        return [(inputs, target)]
    tgt = target if isinstance(target, tuple) else (target,)
    short = [t for t in inputs + tgt if t.dim() <= dim]
    if short:
        raise CaptureError(f"a batch tensor of shape {tuple(short[0].shape)} has no dimension "
                           f"{dim} to split in micro-batches (batch_dim)")
    n = min(t.shape[dim] for t in inputs + tgt)
    if n < micro_batches:
        raise CaptureError(f"a batch of {n} cannot be split in {micro_batches} micro-batches")
    ins = [t.chunk(micro_batches, dim) for t in inputs]
    tgs = [t.chunk(micro_batches, dim) for t in tgt]
    k = min(len(c) for c in ins + tgs)
    if k != micro_batches:
        raise CaptureError(f"a batch of {n} chunks into {k} micro-batches, not {micro_batches}")
    out = []
    for i in range(k):
        t = tuple(c[i] for c in tgs)
        out.append((tuple(c[i] for c in ins), t if isinstance(target, tuple) else t[0]))
    return out


def scaler_state(scaler):
    """(name, tensor, kind) of a GradScaler's state tensors (none without one)."""
    if scaler is None:
        return []
    return [("scaler._scale", scaler._scale, "optimizer_state"),
            ("scaler._growth_tracker", scaler._growth_tracker, "optimizer_state")]


def capture_step(model, inputs, target, loss_fn, opt, opt_name, opt_cfg, dev, name, origin,
                 align=64, check_mutations=True, seed=0, autocast=None, opt_step=None,
                 micro_batches=1, max_grad_norm=None, batch_dim=0, train=True, scaler=None):
    """One step of model (in training mode, on dev) on inputs (a tuple of
    tensors) and target, with opt, an optimizer of this package's
    (make_optimizer) whose state exists, recorded: a Capture. origin says
    where the model came from in the graph's "source" (an entry file, a
    training script). The step runs for real: it updates model and opt.

    opt_step: opt is a torch.optim.SGD, Adam or AdamW (foreach off, state
    made by step_scalars.init_state) taking its step numbered opt_step, and
    the exec file gets its step scalars (step_scalars.py); cap.step_structure
    is what each step's values fit.

    micro_batches: the batch split in that many along batch_dim (chunk),
    each micro-batch's loss divided by their number before its backward
    (gradients accumulate); the loss is their sum. max_grad_norm: the
    gradients clipped to that total 2-norm before the optimizer steps
    (torch.nn.utils.clip_grad_norm_ over model.parameters()).

    scaler: a torch GradScaler (FP16 autocast) over opt, its scale made:
    each micro-batch's loss scaled before its backward, the gradients
    unscaled (and found_inf set) before clipping, the optimizer's ops
    recorded to be skipped when found_inf is set (Note [Skipped steps] in
    src/runtime/aten/aten_program.h: "skip_if_nonzero"), then the scaler's update;
    its scale and growth tracker are state ("scaler._scale", ...).

    train=False: an evaluation step instead, the forward pass and the loss
    under torch.no_grad() (model in eval mode, opt unused): no backward, no
    update, nothing written but the loss's own tensors."""

    # The state that exists before the iteration.
    registry = {}
    keep = []
    state = named_state(model, opt) + scaler_state(scaler)
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
    # src/runtime/aten/aten_kernels.h).
    torch.manual_seed(seed)
    rec = Recorder(registry, dev, check_mutations=check_mutations)
    handles = _module_hooks(model, rec)

    def on_phase(p):
        rec.phase = p

    try:
        with _no_profiler_markers(), rec:
            loss = None
            if not train:
                on_phase("forward")
                with torch.no_grad(), autocast_context(dev.type, autocast):
                    loss = forward_loss(model, inputs, target, loss_fn, needs_grad=False)
            for ins, tgt in micro_batch_split(inputs, target, micro_batches, batch_dim) \
                    if train else ():
                on_phase("forward")
                with autocast_context(dev.type, autocast):
                    part = forward_loss(model, ins, tgt, loss_fn)
                if micro_batches > 1:
                    part = part / micro_batches
                # The step's loss: the micro-batches' (each divided by their
                # number) added up in order, as loss.detach() would be.
                loss = part.detach() if loss is None else loss + part.detach()
                if scaler is not None:
                    part = scaler.scale(part)
                on_phase("backward")
                backward(part, model)
            loss_info = registry.get(storage_of(loss)._cdata)
            loss_geom = (loss.dtype, list(loss.shape), list(loss.stride()), loss.storage_offset())
            if train:
                on_phase("update")
                if scaler is not None:
                    # GradScaler.step's work but its branch: the optimizer's
                    # ops are recorded whatever found_inf holds now, each to
                    # be skipped when it is set.
                    scaler.unscale_(opt)
                    found = scaler._per_optimizer_states[id(opt)]["found_inf_per_device"]
                    if len(found) != 1:
                        raise CaptureError("a GradScaler over parameters on several devices")
                    rec.skip_flag = rec.lookup(next(iter(found.values())))
                if max_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
                counts = [sum(p.grad is not None for p in g["params"])
                          for g in opt.param_groups]
                if opt_step is not None:
                    rec.opt_dispatch = 0
                rec.skipping = scaler is not None
                opt.step()
                rec.opt_dispatch = None
                rec.skipping = False
                if scaler is not None:
                    scaler.update()
    finally:
        for h in handles:
            h.remove()

    if loss_info is None or loss_info.id is None:
        raise CaptureError("the loss is not the result of a recorded op (was it made outside "
                           "the model and loss_fn?); compute it from the model's output")

    # Nothing may have swapped storages behind the dispatcher's back.
    for nm, t, kind in named_state(model, opt) + scaler_state(scaler):
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
    what = f"one {opt_name} training iteration" if train else "one evaluation step"
    src = (f"swapadvisor-capture {__version__}: torch {torch.__version__}, {what} "
           f"recorded at the ATen dispatcher on {dev.type} "
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
        if r.skip_if is not None:
            e["skip_if_nonzero"] = r.skip_if  # Note [Skipped steps]
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
        step_scalars.tag(cap.exec, rec.ops, counts, cap.step_structure, values)
    if dev.type != "meta":
        for i, info in enumerate(tensors):
            if info.initial is not None:
                cap.values.append((i, info.name, info.kind, info.initial))
    return cap
