"""Keyword arguments to the native module's argument structs.

The command line checks its options with CLI11 before they reach the C++
planner; these are the same checks for keyword arguments, so that a bad
value is a swapadvisor.Error naming the keyword, not a crash or a silent
default. The limits are the command line's (exported by the module).
"""

import math
import os

from . import _native
from ._native import Error

_OPTIMIZERS = ("sgd", "sgd-plain", "adam")
_PRECISIONS = ("fp32", "bf16", "fp16")
_ALLOCATORS = ("arena", "size-class")
_COPY_ORDERS = ("deadline", "release")
_ARENA_LAYOUTS = ("placed", "packed")


def _one_of(name, value, allowed):
    if value not in allowed:
        raise Error(f"{name}: expected one of {', '.join(allowed)}, got {value!r}")
    return value


def _integer(name, value, lo, hi):
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise Error(f"{name}: expected a whole number from {lo} to {hi}, got {value!r}")
    return value


def _number(name, value, lo, hi):
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or not lo <= value <= hi):
        raise Error(f"{name}: expected a number from {lo:g} to {hi:g}, got {value!r}")
    return float(value)


def path(name, value, what="a file's path"):
    """A str path from a str or an os.PathLike (not bytes: the C++ side
    takes text)."""
    if isinstance(value, (str, os.PathLike)):
        p = os.fspath(value)
        if isinstance(p, str):
            return p
    raise Error(f"{name}: expected {what}, got {type(value).__name__}")


def device(value):
    """A built-in device's name or a profile file's path (--device)."""
    return path("device", value, "a device name or a profile file's path")


def graph_source(graph, model, batch, optimizer, seq_len, precision):
    """A GraphSource: a graph file's path, or a zoo model (model=, batch=)."""
    s = _native.GraphSource()
    if graph is not None:
        s.file = path("graph", graph, "a graph file's path")
    if model is not None:
        s.model = str(model)
    if batch is not None:
        s.batch = _integer("batch", batch, 1, 2**31 - 1)
    s.optimizer = _one_of("optimizer", optimizer, _OPTIMIZERS)
    if seq_len is not None:
        s.seq_len = _integer("seq_len", seq_len, 1, 2**31 - 1)
    s.precision = _one_of("precision", precision, _PRECISIONS)
    return s


def planning_args(source, device_name, budget, memory_fraction, time_budget, evaluations,
                  threads, seed, allocator, compute_scale, copy_order, arena_layout,
                  recompute, data_parallel, shard_optimizer, allow_any_budget, progress):
    """A PlanningArgs, as the command line's planning options would give it."""
    a = _native.PlanningArgs()
    a.source = source
    a.device = device(device_name)
    if budget is not None and memory_fraction is not None:
        raise Error("give budget or memory_fraction, not both")
    if budget is not None:
        # Bytes as a number, or a size as the command line reads it ("8GiB").
        if isinstance(budget, int) and not isinstance(budget, bool):
            budget = str(budget)
        if not isinstance(budget, str) or not budget:
            raise Error(f"budget: expected bytes or a size such as '8GiB', got {budget!r}")
        a.memory = budget
    if memory_fraction is not None:
        a.memory_fraction = _number("memory_fraction", memory_fraction, 1e-6, 1e6)
    if time_budget is not None:
        a.time_budget_s = _number("time_budget", time_budget, 0, _native.MAX_TIME_BUDGET_S)
    if evaluations is not None:
        a.evaluations = _integer("evaluations", evaluations, 0, 2**63 - 1)
    a.threads = _integer("threads", threads, 0, _native.MAX_THREADS)
    a.seed = _integer("seed", seed, 0, 2**64 - 1)
    a.allocator = _one_of("allocator", allocator, _ALLOCATORS)
    a.compute_scale = _number("compute_scale", compute_scale, 1e-6, 1e6)
    a.copy_order = _one_of("copy_order", copy_order, _COPY_ORDERS)
    a.arena_layout = _one_of("arena_layout", arena_layout, _ARENA_LAYOUTS)
    a.no_recompute = not recompute
    a.data_parallel = _integer("data_parallel", data_parallel, 1, _native.MAX_RANKS)
    a.shard_optimizer = bool(shard_optimizer)
    a.any_budget = bool(allow_any_budget)
    a.quiet = not progress
    return a
