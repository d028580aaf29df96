"""swapadvisor.Trainer: train a PyTorch model under a memory budget, each
step run by swapadvisor's executor on a plan (docs/python.md, "Training").

    trainer = swapadvisor.Trainer(model, optimizer, loss_fn, budget="2GiB")
    for x, y in loader:
        loss = trainer.step(x, y)      # a tensor, as loss.detach() would be
    model.load_state_dict(trainer.state_dict())

How (Note [Trainer]):
- The first step captures one training step of a copy of the model (the
  capture package, swapadvisor_capture) on that batch: graph, exec file and
  initial values, written under the cache directory. The user's model,
  optimizer and random state are left as they were.
- The plan comes from the plan cache, keyed by the graph's fingerprint
  (the SHA-256 of its file), the device profile, the budget and the search
  settings; on a miss, swapadvisor.plan searches and the plan is stored. A
  second run of a script skips the search.
- A session (runtime/aten/aten_session.h) runs the plan with the ATen kernels on
  the host-emulated device (device="cpu") or CUDA (device="cuda"): one
  iteration per step on the batch it is given, the state (parameters,
  buffers, optimizer state) kept where the plan keeps it between steps.
- The optimizer is the user's own class (SGD, Adam, AdamW), recorded with
  foreach off; what it computes in Python each step (-lr, Adam's bias
  corrections) are step scalars, computed every step by a shadow of it
  (swapadvisor_capture/step_scalars.py) and handed to the session with the
  batch: schedules need no new capture.
- A batch of another shape or dtype (the last batch of an epoch) gets its
  own capture and plan, as does an optimizer setting that changes the
  step's op sequence. The state goes from one session to the next by name.
- state_dict() ends the session and returns the trained state under the
  model's state_dict names; the next step starts a session from it.
"""

import contextlib
import copy
import hashlib
import json
import os
import sys

import torch

from . import _args, _native
from ._native import Error

# The source tree's python/ (the build tree links this file from there).
_CAPTURE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def _capture_package():
    """swapadvisor_capture, which sits beside this package in the source
    tree and in an install."""
    try:
        import swapadvisor_capture  # noqa: F401
    except ImportError:
        if _CAPTURE_DIR not in sys.path:
            sys.path.append(_CAPTURE_DIR)
    from swapadvisor_capture import capture as cap
    from swapadvisor_capture import step_scalars, errors
    return cap, step_scalars, errors


def default_cache_dir():
    """$SWAPADVISOR_CACHE, else $XDG_CACHE_HOME/swapadvisor, else
    ~/.cache/swapadvisor."""
    d = os.environ.get("SWAPADVISOR_CACHE")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "swapadvisor")


def _cpu_fp16():
    """Whether this torch autocasts to float16 on the CPU and has a CPU
    GradScaler (torch.amp.GradScaler, torch 2.3 and later)."""
    return hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler")


def _tensors(v, what):
    if isinstance(v, torch.Tensor):
        return (v,)
    if isinstance(v, (tuple, list)) and v and all(isinstance(t, torch.Tensor) for t in v):
        return tuple(v)
    raise Error(f"step: {what} must be a tensor or a tuple of tensors, got "
                f"{type(v).__name__}")


def _signature(inputs, target):
    return tuple((str(t.dtype), tuple(t.shape)) for t in inputs + target)


def _raw(t):
    """The bytes of a tensor in row-major order, as a CPU uint8 tensor."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    return t.contiguous().reshape(-1).view(torch.uint8)


# Setting values compared as they are (others by their repr: a tensor's ==
# is not a truth value).
_PLAIN = (bool, int, float, str, type(None), tuple)


def _write_whole(path, write):
    """write(tmp) writes a file that then becomes path, whole: the cache holds
    content-addressed files that another process may read at any time."""
    tmp = f"{path}.{os.getpid()}.tmp"
    write(tmp)
    os.replace(tmp, path)


def _abort_job_on_uncaught_exceptions():
    """Data-parallel: an exception no one catches on one rank ends every
    rank (after its traceback), instead of leaving the others waiting for
    it in a collective (Note [Trainer ranks])."""
    if getattr(sys.excepthook, "_swapadvisor", False):
        return
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        _native.abort_job(1)
    hook._swapadvisor = True
    sys.excepthook = hook


class _Compiled:
    """One batch signature's capture and plan: the files a session runs."""

    def __init__(self, graph, plan, exec_file, values, input_ids, loss_dtype):
        self.graph = graph
        self.plan = plan
        self.exec = exec_file
        self.values = values            # (tensor id, name, kind, uint8 tensor): state, batch
        self.input_ids = input_ids      # tensor ids of the batch, in step() order
        self.loss_dtype = loss_dtype


class Trainer:
    """Trains model with optimizer (torch.optim.SGD, Adam or AdamW over all
    of model.parameters()) and loss_fn under a device memory budget.

    budget: bytes or a size ("8GiB"); memory_fraction: instead, a share of
    the first captured step's peak live bytes (later plans, for another
    batch shape or eval_step, get the same bytes). device: "cpu" runs on the
    host-emulated device (an arena of exactly the budget in host memory),
    "cuda" on the GPU (a build with CUDA and libtorch with CUDA). profile:
    the device profile the planner times with (default v100-16gb; a
    built-in name or a file from `swapadvisor bandwidth`). time_budget,
    evaluations, threads, seed: the search's, as swapadvisor.plan's.
    cache_dir: where captures and plans are kept (default_cache_dir()).
    data_parallel: under `mpirun -np N`, train data-parallel on N ranks
    (Note [Trainer ranks]); attributes rank and ranks.
    kernel_threads: libtorch's intra-op threads in the run (0: its default).
    micro_batches, batch_dim: gradient accumulation over that many chunks of
    the batch along batch_dim. max_grad_norm: gradient clipping. autocast:
    "bf16" or "fp16" runs the forward pass and the loss under torch.autocast
    (the casts it makes are recorded ops; fp16 on the CPU needs torch 2.3).
    grad_scaler: with "fp16", the user's torch GradScaler: losses scaled,
    gradients unscaled, a step whose gradients overflowed skipped (Note
    [Skipped steps]: attribute steps_skipped), the scale updated and given
    back to the scaler by state_dict().

    The step, as eager PyTorch would run it (what trains bit for bit):

        optimizer.zero_grad(set_to_none=True)
        loss = None
        for xs, y in chunks:              # x.chunk(micro_batches, batch_dim), y's too
            with torch.autocast(device, dtype):   # when autocast is "bf16" or "fp16"
                part = loss_fn(model(*xs), y)
            if micro_batches > 1:
                part = part / micro_batches
            loss = part.detach() if loss is None else loss + part.detach()
            (scaler.scale(part) if scaler else part).backward()
        if scaler and max_grad_norm is not None:
            scaler.unscale_(optimizer)
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        if scaler:
            scaler.step(optimizer)        # skips the step when gradients overflowed
            scaler.update()
        else:
            optimizer.step()              # step() returns loss
    """

    def __init__(self, model, optimizer, loss_fn, *, budget=None, memory_fraction=None,
                 device="cpu", profile="v100-16gb", time_budget=10, evaluations=None,
                 threads=0, seed=1, cache_dir=None, kernel_threads=0, progress=False,
                 name=None, micro_batches=1, max_grad_norm=None, batch_dim=0,
                 autocast=None, grad_scaler=None, data_parallel=False):
        if not isinstance(model, torch.nn.Module):
            raise Error(f"model: expected a torch.nn.Module, got {type(model).__name__}")
        if not callable(loss_fn):
            raise Error(f"loss_fn: expected a callable, got {type(loss_fn).__name__}")
        if budget is None and memory_fraction is None:
            raise Error("give the device memory budget: budget (bytes or a size such as "
                        "\"8GiB\") or memory_fraction (a share of the step's peak live bytes)")
        if isinstance(budget, str) and _native.parse_bytes(budget) is None:
            raise Error(f"budget: expected bytes or a size such as \"8GiB\", got {budget!r}")
        if isinstance(micro_batches, bool) or not isinstance(micro_batches, int) or \
                micro_batches < 1:
            raise Error(f"micro_batches: a whole number >= 1, got {micro_batches!r}")
        if max_grad_norm is not None and (
                isinstance(max_grad_norm, bool) or not isinstance(max_grad_norm, (int, float))
                or not max_grad_norm > 0 or max_grad_norm == float("inf")):
            raise Error(f"max_grad_norm: a finite number > 0 (or None), got {max_grad_norm!r}")
        if isinstance(batch_dim, bool) or not isinstance(batch_dim, int) or batch_dim < 0:
            raise Error(f"batch_dim: a dimension >= 0, got {batch_dim!r}")
        if autocast not in (None, "bf16", "fp16"):
            raise Error(f"autocast: None, \"bf16\" or \"fp16\", got {autocast!r}")
        if autocast == "fp16" and device == "cpu" and not _cpu_fp16():
            raise Error(f"autocast: torch {torch.__version__} autocasts to bf16 only on the CPU "
                        "(fp16 and its GradScaler need torch 2.3 or later there); use "
                        "autocast=\"bf16\"")
        if grad_scaler is not None:
            if not hasattr(grad_scaler, "_lazy_init_scale_growth_tracker") or \
                    not hasattr(grad_scaler, "unscale_"):
                raise Error(f"grad_scaler: expected a torch GradScaler, got "
                            f"{type(grad_scaler).__name__}")
            if autocast != "fp16":
                raise Error("grad_scaler: a GradScaler scales fp16 losses; give "
                            "autocast=\"fp16\" with it")
            if not grad_scaler.is_enabled():
                grad_scaler = None  # a disabled scaler does nothing, as in eager
            elif device in ("cpu", "cuda"):
                # Its scale made now, where it lives (the capture copies it).
                grad_scaler._lazy_init_scale_growth_tracker(torch.device(device))
        self.autocast = autocast
        self.grad_scaler = grad_scaler
        self.micro_batches = micro_batches
        self.batch_dim = batch_dim
        self.max_grad_norm = None if max_grad_norm is None else float(max_grad_norm)
        if device not in ("cpu", "cuda"):
            raise Error(f"device: \"cpu\" (the host-emulated device) or \"cuda\", got {device!r}")
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.device = device
        self._planning = dict(device=os.fspath(profile), budget=budget,
                              memory_fraction=memory_fraction, time_budget=time_budget,
                              evaluations=evaluations, threads=threads, seed=seed,
                              progress=progress)
        # Checked now, so that a bad budget is an error before any capture.
        _args.planning_args(_args.graph_source(None, "mlp-3", 1, "sgd", None, "fp32"),
                            self._planning["device"], budget, memory_fraction, time_budget,
                            evaluations, threads, seed, "arena", 1.0, "deadline", "placed",
                            True, 1, False, True, False)
        self.cache_dir = os.fspath(cache_dir) if cache_dir is not None else default_cache_dir()
        self.kernel_threads = int(kernel_threads)
        self.name = name or type(model).__name__.lower()
        self._cap, self._scalars, self._errors = _capture_package()
        self._check_optimizer()   # an optimizer it cannot record: an error now
        # Optimizer steps taken: the user's optimizer's own count (Adam's
        # state "step") when it has stepped before.
        self._opt_step = 0
        for st in optimizer.state.values():
            if isinstance(st.get("step"), (int, float, torch.Tensor)):
                self._opt_step = int(st["step"])
                break
        self._compiled = {}       # (batch signature, step structure) -> _Compiled
        self._structures = {}     # Shadow.structure_key -> the optimizer step's structure
        self._budget = None       # the budget in bytes (or as given), once resolved
        # Data-parallel (Note [Trainer ranks]): this process's rank and the
        # job's size under mpirun; (0, 1) otherwise.
        self.rank, self.ranks = _native.init_ranks() if data_parallel else (0, 1)
        if self.ranks > 1:
            _abort_job_on_uncaught_exceptions()
        self._session = None
        self._active = None       # the _Compiled the session runs
        self._state = None        # name -> uint8 CPU tensor, when no session runs
        self.steps = 0
        self.captures = 0
        self.plans_searched = 0
        # Steps whose optimizer values were computed while their forward and
        # backward passes ran (all but a new setting's first, typically).
        self.steps_overlapped = 0
        self.steps_skipped = 0  # with a GradScaler: steps whose gradients overflowed
        self._last_step_wall_us = []

    # --- the step ------------------------------------------------------------

    def step(self, inputs, target):
        """One training step on this batch: forward, loss, backward and the
        optimizer's update, run by the executor on the plan. Returns the loss
        as a 0-dim tensor (what loss.detach() would be)."""
        with self._agreed("step"):
            inputs = _tensors(inputs, "inputs")
            target = _tensors(target, "target")
            self._check_optimizer()
            # This step's step scalars (the optimizer's per-step arguments,
            # Note [Step scalars]) from the optimizer's settings now: a
            # learning-rate schedule needs no new capture; a change of the
            # step's structure does. Settings whose structure is known (all
            # but the first step's, typically) have their values computed
            # while the forward and backward passes run (below).
            groups, number = self.optimizer.param_groups, self._opt_step + 1
            key = self._shadow.structure_key(groups)
            structure, scalars = self._structures.get(key), None
            if structure is None:
                structure, scalars = self._step_values(groups, number)
                self._structures[key] = structure
        if self.ranks > 1:
            self._agree(f"step {self.steps}: batch {_signature(inputs, target)}, optimizer "
                        f"step {hashlib.sha256(repr(structure).encode()).hexdigest()[:16]}")
        c = self._compiled_for(inputs, target, structure)
        if self._active is not c:
            self._start(c)
        batch = [(tid, _raw(t).numpy()) for tid, t in zip(c.input_ids, inputs + target)]
        if scalars is not None:
            loss = self._session.step(batch, scalars)
        else:
            # The session's iteration waits for the values before the
            # optimizer's first op. A failure here ends the session, as an
            # error in its run does: this and every later call raise it
            # (the state trained since the session started is lost).
            self._session.begin(batch)
            try:
                got, scalars = self._step_values(groups, number)
                if got != structure:
                    raise Error(f"optimizer: step {number} runs other ops than an earlier step "
                                "with the same settings (a swapadvisor bug: please report it)")
            except BaseException as e:
                why = (f"{e} (step {self.steps + 1} was abandoned in its backward pass; the "
                       "session ended, and the state it trained with it)")
                self._session.abandon(why)
                raise Error(why) from None
            loss = self._session.end(scalars)
            self.steps_overlapped += 1
        self.steps += 1
        if self._session.last_step_skipped:
            # Note [Skipped steps]: the scaled gradients overflowed; as
            # GradScaler.step, the optimizer did not step.
            self.steps_skipped += 1
        else:
            self._opt_step += 1
            # The step stands for optimizer.step(): what lr_scheduler checks
            # before it warns that the optimizer never stepped (torch 1.13
            # counts the calls, 2.x sets a flag).
            if hasattr(self.optimizer, "_step_count"):
                self.optimizer._step_count += 1
            self.optimizer._opt_called = True
        return torch.tensor(loss, dtype=c.loss_dtype)

    def staged(self, batches, depth=2):
        """Iterates over batches (a DataLoader, any iterable of (inputs,
        target)) with the next `depth` loaded ahead by a thread while the
        current step runs (the step releases the GIL), as contiguous CPU
        tensors, pinned for device="cuda":

            for x, y in trainer.staged(loader):
                loss = trainer.step(x, y)

        Errors of the loader come out of the loop at the batch they stopped
        at (swapadvisor/staging.py)."""
        from .staging import staged
        return staged(batches, depth, pin=self.device == "cuda")

    def eval_step(self, inputs, target):
        """The loss of the model as trained so far on this batch, as
        `with torch.no_grad(): loss_fn(model.eval()(*inputs), target)` would
        be: the forward pass and the loss only, captured and planned on
        their own (a session of their own: switching between step() and
        eval_step() ends one session and starts the other, so evaluate a
        whole validation set at once). Returns a 0-dim tensor."""
        with self._agreed("eval_step"):
            inputs = _tensors(inputs, "inputs")
            target = _tensors(target, "target")
        self._agree(f"eval_step: batch {_signature(inputs, target)}")
        c = self._compiled_for(inputs, target, None)
        if self._active is not c:
            self._start(c)
        batch = [(tid, _raw(t).numpy()) for tid, t in zip(c.input_ids, inputs + target)]
        return torch.tensor(self._session.step(batch), dtype=c.loss_dtype)

    def _step_values(self, groups, number):
        try:
            return self._shadow.step_values(groups, number)
        except self._errors.CaptureError as e:
            raise Error(f"optimizer: {e}") from None

    def _compiled_for(self, inputs, target, structure):
        """The _Compiled for this batch's signature and the optimizer step's
        structure (None: an evaluation step), captured and planned on a miss."""
        key = (_signature(inputs, target), structure)
        c = self._compiled.get(key)
        if c is None:
            c = self._compile(inputs, target, len(inputs), train=structure is not None)
            self._compiled[key] = c
        return c

    # --- state ---------------------------------------------------------------

    def _storage_names(self):
        """For each model.state_dict() key, the name its storage has in the
        run: the first key on that storage, as the capture names it (tied
        weights are one tensor there)."""
        from swapadvisor_capture.recorder import storage_of
        first = {}
        out = {}
        for k, v in self.model.state_dict(keep_vars=True).items():
            sid = storage_of(v)._cdata
            out[k] = first.setdefault(sid, k)
        return out

    def state_dict(self):
        """The trained model state under model.state_dict()'s names (CPU
        tensors). Ends the running session; the next step starts another
        from this state."""
        state = self._current_state()
        names = self._storage_names()
        out = {}
        for k, v in self.model.state_dict().items():
            raw = state.get(names[k])
            if raw is None:
                out[k] = v.detach().clone()
                continue
            size = v.element_size()
            flat = raw[:raw.numel() // size * size].view(v.dtype)
            end = v.storage_offset() + sum((n - 1) * st for n, st in zip(v.shape, v.stride())) + 1
            if v.numel() and end > flat.numel():
                raise Error(f"state_dict: {k} reaches element {end} of its storage, which has "
                            f"{flat.numel()} in the run")
            out[k] = flat.as_strided(v.shape, v.stride(), v.storage_offset()).clone()
        return out

    def load_state_dict(self, state_dict):
        """Sets the model state (model.state_dict()'s names) the next step
        trains from; the optimizer state is kept."""
        state = self._current_state()
        own = self.model.state_dict()
        names = self._storage_names()
        for k, v in state_dict.items():
            if k not in own:
                raise Error(f"load_state_dict: {k!r} is not in the model's state_dict")
            mine = own[k]
            if tuple(v.shape) != tuple(mine.shape) or v.dtype != mine.dtype:
                raise Error(f"load_state_dict: {k} is {v.dtype} {tuple(v.shape)}, the "
                            f"model's {mine.dtype} {tuple(mine.shape)}")
            name = names[k]
            raw = state[name].clone() if name in state else _raw(mine).clone()
            size = mine.element_size()
            flat = raw[:raw.numel() // size * size].view(mine.dtype)
            flat.as_strided(mine.shape, mine.stride(), mine.storage_offset()).copy_(v.detach())
            state[name] = raw
        self._state = state

    def last_session_step_wall_us(self):
        """The executor's own time of each step (us, from its first event to
        its last) of the session that ended last (state_dict() and close()
        end one): what `swapadvisor run` reports per iteration."""
        return list(self._last_step_wall_us)

    def close(self):
        """Ends the running session (state_dict() still answers)."""
        if self._session is not None:
            self._current_state()

    # --- internals -----------------------------------------------------------

    # Note [Trainer ranks]
    # --------------------
    # Trainer(data_parallel=True) under `mpirun -np N python train.py`: every
    # rank runs the same script on its own batches (a DistributedSampler's
    # share), with the same batch shapes in the same order and the same
    # initial parameters (checked). Each rank captures its step; rank 0 plans
    # it for N ranks (plan/data_parallel.h: the gradients all-reduced) and
    # sends the plan to the others; each rank's session averages the
    # gradients over the ranks (MPI, Note [ATen data parallelism]), so every
    # rank's parameters and optimizer state stay equal, as with
    # DistributedDataParallel (buffers stay each rank's own, as with its
    # broadcast_buffers=False). The ranks agree before every step on what
    # they run (runtime::agree): a rank whose batch shape or optimizer step
    # differs, or that failed, ends the step on every rank with one message;
    # an uncaught exception on one rank ends the job (MPI_Abort) instead of
    # leaving the others waiting.

    @contextlib.contextmanager
    def _agreed(self, what):
        """Runs the block; an error in it is taken to the ranks' next
        agreement, so that every rank raises it (one rank: raised as is)."""
        try:
            yield
        except Error as e:
            if self.ranks > 1:
                _native.agree(what, str(e))  # raises on every rank
            raise

    def _agree(self, what):
        if self.ranks > 1:
            _native.agree(what)

    def _check_optimizer(self):
        # Checked when a param group's settings or parameters change (checking
        # it all takes about 0.4 ms a step on the Transformer LM).
        groups = tuple((tuple(map(id, g["params"])),
                        tuple((k, v if isinstance(v, _PLAIN) else repr(v))
                              for k, v in g.items() if k != "params"))
                       for g in self.optimizer.param_groups)
        if groups == getattr(self, "_groups", None):
            return
        try:
            self._scalars.check_optimizer(self.optimizer, self.model)
            if len(getattr(self, "_groups", ())) != len(groups):
                self._shadow = self._scalars.Shadow(self.optimizer)
        except self._errors.CaptureError as e:
            raise Error(f"optimizer: {e}") from None
        self._groups = groups

    def _scaler_copy(self, dev):
        """A copy of the user's GradScaler for a capture, its scale made (a
        GradScaler's copy keeps its scale as a number, not the tensor)."""
        if self.grad_scaler is None:
            return None
        s = copy.deepcopy(self.grad_scaler)
        s._lazy_init_scale_growth_tracker(dev)
        return s

    def _scaler_from(self, state):
        """The user's GradScaler given the trained scale and growth tracker."""
        if self.grad_scaler is None:
            return
        for name, t in (("scaler._scale", self.grad_scaler._scale),
                        ("scaler._growth_tracker", self.grad_scaler._growth_tracker)):
            raw = state.get(name)
            if raw is not None and raw.numel() >= t.element_size():
                with torch.no_grad():
                    t.copy_(raw[:t.element_size()].view(t.dtype).reshape(t.shape))

    def _current_state(self):
        """name -> uint8 tensor of every persistent tensor; ends the session."""
        if self._session is not None:
            finished = self._session.finish()
            state = {}
            for _tid, name, _kind, data in finished:
                state[name] = torch.frombuffer(bytearray(data), dtype=torch.uint8) \
                    if data else torch.empty(0, dtype=torch.uint8)
            if self._state is None:
                self._state = {}
            self._state.update(state)
            self._last_step_wall_us = list(self._session.step_wall_us)
            self._session = None
            self._active = None
            self._scaler_from(state)
        if self._state is None:
            # No step yet: the model's own state, a value per storage.
            from swapadvisor_capture.recorder import storage_bytes_view, storage_of
            self._state = {}
            names = self._storage_names()
            for k, v in self.model.state_dict(keep_vars=True).items():
                name = names[k]
                if name not in self._state:
                    s = storage_of(v)
                    self._state[name] = storage_bytes_view(s, s.device).detach().cpu().clone()
        return dict(self._state)

    def _start(self, c):
        """A session for c, from the current state (the capture's values with
        every persistent tensor replaced by name), handed over in memory."""
        entries = c.values
        if self._session is not None or self._state is not None:
            state = self._current_state()
            entries = []
            for tid, name, kind, data in c.values:
                if kind != "input" and name in state:
                    raw = state[name]
                    if raw.numel() != data.numel():
                        raise Error(f"the state's {name} has {raw.numel()} bytes, the "
                                    f"capture's {data.numel()}")
                    data = raw
                entries.append((tid, name, kind, data))
        if self.ranks > 1 and not getattr(self, "_params_agreed", False):
            h = hashlib.sha256()
            for _tid, name, kind, data in sorted(entries, key=lambda e: e[1]):
                if kind == "param":
                    h.update(name.encode())
                    h.update(data.numpy().tobytes())
            self._agree("initial parameters (every rank must start from the same: seed torch "
                        f"before building the model), sha256 {h.hexdigest()[:16]}")
            self._params_agreed = True
        self._session = _native.Session(
            c.graph, c.plan, c.exec,
            [(tid, name, kind, data.numpy()) for tid, name, kind, data in entries],
            device=self.device, threads=self.kernel_threads)
        self._active = c

    def _capture_once(self, inputs, target, check_mutations, train):
        """One step of a copy of the model (from the current state) captured;
        the user's model, optimizer and random state are left as they were."""
        cap = self._cap
        model = copy.deepcopy(self.model)
        if self._state is not None or self._session is not None:
            # The capture's values start from the trained state (its
            # optimizer state is replaced by name in _start).
            model.load_state_dict(self.state_dict())
        model.train(train)
        # The user's optimizer class and settings over the copy, at the step
        # it is at (its step scalars are checked against its shadow's).
        opt = self._scalars.like(self.optimizer, self.model, model)
        for st in opt.state.values():
            if "step" in st:
                st["step"] = torch.tensor(float(self._opt_step))
        opt.zero_grad(set_to_none=True)
        name = type(self.optimizer).__name__.lower()
        settings = {"param_groups": len(opt.param_groups)}
        dev = torch.device("cpu")
        ins = tuple(t.detach().to(dev) for t in inputs)
        tgt = tuple(t.detach().to(dev) for t in target)
        tgt = tgt[0] if len(tgt) == 1 else tgt
        rng = torch.get_rng_state()
        try:
            with contextlib.redirect_stdout(sys.stderr):
                c = cap.capture_step(model, ins, tgt, self.loss_fn, opt, name, settings, dev,
                                     self.name, "swapadvisor.Trainer",
                                     check_mutations=check_mutations,
                                     opt_step=self._opt_step + 1 if train else None,
                                     train=train,
                                     micro_batches=self.micro_batches,
                                     max_grad_norm=self.max_grad_norm,
                                     batch_dim=self.batch_dim, autocast=self.autocast,
                                     scaler=self._scaler_copy(dev) if train else None)
        except self._errors.CaptureError as e:
            raise Error(str(e)) from None
        finally:
            torch.set_rng_state(rng)
        return c

    def _compile(self, inputs, target, num_inputs, train):
        """Captures one step on a copy of the model and plans it (or takes
        the plan from the cache)."""
        cap = self._cap
        # Without the capture's mutation check first (it clones every input
        # of every op: most of a capture's time); a graph and exec file
        # already captured with it (its .checked mark in the cache) need no
        # second look, anything else is captured again with it.
        with self._agreed("capture"):
            c = self._capture_once(inputs, target, check_mutations=False, train=train)
        self.captures += 1
        graph_text = json.dumps(c.graph, separators=(",", ":"), allow_nan=False)
        exec_text = json.dumps(c.exec, separators=(",", ":"), allow_nan=False)
        gkey = hashlib.sha256(graph_text.encode()).hexdigest()
        xkey = hashlib.sha256(exec_text.encode()).hexdigest()[:16]
        prefix = os.path.join(self.cache_dir, f"{self.name}-{gkey[:16]}-{xkey}")
        os.makedirs(self.cache_dir, exist_ok=True)
        if not os.path.exists(prefix + ".checked"):
            c = self._capture_once(inputs, target, check_mutations=True, train=train)
            for suffix, doc in ((".graph.json.gz", c.graph), (".exec.json.gz", c.exec)):
                _write_whole(prefix + suffix, lambda tmp, doc=doc: cap.write_json_gz(tmp, doc))
            with open(prefix + ".checked", "w") as f:
                f.write("captured with the mutation check\n")
        # The values (the model's state and the batch): this Trainer's own,
        # kept in memory ((tensor id, name, kind, uint8 CPU tensor)).
        values = [(tid, name, kind, data.contiguous()) for tid, name, kind, data in c.values]
        graph = prefix + ".graph.json.gz"
        p = self._planning
        if self._budget is None:
            # memory_fraction is of the first captured step's peak; every
            # later plan (another batch shape, the evaluation step) gets the
            # same bytes: it is the device's budget.
            from . import stats as _stats
            self._budget = p["budget"] if p["budget"] is not None else int(
                _stats(graph)["peak_live_bytes"] * p["memory_fraction"])
        # Data-parallel: every rank captured the same graph; rank 0's plan
        # (for N ranks when training) runs on all of them.
        ranks = self.ranks if train else 1
        self._agree(f"captured graph {gkey[:16]}")
        pkey = hashlib.sha256(repr((gkey, p["device"], self._budget, ranks,
                                    p["time_budget"], p["evaluations"], p["seed"],
                                    _native.__version__)).encode()).hexdigest()[:24]
        plan_path = os.path.join(self.cache_dir, f"plan-{pkey}.json")
        with self._agreed("plan"):
            if self.rank == 0:
                self._plan_into(graph, plan_path, ranks)
        if self.ranks > 1:
            text = ""
            if self.rank == 0:
                with open(plan_path) as f:
                    text = f.read()
            text = _native.broadcast_text(text)
            if self.rank != 0:
                _write_whole(plan_path, lambda tmp: _native.write_file(tmp, text))
        ids = {t["name"]: t["id"] for t in c.graph["tensors"] if t["kind"] == "input"}
        names = ["input" if num_inputs == 1 else f"input.{i}" for i in range(num_inputs)]
        names += ["target"] if len(target) == 1 else [f"target.{i}" for i in range(len(target))]
        missing = [n for n in names if n not in ids]
        if missing:
            raise Error(f"the capture has no input tensor named {', '.join(missing)} (a batch "
                        "tensor shares storage with another, or the model does not read it)")
        loss_dtype = getattr(torch, c.exec["loss"]["value"]["dtype"], torch.float32)
        return _Compiled(graph, plan_path, prefix + ".exec.json.gz", values,
                         [ids[n] for n in names], loss_dtype)

    def _plan_into(self, graph, plan_path, ranks):
        """The plan for graph at plan_path: the cached one when it verifies,
        else one searched now (and cached)."""
        p = self._planning
        if os.path.exists(plan_path):
            try:
                _native.verify(_args.graph_source(graph, None, None, "sgd", None, "fp32"),
                               plan_path, "")
                return
            except Error:
                pass  # a stale or damaged entry: planned again
        from . import plan as _plan
        planning = _plan(graph, device=p["device"], budget=self._budget,
                         time_budget=p["time_budget"], evaluations=p["evaluations"],
                         threads=p["threads"], seed=p["seed"], progress=p["progress"],
                         data_parallel=ranks)
        _write_whole(plan_path, planning.save)
        self.plans_searched += 1

    def __del__(self):
        try:
            if getattr(self, "_session", None) is not None:
                self._session.finish()
        except Exception:
            pass
