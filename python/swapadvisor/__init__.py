"""swapadvisor: plan tensor swaps for training models larger than GPU memory.

The planning commands of the `swapadvisor` program as Python calls
(docs/python.md). Each returns a dict with the fields of the command's
--json output, built by the same C++ code the program prints them with:

    import swapadvisor
    r = swapadvisor.plan(model="resnet50", batch=64, device="v100-16gb",
                         memory_fraction=0.5, time_budget=3)
    print(r["iteration_us"], r["throughput_vs_ideal"])
    r.save("plan.json")
    swapadvisor.verify(model="resnet50", batch=64, plan="plan.json")

A graph is a graph file's path (format v1, .json or .json.gz; see
swapadvisor-capture) or a zoo model: model=NAME, batch=N (and optimizer,
seq_len, precision as the program's --model options). A mistake (a bad
file, a budget too small) raises swapadvisor.Error, a ValueError, with the
message the program prints after "swapadvisor: error: ".
"""

import warnings as _warnings


def _preload_mpi():
    """Under mpirun, OpenMPI's plugins look for libmpi's symbols globally;
    a Python extension's libraries load locally (RTLD_LOCAL), so MPI_Init
    would fail to open them. Loading libmpi globally first, as mpi4py does,
    avoids it (data-parallel Trainer, Note [Ranks])."""
    import ctypes
    import os
    if not (os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("PMIX_RANK")):
        return
    for name in ("libmpi.so.40", "libmpi.so"):
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
            return
        except OSError:
            pass


_preload_mpi()
from . import _args, _native  # noqa: E402


def _plugin_beside_module():
    """An installed package carries the ATen kernel plugin beside its module
    (`cmake --install --component python`); the program looks for it at
    $SA_ATEN_PLUGIN first (Note [ATen plugin])."""
    import os
    here = os.path.join(os.path.dirname(os.path.abspath(_native.__file__)),
                        "libswapadvisor_aten.so")
    if "SA_ATEN_PLUGIN" not in os.environ and os.path.exists(here):
        os.environ["SA_ATEN_PLUGIN"] = here


_plugin_beside_module()
from ._native import Error
from ._results import PlanResult, fields as _fields

Error.__module__ = __name__  # shown as swapadvisor.Error in tracebacks

__all__ = ["Error", "PlanResult", "stats", "plan", "compare", "sweep", "verify", "methods",
           "Trainer", "training_available", "training_unavailable_reason", "ranks"]


def __getattr__(name):
    # Trainer needs torch: imported on first use, so that the planning calls
    # work (and load fast) without it.
    if name == "Trainer":
        from .trainer import Trainer
        return Trainer
    raise AttributeError(f"module 'swapadvisor' has no attribute {name!r}")


def training_available():
    """Whether Trainer can run steps: this build has the ATen kernels (it
    found libtorch)."""
    return bool(_native.aten_available())


def training_unavailable_reason():
    """Why Trainer cannot run steps (empty when it can)."""
    return _native.aten_unavailable_reason()


def ranks():
    """(rank, number of ranks) of this process: under `mpirun -np N` (a
    build with MPI) it starts MPI, as Trainer(data_parallel=True) does, so
    that a script can shard its data before it makes the Trainer; (0, 1)
    otherwise."""
    return tuple(_native.init_ranks())
__version__ = _native.__version__


def _source(graph, model, batch, optimizer, seq_len, precision):
    return _args.graph_source(graph, model, batch, optimizer, seq_len, precision)


def _warn(warnings):
    # The program prints these on stderr as "swapadvisor: warning: ...".
    for w in warnings:
        _warnings.warn(w, stacklevel=3)


def _planning(graph, model, batch, optimizer, seq_len, precision, device, budget,
              memory_fraction, time_budget, evaluations, threads, seed, allocator,
              compute_scale, copy_order, arena_layout, recompute, data_parallel,
              shard_optimizer, allow_any_budget, progress):
    return _args.planning_args(
        _source(graph, model, batch, optimizer, seq_len, precision), device, budget,
        memory_fraction, time_budget, evaluations, threads, seed, allocator, compute_scale,
        copy_order, arena_layout, recompute, data_parallel, shard_optimizer, allow_any_budget,
        progress)


def methods():
    """The planning methods by name: "swapadvisor" (the search), then the
    baselines, in the order compare() returns them."""
    return list(_native.method_names())


def stats(graph=None, *, model=None, batch=None, optimizer="sgd", seq_len=None,
          precision="fp32", device="v100-16gb"):
    """`swapadvisor stats --json`: sizes, peak live bytes, the no-swap floor
    and the ideal time (the sum of op times) of a graph on a device."""
    text, warnings = _native.stats(
        _source(graph, model, batch, optimizer, seq_len, precision), _args.device(device))
    _warn(warnings)
    return _fields(text)


def plan(graph=None, *, model=None, batch=None, optimizer="sgd", seq_len=None,
         precision="fp32", device="v100-16gb", budget=None, memory_fraction=None,
         time_budget=None, evaluations=None, threads=0, seed=1, allocator="arena",
         method="swapadvisor", compute_scale=1.0, copy_order="deadline",
         arena_layout="placed", recompute=True, data_parallel=1, shard_optimizer=False,
         allow_any_budget=False, progress=False):
    """`swapadvisor plan --json`: the fastest plan found within the budget.

    budget: bytes, or a size such as "8GiB" (default: the device's memory);
    memory_fraction: the budget as a share of the graph's peak live bytes
    instead. The search stops after time_budget seconds or evaluations plans
    (default 10 s); threads=0 uses every core. Returns a PlanResult: the
    --json fields, with the plan in .plan_json and .save(path)."""
    args = _planning(graph, model, batch, optimizer, seq_len, precision, device, budget,
                     memory_fraction, time_budget, evaluations, threads, seed, allocator,
                     compute_scale, copy_order, arena_layout, recompute, data_parallel,
                     shard_optimizer, allow_any_budget, progress)
    if not isinstance(method, str):
        raise Error(f"method: expected a method's name (methods()), got {type(method).__name__}")
    text, warnings, plan_text = _native.plan(args, method)
    _warn(warnings)
    return PlanResult(_fields(text), plan_text)


def compare(graph=None, *, model=None, batch=None, optimizer="sgd", seq_len=None,
            precision="fp32", device="v100-16gb", budget=None, memory_fraction=None,
            time_budget=None, evaluations=None, threads=0, seed=1, allocator="arena",
            compute_scale=1.0, copy_order="deadline", arena_layout="placed", recompute=True,
            data_parallel=1, shard_optimizer=False, allow_any_budget=False, progress=False):
    """`swapadvisor compare --json`: every method on one graph and budget
    (the arguments are plan()'s), with the transfer lower bounds."""
    args = _planning(graph, model, batch, optimizer, seq_len, precision, device, budget,
                     memory_fraction, time_budget, evaluations, threads, seed, allocator,
                     compute_scale, copy_order, arena_layout, recompute, data_parallel,
                     shard_optimizer, allow_any_budget, progress)
    text, warnings = _native.compare(args)
    _warn(warnings)
    return _fields(text)


def sweep(graph=None, *, model=None, batch=None, optimizer="sgd", seq_len=None,
          precision="fp32", device="v100-16gb", points=10, target=None, time_budget=None,
          evaluations=None, threads=0, seed=1, allocator="arena", compute_scale=1.0,
          copy_order="deadline", arena_layout="placed", recompute=True, data_parallel=1,
          shard_optimizer=False):
    """`swapadvisor sweep --json`: % of ideal at `points` budgets from the
    smallest feasible one to the peak live bytes (time_budget is per point,
    default 5 s), and with target (a share of ideal in (0, 1]) the smallest
    budget found that reaches it."""
    a = _native.SweepArgs()
    a.planning = _planning(graph, model, batch, optimizer, seq_len, precision, device, None,
                           None, time_budget, evaluations, threads, seed, allocator,
                           compute_scale, copy_order, arena_layout, recompute, data_parallel,
                           shard_optimizer, False, False)
    a.points = _args._integer("points", points, 2, 1000)
    if target is not None:
        t = _args._number("target", target, 0, 1)
        if t == 0:
            raise Error("target: a fraction in (0, 1], e.g. 0.9 for 90%, got 0")
        a.target = t
    return _fields(_native.sweep(a))


def verify(graph=None, plan=None, *, model=None, batch=None, optimizer="sgd", seq_len=None,
           precision="fp32"):
    """`swapadvisor verify --json`: checks a plan against its graph with the
    independent verifier; raises swapadvisor.Error naming the first
    violation. plan: a PlanResult (from plan()) or a plan file's path."""
    source = _source(graph, model, batch, optimizer, seq_len, precision)
    if isinstance(plan, PlanResult):
        return _fields(_native.verify(source, "the plan", plan.plan_json))
    path = _args.path("plan", plan, "a PlanResult or a plan file's path")
    return _fields(_native.verify(source, path, ""))
