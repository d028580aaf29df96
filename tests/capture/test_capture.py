#!/usr/bin/python3
"""Tests of swapadvisor-capture (docs/capture.md), run by CTest.

    test_capture.py --case resnet18-sgd --cli build/swapadvisor
    test_capture.py --case errors --cli build/swapadvisor

Exit status 77 (CTest's SKIP_RETURN_CODE) when this Python has no torch.
Each case captures an entry point through the command line, checks the
graph with the C++ reader (`swapadvisor stats --json`) and the format's
invariants, checks the exec file against the graph, and replays the capture
with the Python replayer against eager PyTorch.
"""

import argparse
import json
import math
import os
import sys
import tempfile

from checks import ROOT, check, run, verdict

sys.path.insert(0, os.path.join(ROOT, "python"))
CAPTURE = os.path.join(ROOT, "python", "swapadvisor-capture")

try:
    import torch  # noqa: F401
except ImportError:
    print("SKIP: this Python has no torch (apt-get install python3-torch python3-torchvision)")
    sys.exit(77)

from swapadvisor_capture.capture import read_json_gz  # noqa: E402
from swapadvisor_capture.entry import load_entry, named_state, optimizer_config, prepare  # noqa: E402
from swapadvisor_capture.values import read_values  # noqa: E402

CASES = {
    # name: (entry, optimizer, extra capture args)
    "resnet18-sgd": ("examples/resnet18.py", "sgd", []),
    "mobilenet_v2-sgd": ("examples/mobilenet_v2.py", "sgd", []),
    "transformer_lm-adam": ("examples/transformer_lm.py", "adam", []),
    "transformer_lm-sgd": ("examples/transformer_lm.py", "sgd", []),
    "lstm_lm-sgd": ("examples/lstm_lm.py", "sgd", []),
    "lstm_lm-adam": ("examples/lstm_lm.py", "adam", []),
    "tiny_mlp-sgd": ("tests/capture/entries/tiny_mlp.py", "sgd", ["--profile", "--profile-device",
                                                                  "cpu", "--profile-iterations",
                                                                  "2"]),
}

ERRORS = {
    "item_in_loss.py": "aten::_local_scalar_dense",
    "subclass.py": "tensor subclass Wrapped",
    "mask_select.py": "aten::index.Tensor",
}

def capture(entry, opt, extra, prefix):
    r = run([sys.executable, CAPTURE, entry, "--optimizer", opt, "-o", prefix, "--json"] + extra)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        raise SystemExit(f"capture of {entry} failed with status {r.returncode}")
    return json.loads(r.stdout)


def check_graph(cli, prefix, entry, opt, summary):
    gpath = prefix + ".graph.json.gz"
    r = run([cli, "stats", gpath, "--json"])
    check(r.returncode == 0, f"swapadvisor stats accepts {gpath}: {r.stderr.strip()}")
    if r.returncode != 0:
        return None
    stats = json.loads(r.stdout)
    g = read_json_gz(gpath)
    check(stats.get("ops") == len(g["ops"]) and stats.get("tensors") == len(g["tensors"]),
          "stats counts the graph's ops and tensors")
    check(summary["ops"] == len(g["ops"]), "summary op count")

    kinds = {}
    for t in g["tensors"]:
        kinds[t["kind"]] = kinds.get(t["kind"], 0) + 1
        check(t["bytes"] > 0 and t["bytes"] % 64 == 0, f"tensor {t['id']} bytes rounded to 64")
    # Parameters and optimizer state under their state_dict names.
    setup = load_entry(os.path.join(ROOT, entry))
    name, cfg = optimizer_config(setup, opt)
    model, _, _, optim = prepare(setup, "cpu", name, cfg)
    state = named_state(model, optim)
    by_storage = {}
    for n, t, kind in state:
        key = (t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage().untyped())._cdata
        by_storage.setdefault(key, (n, kind))
    want_params = {n for n, k in by_storage.values() if k == "param"}
    got_params = {t["name"] for t in g["tensors"] if t["kind"] == "param"}
    check(got_params == want_params,
          f"params are the model's distinct parameters by state_dict key "
          f"(missing {sorted(want_params - got_params)[:3]}, extra {sorted(got_params - want_params)[:3]})")
    per_param = 1 if opt == "sgd" else 3
    check(kinds.get("optimizer_state", 0) == per_param * len(want_params),
          f"{per_param} optimizer state tensor(s) per parameter")
    check(kinds.get("input", 0) >= 2, "the batch is input")
    check(kinds.get("activation", 0) > 0 and kinds.get("gradient", 0) > 0, "transients of each kind")

    order = {"forward": 0, "backward": 1, "update": 2}
    last = 0
    for op in g["ops"]:
        check("flops" in op and op["flops"] >= 0, f"op {op['id']} has flops")
        check(op.get("bytes_accessed", 0) > 0, f"op {op['id']} has bytes_accessed")
        p = order[op["phase"]]
        check(p >= last, f"op {op['id']}: phases in order")
        last = p
        acc = op["inputs"] + op["outputs"] + op["updates"]
        check(len(acc) == len(set(acc)) and acc, f"op {op['id']}: distinct, non-empty accesses")
    conv = [op for op in g["ops"] if op["type"] == "aten::convolution"]
    if conv:
        check(all(op["flops"] > 0 for op in conv), "convolutions have FLOPs")
    # Parameters are updated in the update phase, every one of them.
    updated = {t for op in g["ops"] if op["phase"] == "update" for t in op["updates"]}
    pids = {t["id"] for t in g["tensors"] if t["kind"] == "param"}
    check(pids <= updated, "every parameter is updated by the optimizer step")

    # The exec file matches the graph.
    x = read_json_gz(prefix + ".exec.json.gz")
    check(len(x["ops"]) == len(g["ops"]) and len(x["tensors"]) == len(g["tensors"]),
          "exec file has the graph's ops and tensors")
    for xo, go in zip(x["ops"], g["ops"]):
        if not check(xo["op"].rsplit(".", 1)[0] == go["type"], f"op {go['id']}: exec op is {go['type']}"):
            break
    _, vals = read_values(prefix + ".values.bin")
    start = {t["id"] for t in g["tensors"] if t["kind"] in ("param", "buffer", "optimizer_state",
                                                           "input")}
    check(set(vals) == start, "the values file holds every tensor that exists at the start")
    for tid, raw in vals.items():
        check(len(raw) == x["tensors"][tid]["storage_bytes"], f"tensor {tid}: value size")
    return g


def check_replay(prefix, entry, opt, graph, iterations=3):
    from swapadvisor_capture.reference import eager_train, rel_error, tensors_by_name
    from swapadvisor_capture.replay import Replayer
    x = read_json_gz(prefix + ".exec.json.gz")
    _, vals = read_values(prefix + ".values.bin")
    rp = Replayer(x, vals, "cpu")
    replay_losses = [rp.iteration() for _ in range(iterations)]
    eager_losses, eager_state = eager_train(os.path.join(ROOT, entry), iterations, opt,
                                            initial=prefix + ".values.bin",
                                            graph=prefix + ".graph.json.gz")
    print(f"  replay losses {replay_losses}\n  eager losses  {eager_losses}")
    for i, (a, b) in enumerate(zip(replay_losses, eager_losses)):
        check(abs(a - b) <= 1e-6 * abs(b), f"iteration {i}: replay loss {a} == eager {b}")
    check(math.isclose(replay_losses[0], x["loss"]["captured"], rel_tol=1e-6),
          "the first replayed loss is the captured loss")
    worst = 0.0
    import torch
    from swapadvisor_capture.encode import dtype_from_name
    for t in graph["tensors"]:
        if t["kind"] in ("param", "buffer", "optimizer_state") and t.get("name") in eager_state:
            got = torch.frombuffer(bytearray(rp.state_bytes(t["id"])), dtype=torch.uint8)
            got = got.view(dtype_from_name(t["dtype"])).view(eager_state[t["name"]].shape)
            worst = max(worst, rel_error(got, eager_state[t["name"]]))
    print(f"  final state: max relative error {worst:g}")
    check(worst <= 1e-5, f"final state within 1e-5 of eager (worst {worst:g})")


def check_errors(tmp):
    for entry, needle in ERRORS.items():
        r = run([sys.executable, CAPTURE, os.path.join("tests/capture/entries", entry), "-o",
                 os.path.join(tmp, "err")])
        check(r.returncode == 1, f"{entry}: capture fails with status 1 (got {r.returncode})")
        check(needle in r.stderr and "Traceback" not in r.stderr,
              f"{entry}: the error names {needle}: {r.stderr.strip()[:300]}")
        print(f"  {entry}: {r.stderr.strip()[:160]}")


def check_meta(cli, tmp):
    prefix = os.path.join(tmp, "transformer_lm-meta")
    r = run([sys.executable, CAPTURE, "examples/transformer_lm.py", "--device", "meta", "-o", prefix])
    check(r.returncode == 0, f"meta capture: {r.stderr.strip()[:300]}")
    check(not os.path.exists(prefix + ".values.bin"), "meta capture writes no values")
    r = run([cli, "stats", prefix + ".graph.json.gz", "--json"])
    check(r.returncode == 0, f"stats accepts the meta capture: {r.stderr.strip()[:300]}")


def eager_json(args):
    r = run([sys.executable, CAPTURE, "eager"] + args + ["--json"])
    if not check(r.returncode == 0, f"eager {' '.join(args)}: {r.stderr.strip()[:300]}"):
        return None
    return json.loads(r.stdout)


def check_entry_args_and_eager(cli, tmp):
    """--entry-arg (capture and eager), and eager's --warmup, timing and
    --save-on-cpu."""
    from swapadvisor_capture.entry import parse_entry_args
    from swapadvisor_capture.errors import CaptureError
    check(parse_entry_args(["batch=4", "lr=0.5", "name=abc", "t=(1, 2)", "s='x'", "f=False"]) ==
          {"batch": 4, "lr": 0.5, "name": "abc", "t": (1, 2), "s": "x", "f": False},
          "parse_entry_args: literals, else strings")
    for bad in ("batch", "=4", "1x=2"):
        try:
            parse_entry_args([bad])
            check(False, f"parse_entry_args rejects {bad!r}")
        except CaptureError:
            pass

    entry = "tests/capture/entries/sized_mlp.py"
    sized = ["--entry-arg", "batch=3", "--entry-arg", "hidden=8"]
    prefix = os.path.join(tmp, "sized_mlp")
    summary = capture(entry, "sgd", sized, prefix)
    check(summary["entry_args"] == {"batch": 3, "hidden": 8}, "the summary names the entry args")
    g = read_json_gz(prefix + ".graph.json.gz")
    shapes = {t.get("name"): t.get("shape") for t in g["tensors"]}
    check(shapes.get("input") == [3, 6] and shapes.get("0.weight") == [8, 6],
          f"build(batch=3, hidden=8) was captured (input {shapes.get('input')}, "
          f"0.weight {shapes.get('0.weight')})")
    check("batch=3" in g["source"], "the graph's source names the entry args")
    r = run([cli, "stats", prefix + ".graph.json.gz", "--json"])
    check(r.returncode == 0, f"stats accepts the capture: {r.stderr.strip()[:300]}")

    # Eager from the captured values (--initial checks build() made them).
    plain = eager_json([entry, "--optimizer", "sgd", "--iterations", "2", "--warmup", "1",
                        "--initial", prefix + ".values.bin", "--graph", prefix + ".graph.json.gz"]
                       + sized)
    if plain:
        check(len(plain["losses"]) == 3 and len(plain["iteration_s"]) == 2,
              "eager --warmup 1 --iterations 2: 3 losses, 2 times")
        check(all(t > 0 for t in plain["iteration_s"]) and
              min(plain["iteration_s"]) <= plain["median_iteration_s"] <= max(plain["iteration_s"]),
              "eager: positive times and their median")
        check(plain["peak_device_bytes"] is None and plain["warmup"] == 1 and
              plain["save_on_cpu"] is False, "eager on cpu: no device peak")
        check(math.isclose(plain["losses"][0], summary["loss"], rel_tol=1e-6),
              f"eager's first loss {plain['losses'][0]} is the captured {summary['loss']}")
    soc = eager_json([entry, "--optimizer", "sgd", "--iterations", "2", "--warmup", "1",
                      "--save-on-cpu"] + sized)
    if plain and soc:
        print(f"  losses {plain['losses']}, with save_on_cpu {soc['losses']}")
        check(soc["save_on_cpu"] is True and soc["losses"] == plain["losses"],
              "save_on_cpu trains exactly as plain eager on the CPU")
    # Without the args the initial values do not match; an unknown arg is an error.
    r = run([sys.executable, CAPTURE, "eager", entry, "--initial", prefix + ".values.bin",
             "--graph", prefix + ".graph.json.gz"])
    check(r.returncode == 1 and "--entry-arg" in r.stderr and "Traceback" not in r.stderr,
          f"eager without the entry args: the initial values differ: {r.stderr.strip()[:300]}")
    r = run([sys.executable, CAPTURE, entry, "--entry-arg", "depth=3", "-o", prefix])
    check(r.returncode == 1 and "takes no argument depth" in r.stderr
          and "Traceback" not in r.stderr, f"an unknown entry arg is named: {r.stderr.strip()[:300]}")
    print(f"  {r.stderr.strip()[:160]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True,
                    help=", ".join(list(CASES) + ["errors", "meta", "entry-args"]))
    ap.add_argument("--cli", required=True, help="the swapadvisor executable")
    ap.add_argument("--keep", help="write the capture under this prefix instead of a temp dir")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if a.case == "errors":
            check_errors(tmp)
        elif a.case == "meta":
            check_meta(a.cli, tmp)
        elif a.case == "entry-args":
            check_entry_args_and_eager(a.cli, tmp)
        else:
            entry, opt, extra = CASES[a.case]
            prefix = a.keep or os.path.join(tmp, a.case)
            summary = capture(entry, opt, extra, prefix)
            print(f"  {summary['ops']} ops, {summary['tensors']} tensors, loss {summary['loss']}")
            check(not summary["undeclared_writes"],
                  f"no undeclared writes: {summary['undeclared_writes']}")
            check(not summary["random_ops"], "no random ops in the examples")
            g = check_graph(a.cli, prefix, entry, opt, summary)
            if g is not None:
                if "--profile" in extra:
                    check(all("time_us" in op for op in g["ops"]), "--profile wrote time_us")
                check_replay(prefix, entry, opt, g)
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
