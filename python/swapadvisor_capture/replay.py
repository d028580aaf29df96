"""A Python replay of a captured step (the exec file), op by op through
torch.ops, on any device.

It is the reference executor of the exec format: the tests use it to check
that a capture replays to the eager losses, and --profile uses it to time
every op on a GPU. Every tensor argument is rebuilt as a view (set_ with the
recorded dtype, sizes, strides and offset) of its graph tensor's storage;
every result the op creates becomes its graph tensor's storage.
"""

import statistics
import time

import torch

from .encode import decode_value, dtype_from_name
from .errors import CaptureError
from .values import as_tensor


def resolve_op(qualname):
    ns, _, rest = qualname.partition("::")
    name, _, overload = rest.rpartition(".")
    try:
        return getattr(getattr(getattr(torch.ops, ns), name), overload)
    except (AttributeError, RuntimeError) as e:
        raise CaptureError(f"this torch ({torch.__version__}) has no operator {qualname}: {e}")


class Replayer:
    def __init__(self, exec_doc, values, device="cpu"):
        self.doc = exec_doc
        self.device = torch.device(device)
        self.funcs = [resolve_op(op["op"]) for op in exec_doc["ops"]]
        self.storage_bytes = {t["id"]: t["storage_bytes"] for t in exec_doc["tensors"]}
        self.persistent = {}   # tensor id -> UntypedStorage on the device
        for tid, raw in values.items():
            buf = as_tensor(raw).to(self.device)
            self.persistent[tid] = buf.untyped_storage() if hasattr(buf, "untyped_storage") else \
                buf.storage().untyped()
        self.storages = {}
        if "rng" in exec_doc:
            # Random ops draw what the captured iteration drew (first iteration).
            torch.manual_seed(exec_doc["rng"]["seed"])

    def _storage(self, tid):
        s = self.storages.get(tid)
        if s is None:
            s = self.persistent.get(tid)
        if s is None:
            # created by an out= op that resizes it: starts empty
            e = torch.empty(0, dtype=torch.uint8, device=self.device)
            s = e.untyped_storage() if hasattr(e, "untyped_storage") else e.storage().untyped()
            self.storages[tid] = s
        return s

    def _view(self, obj):
        dtype = dtype_from_name(obj["dtype"])
        if "empty" in obj:
            return torch.empty_strided(obj["sizes"], obj["strides"], dtype=dtype, device=self.device)
        s = self._storage(obj["tensor"])
        return torch.empty(0, dtype=dtype, device=self.device).set_(
            s, obj["offset"], obj["sizes"], obj["strides"])

    def run_op(self, i):
        op = self.doc["ops"][i]
        args = decode_value(op["args"], self._view, self.device.type)
        kwargs = {k: decode_value(v, self._view, self.device.type) for k, v in op["kwargs"].items()}
        out = self.funcs[i](*args, **kwargs)
        return out

    def adopt_results(self, i, out):
        op = self.doc["ops"][i]
        results = op["results"]
        vals = [out] if len(results) == 1 else list(out)
        for enc, v in zip(results, vals):
            if enc is None:
                continue
            if isinstance(enc, list):
                for e, t in zip(enc, v):
                    if e is not None:
                        self._adopt(op, e, t)
            else:
                self._adopt(op, enc, v)

    def _adopt(self, op, enc, t):
        if (list(t.shape) != enc["sizes"] or list(t.stride()) != enc["strides"]
                or t.storage_offset() != enc["offset"]):
            raise CaptureError(
                f"op {op['id']} {op['op']}: replay produced sizes {list(t.shape)} strides "
                f"{list(t.stride())} offset {t.storage_offset()}, the capture "
                f"{enc['sizes']} {enc['strides']} {enc['offset']}")
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage().untyped()
        self.storages[enc["tensor"]] = s

    def loss_value(self):
        v = self.doc["loss"]["value"]
        return float(self._view(v).detach().float().cpu())

    def iteration(self, timer=None):
        """Runs every op in program order; returns the loss. timer(i, fn)
        runs fn and may time it."""
        self.storages = {}
        after = self.doc["loss"]["after_op"]
        loss = None
        for i in range(len(self.funcs)):
            if timer is None:
                out = self.run_op(i)
            else:
                out = timer(i, lambda i=i: self.run_op(i))
            self.adopt_results(i, out)
            if i == after:
                loss = self.loss_value()
        self.storages = {}
        return loss

    def state_bytes(self, tid):
        s = self.persistent[tid]
        return bytes(torch.empty(0, dtype=torch.uint8, device=self.device).set_(s).cpu().numpy())


def profile_ops(exec_doc, values, device="cuda", iterations=3):
    """Median time of every op over `iterations` replays (after one warm-up),
    in microseconds. On CUDA, each op is timed with events on the current
    stream; elsewhere with the wall clock."""
    rp = Replayer(exec_doc, values, device)
    n = len(exec_doc["ops"])
    samples = [[] for _ in range(n)]
    dev = torch.device(device)
    if dev.type == "cuda":
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]

        def timer(i, fn):
            starts[i].record()
            out = fn()
            ends[i].record()
            return out

        rp.iteration()  # warm-up: kernels, cuDNN/cuBLAS handles, allocator
        torch.cuda.synchronize()
        for _ in range(iterations):
            rp.iteration(timer)
            torch.cuda.synchronize()
            for i in range(n):
                samples[i].append(starts[i].elapsed_time(ends[i]) * 1000.0)
    else:
        def timer(i, fn):
            t0 = time.perf_counter()
            out = fn()
            samples[i].append((time.perf_counter() - t0) * 1e6)
            return out

        rp.iteration()
        for _ in range(iterations):
            rp.iteration(timer)
    return [statistics.median(s) for s in samples]
