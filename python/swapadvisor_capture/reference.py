"""The eager reference: the entry point trained by plain PyTorch, and the
comparison of two sets of final values."""

import contextlib
import math
import time

import torch

from .capture import read_json_gz
from .encode import dtype_from_name
from .entry import (autocast_context, backward, forward_loss, load_entry, make_batch,
                    named_state, optimizer_config, prepare, train_step)
from .errors import CaptureError, in_entry
from .values import as_tensor, read_values


def check_initial(state, initial, graph):
    """Checks that the values file `initial` of `graph` holds, for every
    tensor of `state` ({name: tensor}) it names, what build() made."""
    _, vals = read_values(initial)
    g = read_json_gz(graph)
    for t in g["tensors"]:
        if t["id"] in vals and t.get("name") in state:
            dst = state[t["name"]]
            src = as_tensor(vals[t["id"]])
            if src.numel() != dst.numel() * dst.element_size():
                raise CaptureError(f"initial value of {t['name']} has {src.numel()} bytes; "
                                   f"build() made {list(dst.shape)} {dst.dtype} (other "
                                   "sizes: were the same --entry-arg values given?)")
            src = src.view(dst.dtype).view(dst.shape)
            if not torch.equal(src, dst.detach().cpu()):
                raise CaptureError(f"initial value of {t['name']} differs from what build() "
                                   "made (is build() deterministic under torch.manual_seed?)")


class EagerRun:
    """What eager_run() measured.

    losses: every iteration's loss, the warm-up iterations' first;
    iteration_s: the wall time of each timed iteration (after the warm-up),
    with the device synchronized before and after it on CUDA;
    peak_device_bytes / peak_device_reserved_bytes:
    torch.cuda.max_memory_allocated / max_memory_reserved over the timed
    iterations (None off CUDA); state: {name: CPU tensor} of the final
    parameters, buffers and optimizer state (None unless asked for)."""

    def __init__(self):
        self.losses = []
        self.iteration_s = []
        self.peak_device_bytes = None
        self.peak_device_reserved_bytes = None
        self.state = None

    def median_iteration_s(self):
        t = sorted(self.iteration_s)
        if not t:
            return None
        m = len(t) // 2
        return t[m] if len(t) % 2 else (t[m - 1] + t[m]) / 2


def eager_run(entry, iterations, optimizer=None, lr=None, momentum=None, weight_decay=None,
              device="cpu", seed=0, initial=None, graph=None, entry_args=None,
              save_on_cpu=False, warmup=0, keep_state=True, autocast=None):
    """Trains the entry point for `warmup` untimed and then `iterations`
    timed steps, gradients set to None before each. initial/graph: a values
    file and its graph, whose values (matched by name) are loaded first and
    must equal what build() made. entry_args: keyword arguments for build().
    save_on_cpu: forward and backward inside
    torch.autograd.graph.save_on_cpu (pinned host memory on CUDA; CPU-only
    torch cannot pin), which keeps the tensors autograd saves for the
    backward pass in host memory. autocast: "bf16" or "fp16" runs each forward
    pass under torch.autocast, as a capture with that autocast recorded it.
    Returns an EagerRun."""
    with in_entry(entry):
        return _eager_run(entry, iterations, optimizer, lr, momentum, weight_decay, device, seed,
                          initial, graph, entry_args, save_on_cpu, warmup, keep_state, autocast)


def _eager_run(entry, iterations, optimizer, lr, momentum, weight_decay, device, seed, initial,
               graph, entry_args, save_on_cpu, warmup, keep_state, autocast):
    setup = load_entry(entry, seed=seed, args=entry_args)
    opt_name, cfg = optimizer_config(setup, optimizer, lr=lr, momentum=momentum,
                                     weight_decay=weight_decay)
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    model, inputs, target, opt = prepare(setup, dev, opt_name, cfg)
    state = {n: t for n, t, _ in named_state(model, opt)}
    if initial is not None:
        check_initial(state, initial, graph)
    # The first iteration draws from the seed, as the captured one did (exec
    # "rng"), so that random ops (dropout) draw the same numbers in both.
    torch.manual_seed(seed)
    if save_on_cpu:
        def saving():
            return torch.autograd.graph.save_on_cpu(pin_memory=cuda)
    else:
        saving = contextlib.nullcontext
    run = EagerRun()
    for i in range(warmup + iterations):
        timed = i >= warmup
        if cuda:
            torch.cuda.synchronize(dev)
            if i == warmup:
                torch.cuda.reset_peak_memory_stats(dev)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with saving():
            loss = train_step(model, inputs, target, setup.loss_fn, opt, autocast=autocast)
        if cuda:
            torch.cuda.synchronize(dev)
        t1 = time.perf_counter()
        if timed:
            run.iteration_s.append(t1 - t0)
        run.losses.append(float(loss.detach().float().cpu()))
        del loss
    if cuda and iterations:
        run.peak_device_bytes = torch.cuda.max_memory_allocated(dev)
        run.peak_device_reserved_bytes = torch.cuda.max_memory_reserved(dev)
    if keep_state:
        run.state = {n: t.detach().cpu().clone() for n, t in state.items()}
    return run


def eager_train(entry, iterations, optimizer=None, lr=None, momentum=None, weight_decay=None,
                device="cpu", seed=0, initial=None, graph=None, entry_args=None, autocast=None):
    """Trains the entry point for `iterations` steps, gradients set to None
    before each (eager_run without warm-up or save_on_cpu). initial/graph: a
    values file and its graph, whose values (matched by name) are loaded
    first and must equal what build() made. Returns (losses, {name: tensor})
    of the final state."""
    r = eager_run(entry, iterations, optimizer, lr, momentum, weight_decay, device, seed,
                  initial, graph, entry_args=entry_args, autocast=autocast)
    return r.losses, r.state


def rank_batches(entry, ranks, entry_args=None, seed=0):
    """The entry point's batch (build(**entry_args)'s make_batch()) cut along
    its first dimension into `ranks` equal shares, as data-parallel training
    splits it: [(inputs, target)] per rank, on the CPU."""
    with in_entry(entry):
        setup = load_entry(entry, seed=seed, args=entry_args)
        inputs, target = make_batch(setup, torch.device("cpu"))
    tensors = list(inputs) + (list(target) if isinstance(target, tuple) else [target])
    n = tensors[0].shape[0] if tensors and tensors[0].dim() else 0
    if n % ranks or any(t.dim() == 0 or t.shape[0] != n for t in tensors):
        raise CaptureError(f"{entry}: a batch of {n} does not split into {ranks} equal shares "
                           "along every input's first dimension; give a batch that is a "
                           f"multiple of {ranks}")

    def share(t, r):
        return t[r * n // ranks:(r + 1) * n // ranks].clone()
    return [(tuple(share(t, r) for t in inputs),
             tuple(share(t, r) for t in target) if isinstance(target, tuple) else share(target, r))
            for r in range(ranks)]


def eager_train_ranks(entry, iterations, ranks, optimizer=None, seed=0, initial=None,
                      graph=None, entry_args=None, autocast=None):
    """What data-parallel training of the entry point on `ranks` ranks
    computes, in one eager process: each iteration every rank's share of the
    batch (rank_batches) goes forward and backward through the same model,
    the gradients accumulate and are divided by the number of ranks (the
    mean DistributedDataParallel all-reduces), and the optimizer steps once.
    Batch norm's running statistics are each rank's own (DDP with
    broadcast_buffers=False, as `swapadvisor run` under mpirun keeps them).
    entry_args: build()'s arguments for the whole batch. initial/graph: a
    values file whose parameters must equal what build() made. Returns
    (losses per rank [[loss per iteration]], final state per rank [{name:
    tensor}])."""
    with in_entry(entry):
        return _eager_train_ranks(entry, iterations, ranks, optimizer, seed, initial, graph,
                                  entry_args, autocast)


def _eager_train_ranks(entry, iterations, ranks, optimizer, seed, initial, graph, entry_args,
                       autocast):
    setup = load_entry(entry, seed=seed, args=entry_args)
    opt_name, cfg = optimizer_config(setup, optimizer)
    model, _, _, opt = prepare(setup, torch.device("cpu"), opt_name, cfg)
    batches = rank_batches(entry, ranks, entry_args, seed)
    state = {n: t for n, t, _ in named_state(model, opt)}
    if initial is not None:
        check_initial(state, initial, graph)
    buffers = dict(model.named_buffers())
    rank_buffers = [{n: b.detach().clone() for n, b in buffers.items()} for _ in range(ranks)]
    torch.manual_seed(seed)
    losses = [[] for _ in range(ranks)]
    for _ in range(iterations):
        opt.zero_grad(set_to_none=True)
        for r, (inputs, target) in enumerate(batches):
            with torch.no_grad():
                for n, b in buffers.items():
                    b.copy_(rank_buffers[r][n])
            with autocast_context("cpu", autocast):
                loss = forward_loss(model, inputs, target, setup.loss_fn)
            backward(loss, model)
            losses[r].append(float(loss.detach().float()))
            rank_buffers[r] = {n: b.detach().clone() for n, b in buffers.items()}
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.div_(ranks)
        opt.step()
    # named_state again: the optimizer's state exists only after its first step.
    final = {n: t.detach().cpu().clone() for n, t, _ in named_state(model, opt)}
    states = []
    for r in range(ranks):
        s = dict(final)
        s.update({n: b.cpu().clone() for n, b in rank_buffers[r].items()})
        states.append(s)
    return losses, states


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
