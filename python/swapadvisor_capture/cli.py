"""swapadvisor-capture: the command line (docs/capture.md).

    swapadvisor-capture ENTRY.py [-o PREFIX] [--optimizer sgd|adam|adamw] [--profile] ...
    swapadvisor-capture replay PREFIX [--iterations N] [--device D]
    swapadvisor-capture eager ENTRY.py [--iterations N] [--warmup N] [--save-on-cpu]
                              [--save-values FILE --graph G]
    swapadvisor-capture compare A.values.bin B.values.bin --graph G [--rtol R]
    swapadvisor-capture profile PREFIX [--device cuda] [--iterations N]
"""

import argparse
import json
import math
import os
import sys
import traceback

from .errors import CaptureError

# The subcommands and what each does, for --help (the capture's parser is the
# top level: `swapadvisor-capture ENTRY.py` captures).
SUBCOMMANDS = (
    ("ENTRY.py", "capture one training iteration of the entry point (options below)"),
    ("replay PREFIX", "replay a capture op by op in PyTorch; print each loss"),
    ("eager ENTRY.py", "train the entry point with plain PyTorch (the reference)"),
    ("compare A B --graph G", "compare two values files tensor by tensor"),
    ("profile PREFIX", "time every op of a capture; write time_us into its graph"),
)
_USAGE = "swapadvisor-capture ENTRY.py [options]  |  swapadvisor-capture COMMAND ..."


def _commands_help():
    width = max(len(c) for c, _ in SUBCOMMANDS)
    return ("capture one training iteration of a PyTorch model for swapadvisor "
            "(docs/capture.md)\n\ncommands (swapadvisor-capture COMMAND --help for each):\n" +
            "\n".join(f"  {c:<{width}}  {what}" for c, what in SUBCOMMANDS))


def _opt_args(p):
    p.add_argument("--optimizer", choices=["sgd", "adam", "adamw"], default=None,
                   help="default: the entry point's choice, else sgd")
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--momentum", type=float, default=None, help="sgd (default 0.9)")
    p.add_argument("--weight-decay", type=float, default=None)
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed before build()")
    p.add_argument("--entry-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="a keyword argument for the entry point's build(), e.g. batch=4 "
                        "(VALUE a Python literal, else a string; repeatable)")


def _write_time_us(graph_path, times):
    from .capture import read_json_gz, write_json_gz
    g = read_json_gz(graph_path)
    for op, t in zip(g["ops"], times):
        op["time_us"] = round(float(t), 3)
    write_json_gz(graph_path, g)


def _profile(prefix, device, iterations, quiet=False):
    import torch
    from .capture import read_json_gz
    from .replay import profile_ops
    from .values import read_values
    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        print("swapadvisor-capture: --profile: no CUDA device here; time_us not measured",
              file=sys.stderr)
        return False
    doc = read_json_gz(prefix + ".exec.json.gz")
    _, vals = read_values(prefix + ".values.bin")
    times = profile_ops(doc, vals, device, iterations)
    _write_time_us(prefix + ".graph.json.gz", times)
    if not quiet:
        print(f"profiled {len(times)} ops on {device}: {sum(times) / 1000:.3f} ms per iteration "
              f"(sum of op medians)")
    return True


def cmd_capture(argv):
    p = argparse.ArgumentParser(prog="swapadvisor-capture", usage=_USAGE,
                                description=_commands_help(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("entry", help="Python file defining build() -> (model, make_batch, loss_fn)")
    p.add_argument("-o", "--output", help="output prefix (default: the entry file's name)")
    _opt_args(p)
    p.add_argument("--device", default="cpu", help="cpu (default), meta (graph only), cuda")
    p.add_argument("--name", help="graph name (default: the entry file's name)")
    p.add_argument("--align", type=int, default=64,
                   help="round tensor bytes up to a multiple of this (default 64)")
    p.add_argument("--no-mutation-check", action="store_true",
                   help="do not compare every argument's bytes before and after each op")
    p.add_argument("--profile", action="store_true",
                   help="time every op on the GPU (CUDA) and write time_us into the graph")
    p.add_argument("--profile-device", default="cuda")
    p.add_argument("--profile-iterations", type=int, default=5)
    p.add_argument("--autocast", choices=["bf16", "fp16"], default=None,
                   help="run the forward pass under torch.autocast with this type (automatic "
                        "mixed precision; bf16 only on the CPU)")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    a = p.parse_args(argv)
    from .capture import capture
    from .entry import parse_entry_args
    entry_args = parse_entry_args(a.entry_arg)
    cap = capture(a.entry, optimizer=a.optimizer, lr=a.lr, momentum=a.momentum,
                  weight_decay=a.weight_decay, device=a.device, name=a.name, align=a.align,
                  check_mutations=not a.no_mutation_check, seed=a.seed, entry_args=entry_args,
                  autocast=a.autocast)
    prefix = a.output or os.path.splitext(os.path.basename(a.entry))[0]
    files = cap.write(prefix)
    rec = cap.recorder
    summary = {
        "name": cap.graph["name"], "ops": len(cap.graph["ops"]),
        "tensors": len(cap.graph["tensors"]), "loss": cap.loss, "files": files,
        "calls_seen": rec.seen_calls, "calls_not_recorded": sum(rec.skipped.values()),
        "flops": sum(o["flops"] for o in cap.graph["ops"]),
        "flop_formula_fallbacks": dict(rec.flop_fallbacks),
        "undeclared_writes": dict(rec.undeclared), "random_ops": dict(rec.random_ops),
        # batch norms a plan may recompute without their running statistics
        "recompute_skips_updates": sum(1 for r in rec.ops if r.skips_updates),
        "constants": rec.num_constants, "unused_state": cap.unused_state,
        "entry_args": entry_args,
    }
    for name, what in ((rec.random_ops, "random ops (replays draw the same numbers only "
                                        "from the same seed and in program order): "),
                       (rec.undeclared, "ops that wrote arguments their schema does not mark "
                                        "(recorded as updates): ")):
        if name:
            print("swapadvisor-capture: warning: " + what +
                  ", ".join(f"{k} x{v}" for k, v in sorted(name.items())), file=sys.stderr)
    if a.profile:
        if a.device == "meta":
            print("swapadvisor-capture: --profile needs values; not with --device meta",
                  file=sys.stderr)
        else:
            summary["profiled"] = _profile(prefix, a.profile_device, a.profile_iterations,
                                           quiet=a.json)
    if a.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"captured {summary['name']}: {summary['ops']} ops, {summary['tensors']} tensors, "
              f"{summary['flops'] / 1e9:.3f} GFLOP, loss {cap.loss}")
        print(f"  {rec.seen_calls} dispatcher calls, {summary['calls_not_recorded']} not recorded "
              "(views, profiler markers)")
        if rec.flop_fallbacks:
            print("  FLOPs by the elementwise default: " +
                  ", ".join(f"{k} x{v}" for k, v in sorted(rec.flop_fallbacks.items())))
        if cap.unused_state:
            print(f"  {len(cap.unused_state)} state tensors no op touched (not in the graph): " +
                  ", ".join(cap.unused_state[:5]) + (" ..." if len(cap.unused_state) > 5 else ""))
        for f in files:
            print(f"  wrote {f}")
    return 0


def cmd_replay(argv):
    p = argparse.ArgumentParser(prog="swapadvisor-capture replay",
                                description="replay a capture op by op in PyTorch (reference "
                                            "executor of the exec format)")
    p.add_argument("prefix")
    p.add_argument("--iterations", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--save-values", help="write the final persistent values here")
    a = p.parse_args(argv)
    from .capture import read_json_gz
    from .replay import Replayer
    from .values import read_values, write_values
    doc = read_json_gz(a.prefix + ".exec.json.gz")
    hdr, vals = read_values(a.prefix + ".values.bin")
    rp = Replayer(doc, vals, a.device)
    for it in range(a.iterations):
        print(f"iteration {it} loss {rp.iteration()!r}")
    if a.save_values:
        entries = [(e["tensor"], e["name"], e["kind"], rp.state_bytes(e["tensor"]))
                   for e in hdr["tensors"] if e["kind"] in ("param", "buffer", "optimizer_state")]
        write_values(a.save_values, entries, hdr.get("graph", ""))
    return 0


def cmd_eager(argv):
    p = argparse.ArgumentParser(prog="swapadvisor-capture eager",
                                description="train the entry point with plain PyTorch")
    p.add_argument("entry")
    p.add_argument("--iterations", type=int, default=1, help="timed iterations (default 1)")
    p.add_argument("--warmup", type=int, default=0,
                   help="untimed iterations before them (default 0; their losses come first)")
    p.add_argument("--device", default="cpu")
    _opt_args(p)
    p.add_argument("--save-on-cpu", action="store_true",
                   help="forward and backward inside torch.autograd.graph.save_on_cpu "
                        "(pin_memory on CUDA): saved activations live in host memory")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (default: torch's)")
    p.add_argument("--initial", help="a capture's values file: check build() made these values")
    p.add_argument("--graph", help="the capture's graph (names -> tensor ids)")
    p.add_argument("--save-values", help="write the final persistent values (needs --graph)")
    p.add_argument("--autocast", choices=["bf16", "fp16"], default=None,
                   help="forward passes under torch.autocast with this type")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.iterations < 0 or a.warmup < 0:
        raise CaptureError("--iterations and --warmup must be at least 0", entry=False)
    if a.save_values and not a.graph:
        raise CaptureError("--save-values needs --graph", entry=False)
    import torch
    from .capture import read_json_gz
    from .entry import parse_entry_args
    from .reference import eager_run
    from .values import write_values
    if a.threads:
        torch.set_num_threads(a.threads)
    run = eager_run(a.entry, a.iterations, a.optimizer, a.lr, a.momentum, a.weight_decay,
                    a.device, a.seed, a.initial, a.graph,
                    entry_args=parse_entry_args(a.entry_arg), save_on_cpu=a.save_on_cpu,
                    warmup=a.warmup, keep_state=bool(a.save_values), autocast=a.autocast)
    if a.save_values:
        g = read_json_gz(a.graph)
        entries = []
        for t in g["tensors"]:
            if t["kind"] in ("param", "buffer", "optimizer_state") and t.get("name") in run.state:
                x = run.state[t["name"]].contiguous()
                entries.append((t["id"], t["name"], t["kind"],
                                x.view(-1).view(torch.uint8) if x.numel() else x))
        write_values(a.save_values, entries, g["name"])
    median = run.median_iteration_s()
    if a.json:
        print(json.dumps({"losses": run.losses, "warmup": a.warmup, "device": a.device,
                          "save_on_cpu": a.save_on_cpu, "threads": torch.get_num_threads(),
                          "iteration_s": run.iteration_s, "median_iteration_s": median,
                          "peak_device_bytes": run.peak_device_bytes,
                          "peak_device_reserved_bytes": run.peak_device_reserved_bytes}))
    else:
        for i, l in enumerate(run.losses):
            print(f"iteration {i} loss {l!r}" + (" (warm-up)" if i < a.warmup else ""))
        if median is not None:
            print(f"median iteration {median * 1000:.3f} ms of {len(run.iteration_s)}"
                  + (f", peak device memory {run.peak_device_bytes} bytes allocated"
                     if run.peak_device_bytes is not None else "")
                  + (" (save_on_cpu)" if a.save_on_cpu else ""))
    return 0


def cmd_compare(argv):
    p = argparse.ArgumentParser(prog="swapadvisor-capture compare",
                                description="compare two values files tensor by tensor")
    p.add_argument("a")
    p.add_argument("b", help="the reference")
    p.add_argument("--graph", required=True)
    p.add_argument("--rtol", type=float, default=1e-5,
                   help="max |a-b| / max |b| allowed per tensor (default 1e-5)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    from .reference import rel_error, tensors_by_name
    ta, tb = tensors_by_name(a.a, a.graph), tensors_by_name(a.b, a.graph)
    missing = sorted(set(tb) - set(ta))
    worst, worst_name, bad = 0.0, "", []
    for n in sorted(set(ta) & set(tb)):
        e = rel_error(ta[n], tb[n])
        if e > worst:
            worst, worst_name = e, n
        if not e <= a.rtol:
            bad.append((n, e))
    res = {"tensors": len(set(ta) & set(tb)), "missing": missing, "max_rel_error": worst,
           "worst": worst_name, "over_tolerance": [n for n, _ in bad], "rtol": a.rtol,
           "ok": not bad and not missing}
    if a.json:
        print(json.dumps(res, default=lambda x: None if math.isinf(x) else x))
    else:
        print(f"{res['tensors']} tensors compared, max relative error {worst:.3g}"
              + (f" ({worst_name})" if worst_name else "")
              + (f"; {len(bad)} over {a.rtol:g}: " + ", ".join(n for n, _ in bad[:5]) if bad else "")
              + (f"; missing: {', '.join(missing[:5])}" if missing else ""))
    return 0 if res["ok"] else 1


def cmd_profile(argv):
    p = argparse.ArgumentParser(prog="swapadvisor-capture profile",
                                description="time every op of a capture and write time_us")
    p.add_argument("prefix")
    p.add_argument("--device", default="cuda")
    p.add_argument("--iterations", type=int, default=5)
    a = p.parse_args(argv)
    _profile(a.prefix, a.device, a.iterations)
    return 0


def _error(message):
    print(f"swapadvisor-capture: error: {message}", file=sys.stderr)
    return 1


def main(argv=None):
    """Runs a command. A user's mistake (CaptureError: the entry point, an
    option, a file) is one line on stderr and exit status 1, with no
    traceback (SWAPADVISOR_CAPTURE_TRACEBACK=1 shows where it was raised);
    anything else is a bug in this package: its traceback, a line saying so,
    and exit status 2 (as swapadvisor's internal errors)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    cmds = {"replay": cmd_replay, "eager": cmd_eager, "compare": cmd_compare,
            "profile": cmd_profile}
    try:
        if argv and argv[0] in cmds:
            return cmds[argv[0]](argv[1:])
        return cmd_capture(argv)
    except CaptureError as e:
        if os.environ.get("SWAPADVISOR_CAPTURE_TRACEBACK"):
            traceback.print_exc()
        return _error(e)
    except OSError as e:
        return _error(e)
    except ImportError as e:
        if e.name not in ("torch", "torchvision"):
            raise
        return _error(f"{e} (PyTorch is needed: apt-get install python3-torch "
                      "python3-torchvision)")
    except Exception:
        traceback.print_exc()
        print("swapadvisor-capture: internal error: this is a bug in swapadvisor-capture, not in "
              "your model; please report it with the traceback above", file=sys.stderr)
        return 2
