"""The dispatch-level recorder: a TorchDispatchMode that runs every ATen op
for real and writes down what it did.

Tensors are storages: every tensor argument is resolved to its storage
(UntypedStorage; the StorageImpl pointer `_cdata` is its identity, and the
recorder keeps a reference to every storage it has seen so that no address
is reused during the capture). An op

* reads the storages of its tensor arguments,
* updates (reads and writes) the storages its schema marks as written
  (`Tensor(a!)`: in-place and out= ops), plus the few that ATen writes
  without saying so (batch norm's running statistics in training), plus -
  with the mutation check on - any argument whose bytes changed,
* creates the storages of the tensors it returns that did not exist before.

An op that does none of this (a view: view, t, expand, detach, _reshape_alias,
...) is not recorded: views of one buffer are the same tensor, and every
recorded tensor argument carries its own view geometry (dtype, sizes,
strides, storage offset), so the replay needs no view ops.
"""

import collections
import math

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import flops as flops_mod
from .encode import dtype_name, encode_value
from .errors import CaptureError
from .usercode import mark_op_failure


def storage_of(t):
    if hasattr(t, "untyped_storage"):
        return t.untyped_storage()
    return t.storage().untyped()  # torch 1.13


def storage_bytes_view(storage, device):
    """A uint8 tensor over the whole storage."""
    return torch.empty(0, dtype=torch.uint8, device=device).set_(storage)


# Batch norm's running statistics, updated in training: argument names, and
# a predicate on the normalized arguments.
_RUNNING_STATS = (("running_mean", "running_var"), lambda a: bool(a.get("training")))

# Ops whose kernels write arguments that their schema does not mark as
# written (checked against torch 1.13 and 2.x): argument names, and a
# predicate on the normalized arguments.
_UNDECLARED_WRITES = {
    "native_batch_norm": _RUNNING_STATS,
    "cudnn_batch_norm": _RUNNING_STATS,
    "miopen_batch_norm": _RUNNING_STATS,
    # torch 2.x's oneDNN LSTM on the CPU: the backward reuses the forward's
    # workspace as scratch
    "mkldnn_rnn_layer_backward": (("workspace",), lambda a: True),
}

# Ops that update state their results do not depend on: batch norm in
# training reads its running statistics only to fold the batch's statistics
# into them. Graph op field recompute_skips_updates (format 1.3): a recompute
# runs such an op without them (Note [Recompute without updates]). Argument
# names, and a predicate on the normalized arguments.
_STATE_UPDATES = {
    name: _RUNNING_STATS
    for name in ("native_batch_norm", "cudnn_batch_norm", "miopen_batch_norm",
                 "_native_batch_norm_legit")
}
_STATE_UPDATES["_batch_norm_with_update"] = (_RUNNING_STATS[0], lambda a: True)

# Ops whose result depends on tensor values in a way a replay cannot follow:
# Python reads a value (and may branch on it), or an output's shape depends on
# the data. Each with why, and (after "; ") what to do instead.
_TO_PYTHON = ("; compute it with tensor ops instead (torch.where, torch.clamp, a mask "
              "multiplied in), so that Python reads no tensor value during the step")
_DATA_SHAPE = ("the output's shape depends on tensor values; keep the shapes independent of "
               "tensor values (torch.where, a mask multiplied in, indices of a fixed count)")
_DATA_DEPENDENT = {
    "_local_scalar_dense": "reads a tensor value into Python (Tensor.item() or a Python "
                           "conversion); the captured step would bake in this iteration's value"
                           + _TO_PYTHON,
    "equal": "returns a Python bool computed from tensor values" + _TO_PYTHON,
    "is_nonzero": "returns a Python bool computed from a tensor value" + _TO_PYTHON,
    "allclose": "returns a Python bool computed from tensor values" + _TO_PYTHON,
    "_is_all_true": "returns a value Python may branch on" + _TO_PYTHON,
    "_is_any_true": "returns a value Python may branch on" + _TO_PYTHON,
    "nonzero": _DATA_SHAPE,
    "argwhere": _DATA_SHAPE,
    "masked_select": _DATA_SHAPE,
    "unique_dim": _DATA_SHAPE,
    "_unique": _DATA_SHAPE,
    "_unique2": _DATA_SHAPE,
    "unique_consecutive": _DATA_SHAPE,
    "unique_dim_consecutive": _DATA_SHAPE,
    "bincount": _DATA_SHAPE,
    "set_": "swaps a tensor's storage (tensors are storages in the graph); update it in place "
            "with copy_ instead",
    "_nested_tensor_from_mask": "nested tensors are not supported; use padded strided tensors "
                                "and a mask",
}
_SCALAR_RETURN_TYPES = {"bool", "int", "float", "Scalar", "number", "complex"}

# Ops that draw random numbers (graph and exec "random": true; the runtime
# replays their draws when it recomputes them, Note [ATen recompute]): these
# names, in place or not, and any op tagged nondeterministic_seeded (torch
# 1.13 tags only some). dropout, feature_dropout and alpha_dropout reach the
# dispatcher only where they are not decomposed (on the CPU dropout becomes
# empty_like, bernoulli_, div_ and mul; on CUDA native_dropout).
_RANDOM = {
    "bernoulli", "bernoulli_", "normal", "normal_", "normal_functional", "uniform", "uniform_",
    "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm",
    "dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "native_dropout",
    "_fused_dropout", "exponential_", "geometric_", "cauchy_", "log_normal_", "random_",
    "multinomial", "rrelu", "rrelu_with_noise", "_standard_gamma", "poisson", "binomial",
    "_sample_dirichlet",
}
_SEEDED_TAG = getattr(getattr(torch, "Tag", None), "nondeterministic_seeded", None)


def draws_random(func, base, a=None):
    """Whether the op draws from a random generator. a: its arguments by
    name (normalize_args): a dropout probability of 0 (`p`, `dropout_p`) or
    `train` false draws nothing (torch 2.x tags scaled dot-product attention
    nondeterministic_seeded for its dropout_p, which examples leave at 0)."""
    a = a or {}
    if "dropout" in base or "attention" in base:  # (bernoulli_ with p 0 still draws)
        for name in ("p", "dropout_p"):
            if isinstance(a.get(name), (int, float)) and a[name] == 0:
                return False
        if a.get("train") is False:
            return False
    if base in _RANDOM or base.rstrip("_") in _RANDOM:
        return True
    return _SEEDED_TAG is not None and _SEEDED_TAG in getattr(func, "tags", ())

PHASES = ("forward", "backward", "update")
_TRANSIENT_KIND = {"forward": "activation", "backward": "gradient", "update": "temp"}


class TensorInfo:
    """One storage: a graph tensor (or an empty storage, which is not one)."""

    __slots__ = ("key", "storage", "id", "kind", "name", "nbytes", "dtype", "shape", "creator",
                 "initial")

    def __init__(self, key, storage, kind, name=""):
        self.key = key
        self.storage = storage  # keeps the StorageImpl (and its address) alive
        self.id = None          # graph tensor id, assigned at first use by a recorded op
        self.kind = kind        # graph kind, or "empty" for a storage of 0 bytes
        self.name = name
        self.nbytes = storage.nbytes()
        self.dtype = None       # informative: of the tensor that first showed it whole
        self.shape = None
        self.creator = None     # index of the recorded op that created it
        self.initial = None     # bytes at the start of the iteration (persistent, input)

    def describe(self, t):
        if self.dtype is None and t.numel() * t.element_size() == self.nbytes and self.nbytes:
            self.dtype = dtype_name(t.dtype)
            self.shape = list(t.shape)


class OpRecord:
    __slots__ = ("index", "qualname", "type", "phase", "module", "args", "kwargs", "results",
                 "inputs", "outputs", "updates", "flops", "bytes_accessed", "random",
                 "skips_updates", "dispatch", "skip_if")


def _flatten_tensors(v, out):
    if isinstance(v, torch.Tensor):
        out.append(v)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _flatten_tensors(x, out)
    return out


def normalize_args(schema, args, kwargs):
    """Schema argument name -> value, defaults filled in."""
    d = {}
    pos = 0
    for arg in schema.arguments:
        if not arg.kwarg_only and pos < len(args):
            d[arg.name] = args[pos]
            pos += 1
        elif arg.name in kwargs:
            d[arg.name] = kwargs[arg.name]
        elif arg.has_default_value():
            d[arg.name] = arg.default_value
        else:
            d[arg.name] = None
    return d


def _distinct_bytes(t):
    """Bytes a view touches: stride-0 (broadcast) dimensions count once."""
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    if t.numel() == 0:
        return 0
    return n * t.element_size()


class Recorder(TorchDispatchMode):
    """Records every ATen op of the region it is active in.

    registry: storage key -> TensorInfo for the state that exists before the
    iteration (parameters, buffers, optimizer state, batch).
    """

    def __init__(self, registry, device, check_mutations=True):
        super().__init__()
        self.registry = registry
        self.device = torch.device(device)
        self.check_mutations = check_mutations and self.device.type != "meta"
        self.phase = "forward"
        self.module_stack = []
        self.ops = []
        self.tensors = []          # TensorInfo in id order
        self.keepalive = []        # every storage seen (no address reuse)
        self.seen_calls = 0
        self.flop_fallbacks = collections.Counter()
        self.random_ops = collections.Counter()
        self.undeclared = collections.Counter()
        self.skipped = collections.Counter()
        self.num_constants = 0
        # Step scalars (step_scalars.py): while the optimizer steps, the
        # place of each op in its sequence, and .item() of its state allowed.
        self.opt_dispatch = None   # the next op's place (OpRecord.dispatch), or None
        # Note [Skipped steps]: while skipping, each op recorded reads skip_flag
        # (found_inf's TensorInfo) and is run only when it is zero.
        self.skipping = False
        self.skip_flag = None

    # -- helpers -----------------------------------------------------------
    def _where(self, qualname):
        mod = f", module {self.module_stack[-1]}" if self.module_stack and self.phase == "forward" else ""
        return f"op #{self.seen_calls} {qualname} ({self.phase}{mod})"

    def _key(self, t):
        s = storage_of(t)
        return s._cdata, s

    def _assign_id(self, info):
        if info.id is None and info.kind != "empty":
            info.id = len(self.tensors)
            self.tensors.append(info)

    def lookup(self, t):
        key, _ = self._key(t)
        return self.registry.get(key)

    # -- the mode ----------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.seen_calls += 1
        schema = func._schema
        qualname = f"{schema.name}.{schema.overload_name or 'default'}"
        ns, _, base = schema.name.partition("::")
        if ns == "profiler":
            # record_function markers: no tensor semantics
            self.skipped[qualname] += 1
            return func(*args, **kwargs)
        where = self._where(qualname)
        place = None
        if self.opt_dispatch is not None:
            place = self.opt_dispatch
            self.opt_dispatch += 1
            # The step count read into Python (torch.optim.Adam's .item()):
            # what it computes from it are step scalars.
            if base == "_local_scalar_dense" and args:
                info = self.lookup(args[0])
                if info is not None and info.kind == "optimizer_state":
                    return func(*args, **kwargs)

        for ty in types:
            if ty is not torch.Tensor and getattr(ty, "__torch_dispatch__", None) is not getattr(
                    torch.Tensor, "__torch_dispatch__", None):
                raise CaptureError(f"{where}: tensor subclass {ty.__name__} with its own "
                                   "__torch_dispatch__ cannot be captured; run the model on "
                                   "plain torch.Tensor")
        if base in ("index", "_unsafe_index") and any(
                isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8)
                for i in (args[1] if len(args) > 1 else [])):
            raise CaptureError(f"{where}: indexing with a boolean mask: " + _DATA_SHAPE)
        if base == "repeat_interleave" and schema.overload_name == "Tensor" and \
                kwargs.get("output_size") is None:
            raise CaptureError(f"{where}: repeat_interleave with tensor repeats and no "
                               "output_size: " + _DATA_SHAPE.replace("; ", " (give "
                                                                       "output_size); ", 1))
        if base in _DATA_DEPENDENT:
            raise CaptureError(f"{where}: {_DATA_DEPENDENT[base]}")
        for r in schema.returns:
            if str(r.type) in _SCALAR_RETURN_TYPES:
                raise CaptureError(f"{where}: returns a {r.type} computed from tensor data, which "
                                   "Python may branch on" + _TO_PYTHON)

        a = normalize_args(schema, args, kwargs)
        in_tensors = _flatten_tensors(list(args) + list(kwargs.values()), [])
        geometry = {}
        for t in in_tensors:
            self._check_tensor(t, where)
            geometry[id(t)] = (t.dtype, tuple(t.shape), tuple(t.stride()), t.storage_offset())

        # Writes the schema declares, and those ATen makes without declaring.
        written = {}   # storage key -> True when the op only writes (out=), False when read+write
        for arg in schema.arguments:
            if arg.alias_info is not None and arg.alias_info.is_write:
                for t in _flatten_tensors(a.get(arg.name), []):
                    k, _ = self._key(t)
                    written[k] = written.get(k, True) and bool(getattr(arg, "is_out", False))
        if base in _UNDECLARED_WRITES:
            names, pred = _UNDECLARED_WRITES[base]
            if pred(a):
                for n in names:
                    t = a.get(n)
                    if isinstance(t, torch.Tensor):
                        written[self._key(t)[0]] = False

        before = {}
        if self.check_mutations:
            for t in in_tensors:
                k, s = self._key(t)
                if k not in written and k not in before and s.nbytes() > 0:
                    before[k] = (s, s.nbytes(), storage_bytes_view(s, s.device).clone())

        try:
            out = func(*args, **kwargs)
        except Exception as e:
            if self.device.type != "meta" or not isinstance(e, (NotImplementedError, RuntimeError)):
                mark_op_failure(e, where)  # the op failed on the model's arguments
                raise
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise CaptureError(f"{where}: has no meta kernel in torch {torch.__version__} "
                               f"({first[:160]}); capture on cpu instead") from None

        for k, (s, nb, snap) in before.items():
            if s.nbytes() == nb and not torch.equal(snap, storage_bytes_view(s, s.device)):
                written[k] = False
                self.undeclared[qualname] += 1

        results = _flatten_tensors(out, [])
        in_keys = {self._key(t)[0] for t in in_tensors}
        new_keys = []
        for t in results:
            self._check_tensor(t, where)
            k, s = self._key(t)
            if k not in self.registry and k not in in_keys and k not in new_keys:
                new_keys.append(k)
        # an empty storage (e.g. an out= tensor of size 0) that this op filled: created here
        grown = [k for k in written if k in self.registry and self.registry[k].kind == "empty"
                 and self.registry[k].storage.nbytes() > 0]

        if not written and not new_keys:
            self.skipped[qualname] += 1   # a view, or an op on constants only
            return out

        # Register what the op reads that was never seen: constants made
        # outside any recorded op (torch.tensor(...) in user code).
        for t in in_tensors:
            k, s = self._key(t)
            if k not in self.registry:
                if k in written:
                    raise CaptureError(f"{where}: writes a tensor that is neither model state, "
                                       "optimizer state, the batch nor an op's result; register "
                                       "it as a buffer (module.register_buffer) or make it "
                                       "inside the step")
                info = TensorInfo(k, s, "input" if s.nbytes() > 0 else "empty",
                                  f"constant.{self.num_constants}")
                self.num_constants += 1
                info.describe(t)
                if s.nbytes() > 0 and self.device.type != "meta":
                    info.initial = storage_bytes_view(s, s.device).clone().cpu()
                self.registry[k] = info
                self.keepalive.append(s)

        rec = OpRecord()
        rec.index = len(self.ops)
        rec.qualname = qualname
        rec.type = schema.name
        rec.phase = self.phase
        rec.module = self.module_stack[-1] if self.module_stack and self.phase == "forward" else ""
        rec.random = draws_random(func, base, a)
        rec.dispatch = place
        if rec.random:
            self.random_ops[qualname] += 1

        # accesses: one per storage; a write wins over a read
        reads, updates, outputs = [], [], []
        for t in in_tensors:
            info = self.registry[self._key(t)[0]]
            info.describe(t)
            if info.kind == "empty" and info.key not in grown:
                continue
            if info.key in written:
                if info.key in grown:
                    continue
                if info not in updates:
                    updates.append(info)
            elif info not in reads:
                reads.append(info)
        for k in grown:
            info = self.registry[k]
            info.kind = _TRANSIENT_KIND[self.phase]
            info.nbytes = info.storage.nbytes()
            info.creator = rec.index
            outputs.append(info)
        for k in new_keys:
            s = None
            for t in results:
                kk, ss = self._key(t)
                if kk == k:
                    s = ss
                    break
            info = TensorInfo(k, s, _TRANSIENT_KIND[self.phase] if s.nbytes() > 0 else "empty")
            info.creator = rec.index
            self.registry[k] = info
            self.keepalive.append(s)
            if info.kind != "empty":
                outputs.append(info)
        for t in results:
            self.registry[self._key(t)[0]].describe(t)
        for info in list(updates) + reads:
            # storages that grew (resize_): the graph tensor is the largest size
            info.nbytes = max(info.nbytes, info.storage.nbytes())

        reads = [r for r in reads if r not in updates]
        if not reads and not updates and not outputs:
            self.skipped[qualname] += 1   # only empty tensors involved
            return out
        for info in reads + updates + outputs:
            self._assign_id(info)

        def enc_tensor(t):
            info = self.registry[self._key(t)[0]]
            dt, sizes, strides, offset = geometry.get(
                id(t), (t.dtype, tuple(t.shape), tuple(t.stride()), t.storage_offset()))
            if info.kind == "empty" or info.id is None:
                return {"empty": True, "dtype": dtype_name(dt), "sizes": list(sizes),
                        "strides": list(strides)}
            return {"tensor": info.id, "dtype": dtype_name(dt), "sizes": list(sizes),
                    "strides": list(strides), "offset": offset}

        def enc_result(t):
            info = self.registry[self._key(t)[0]]
            if info.creator != rec.index or info.id is None:
                return None
            return {"tensor": info.id, "dtype": dtype_name(t.dtype), "sizes": list(t.shape),
                    "strides": list(t.stride()), "offset": t.storage_offset()}

        rec.args = [encode_value(v, enc_tensor, f"{where}: argument {i}")
                    for i, v in enumerate(args)]
        rec.kwargs = {k: encode_value(v, enc_tensor, f"{where}: argument {k}")
                      for k, v in kwargs.items()}
        rec.results = self._encode_results(schema, out, enc_result)
        rec.inputs = [i.id for i in reads]
        rec.updates = [i.id for i in updates]
        rec.outputs = [i.id for i in outputs]
        # Note [Skipped steps]: an op of a step a GradScaler may skip reads
        # found_inf too (the runtime runs it only when it is zero).
        rec.skip_if = None
        if self.skipping and self.skip_flag is not None:
            self._assign_id(self.skip_flag)
            rec.skip_if = self.skip_flag.id
            if rec.skip_if not in rec.inputs + rec.updates + rec.outputs:
                rec.inputs.append(rec.skip_if)
        # Only when the running statistics are all it updates (a batch norm
        # whose output is out= or in place would read what it updates).
        rec.skips_updates = False
        if base in _STATE_UPDATES and updates and outputs:
            names, pred = _STATE_UPDATES[base]
            state = {self._key(t)[0] for t in (a.get(n) for n in names)
                     if isinstance(t, torch.Tensor)}
            rec.skips_updates = pred(a) and all(i.key in state for i in updates)

        # cost
        nbytes = 0
        for info in reads:
            nbytes += max(_distinct_bytes(t) for t in in_tensors if self._key(t)[0] == info.key)
        for info in updates:
            views = [t for t in in_tensors if self._key(t)[0] == info.key]
            b = max(_distinct_bytes(t) for t in views)
            nbytes += b if written[info.key] else 2 * b
        for info in outputs:
            nbytes += max(_distinct_bytes(t) for t in results if self._key(t)[0] == info.key)
        rec.bytes_accessed = nbytes
        try:
            rec.flops = flops_mod.op_flops(base, a, results, self.flop_fallbacks)
        except Exception as e:  # a formula that does not fit this overload
            self.flop_fallbacks[f"{base} (formula failed: {e})"] += 1
            rec.flops = float(max((t.numel() for t in results), default=0))
        self.ops.append(rec)
        return out

    def _encode_results(self, schema, out, enc_result):
        rets = schema.returns
        vals = [out] if len(rets) == 1 else list(out) if isinstance(out, (tuple, list)) else [out]
        res = []
        for r, v in zip(rets, vals):
            if isinstance(v, torch.Tensor):
                res.append(enc_result(v))
            elif isinstance(v, (list, tuple)) and all(isinstance(x, torch.Tensor) or x is None
                                                      for x in v):
                res.append([enc_result(x) if isinstance(x, torch.Tensor) else None for x in v])
            else:
                res.append(None)
        return res

    def _check_tensor(self, t, where):
        if type(t) is not torch.Tensor and type(t) is not torch.nn.Parameter:
            if getattr(type(t), "__torch_dispatch__", None) is not getattr(
                    torch.Tensor, "__torch_dispatch__", None):
                raise CaptureError(f"{where}: tensor subclass {type(t).__name__} cannot be "
                                   "captured; run the model on plain torch.Tensor")
        if t.layout != torch.strided:
            raise CaptureError(f"{where}: a {t.layout} tensor cannot be captured; use strided "
                               "(dense) tensors (e.g. .to_dense(), nn.Embedding(sparse=False))")
        if t.is_quantized:
            raise CaptureError(f"{where}: quantized tensors cannot be captured; capture the "
                               "float model")
        if getattr(t, "is_nested", False):
            raise CaptureError(f"{where}: nested tensors cannot be captured; use padded strided "
                               "tensors and a mask")
        if t.device != self.device and t.device.type != self.device.type:
            if not (t.device.type == "cpu" and t.dim() == 0):
                raise CaptureError(f"{where}: a tensor on {t.device} in a capture on "
                                   f"{self.device}; make it on the batch's device "
                                   "(device=x.device) or register it as a buffer")


def round_up(n, align):
    return int(math.ceil(n / align) * align) if align > 1 else int(n)
