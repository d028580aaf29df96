#!/usr/bin/python3
"""Random ops under recomputation (issue 13; Note [ATen recompute] in
src/runtime/aten/aten_kernels.h), run by CTest:

    test_recompute.py --case random-marks --cli build/swapadvisor
    test_recompute.py --case dropout-recompute --cli build/swapadvisor
    test_recompute.py --case inplace-replay --cli build/swapadvisor
    test_recompute.py --case batchnorm-recompute --cli build/swapadvisor

random-marks: the capture marks exactly the ops that draw random numbers
(tests/capture/entries/random_ops.py), in the graph (format 1.1) and the
exec file, records the seed, and its replay then draws what eager draws.

inplace-replay: an MLP whose linear layers' outputs are updated in place
by relu_ (tests/capture/entries/inplace_mlp.py),
planned at 60% of its peak live bytes (a deterministic search), where
linear layers are recomputed and their in-place updates replayed after them (Note [Update replay]), trains under `run --kernels
aten` bit for bit as the swap-only plan and as eager PyTorch within 1e-6.

batchnorm-recompute: an MLP of Linear, BatchNorm1d and ReLU(inplace=True)
layers (tests/capture/entries/bn_mlp.py): the capture marks each training
batch norm recompute_skips_updates (graph format 1.3); planned at 50% of its
peak live bytes, batch norms are recomputed without their running
statistics (Note [Recompute without updates]), and it trains under `run
--kernels aten` bit for bit as the swap-only plan and as eager PyTorch
within 1e-6, running statistics included (a second fold of the batch into
them would show there).

dropout-recompute: the Transformer LM with dropout 0.1, planned so that a
native_dropout is recomputed, trains under `run --kernels aten` bit for bit
as the swap-only plan of the same graph and as eager PyTorch; the same plan
with the random marks taken out of the exec file fails, naming the op.

Exit status 77 (CTest's SKIP_RETURN_CODE) without torch or libtorch.
"""

import argparse
import gzip
import json
import os
import sys
import tempfile

from checks import ROOT, check, must, run, verdict

sys.path.insert(0, os.path.join(ROOT, "python"))
CAPTURE = os.path.join(ROOT, "python", "swapadvisor-capture")
SLOW_LINK = os.path.join(ROOT, "bench", "v100-slow-link.json")

try:
    import torch  # noqa: F401
except ImportError:
    print("SKIP: this Python has no torch (apt-get install python3-torch python3-torchvision)")
    sys.exit(77)

from swapadvisor_capture.capture import read_json_gz  # noqa: E402


def capture(entry, prefix, extra=()):
    return json.loads(must([sys.executable, CAPTURE, entry, "-o", prefix, "--json", *extra],
                           f"capture of {entry}"))


def random_types(doc, key):
    return sorted({o[key].split(".")[0] for o in doc["ops"] if o.get("random")})


def check_random_marks(cli, tmp):
    entry = "tests/capture/entries/random_ops.py"
    prefix = os.path.join(tmp, "random_ops")
    summary = capture(entry, prefix)
    want = ["aten::bernoulli_", "aten::native_dropout", "aten::randn_like"]
    check(sorted(k.split(".")[0] for k in summary["random_ops"]) == want,
          f"the summary counts the random ops: {summary['random_ops']}")
    g = read_json_gz(prefix + ".graph.json.gz")
    x = read_json_gz(prefix + ".exec.json.gz")
    check(random_types(g, "type") == want, f"graph ops marked random: {random_types(g, 'type')}")
    check(random_types(x, "op") == want, f"exec ops marked random: {random_types(x, 'op')}")
    check(g.get("minor_version") == 1, "a graph with random ops is format 1.1")
    check(x.get("rng") == {"seed": 0}, f"the exec file records the seed: {x.get('rng')}")
    r = run([cli, "stats", prefix + ".graph.json.gz", "--json"])
    check(r.returncode == 0, f"the C++ reader accepts the graph: {r.stderr.strip()[:300]}")
    # Seeded alike, the replay draws what eager PyTorch draws.
    replay = must([sys.executable, CAPTURE, "replay", prefix, "--iterations", "3"], "replay")
    eager = json.loads(must([sys.executable, CAPTURE, "eager", entry, "--iterations", "3",
                             "--json"], "eager"))
    got = [float(line.split()[-1]) for line in replay.splitlines() if "loss" in line]
    print(f"  replay losses {got}\n  eager losses  {eager['losses']}")
    check(got == eager["losses"], "the replay's losses are eager's, bit for bit")
    check(got[0] == summary["loss"], "the first is the captured loss")


def plan_recomputing_random(cli, graph, plan, g):
    """Plans until a plan recomputes a random op (the search decides; a few
    seeds, each deterministic); returns its recompute steps."""
    for seed in (1, 2, 3, 4):
        must([cli, "plan", graph, "--device", SLOW_LINK, "--memory-fraction", "0.3",
              "--evaluations", "400", "--threads", "1", "--seed", str(seed), "--quiet",
              "-o", plan], "plan")
        steps = [s[1] for s in read_json_gz(plan)["steps"] if s[0] == "recompute"]
        random = [o for o in steps if g["ops"][o].get("random")]
        print(f"  plan seed {seed}: {len(steps)} recompute steps, {len(random)} of random ops")
        if random:
            return steps, random
    check(False, "no plan recomputes a random op")
    return [], []


def train(cli, graph, plan, values_out, exec_path=None):
    cmd = [cli, "run", graph, plan, "--kernels", "aten", "--iterations", "3", "--json",
           "--save-values", values_out]
    if exec_path:
        cmd += ["--exec", exec_path, "--values", graph.replace(".graph.json.gz", ".values.bin")]
    return run(cmd)


def check_dropout_recompute(cli, tmp):
    from swapadvisor_capture.reference import eager_train, rel_error, tensors_by_name
    entry = "examples/transformer_lm.py"
    prefix = os.path.join(tmp, "tlm")
    capture(entry, prefix, ["--entry-arg", "dropout=0.1"])
    graph = prefix + ".graph.json.gz"
    g = read_json_gz(graph)
    steps, random = plan_recomputing_random(cli, graph, prefix + ".plan.json", g)
    if not random:
        return
    r = train(cli, graph, prefix + ".plan.json", prefix + ".run.bin")
    if r.returncode != 0 and "built without libtorch" in r.stderr:
        print("SKIP: " + r.stderr.strip())
        raise SystemExit(77)
    if not check(r.returncode == 0, f"run --kernels aten: {r.stderr.strip()[:400]}"):
        return
    rj = json.loads(r.stdout)
    check(rj["aten"]["ops_recomputed"] == 3 * len(steps) and
          rj["aten"]["random_replays"] == 3 * len(random),
          f"every recompute step ran, the random ones replayed: {rj['aten']}")

    # The swap-only plan: the same draws, the same training, bit for bit.
    must([cli, "plan", graph, "--device", SLOW_LINK, "--memory-fraction", "0.3",
          "--evaluations", "400", "--threads", "1", "--no-recompute", "--quiet",
          "-o", prefix + ".swap.json"], "plan --no-recompute")
    s = train(cli, graph, prefix + ".swap.json", prefix + ".swap.bin")
    if check(s.returncode == 0, f"run of the swap-only plan: {s.stderr.strip()[:400]}"):
        sj = json.loads(s.stdout)
        print(f"  losses {rj['losses']}\n  swap-only {sj['losses']}")
        check(rj["losses"] == sj["losses"], "losses equal the swap-only plan's bit for bit")
        with open(prefix + ".run.bin", "rb") as a, open(prefix + ".swap.bin", "rb") as b:
            check(a.read() == b.read(), "final state equals the swap-only plan's bit for bit")

    # Eager PyTorch, seeded as the capture.
    losses, state = eager_train(os.path.join(ROOT, entry), 3, entry_args={"dropout": 0.1},
                                initial=prefix + ".values.bin", graph=graph)
    print(f"  eager {losses}")
    check(all(abs(a - b) <= 1e-6 * abs(b) for a, b in zip(rj["losses"], losses)),
          "losses equal eager's within 1e-6 (docs/capture.md)")
    mine = tensors_by_name(prefix + ".run.bin", graph)
    worst = max(rel_error(mine[n], state[n]) for n in mine if n in state)
    check(worst <= 1e-5, f"final state within 1e-5 of eager's (worst {worst:g})")

    # Unmarked, the random ops cannot be replayed: the run refuses.
    x = read_json_gz(prefix + ".exec.json.gz")
    random_types = {g["ops"][i]["type"] for i, op in enumerate(x["ops"]) if op.get("random")}
    print(f"  random op types: {sorted(random_types)}")
    for op in x["ops"]:
        op.pop("random", None)
    unmarked = prefix + ".unmarked.exec.json.gz"
    with gzip.open(unmarked, "wt") as f:
        json.dump(x, f)
    u = train(cli, graph, prefix + ".plan.json", prefix + ".unmarked.bin", unmarked)
    # The first random op recomputed is refused: dropout's, or the bernoulli_
    # that makes its mask (a recompute may remake it as a dead input).
    check(u.returncode == 1 and "does not mark it random" in u.stderr and
          any(t in u.stderr for t in random_types),
          f"an unmarked random op's recompute is refused: {u.stderr.strip()[:400]}")
    print(f"  unmarked: {u.stderr.strip()[:200]}")


def plan_files(cli, graph, prefix, fraction, evaluations):
    """A plan with recompute steps and a swap-only one, from the same
    deterministic search (one thread, seed 1)."""
    plan, swap = prefix + ".plan.json", prefix + ".swap.json"
    args = [graph, "--device", SLOW_LINK, "--memory-fraction", str(fraction), "--evaluations",
            str(evaluations), "--threads", "1", "--seed", "1", "--quiet"]
    must([cli, "plan", *args, "-o", plan], "plan")
    must([cli, "plan", *args, "--no-recompute", "-o", swap], "plan --no-recompute")
    return plan, swap


def trains_alike(cli, entry, prefix, graph, plan, swap, n_steps):
    """The plan (n_steps recompute steps per iteration) trains 3 iterations
    under `run --kernels aten` bit for bit as the swap-only plan, and as
    eager PyTorch within 1e-6 (losses) and 1e-5 (state). Returns the names
    of the state tensors compared with eager's."""
    from swapadvisor_capture.reference import eager_train, rel_error, tensors_by_name
    r = train(cli, graph, plan, prefix + ".run.bin")
    if r.returncode != 0 and "built without libtorch" in r.stderr:
        print("SKIP: " + r.stderr.strip())
        raise SystemExit(77)
    if not check(r.returncode == 0, f"run --kernels aten: {r.stderr.strip()[:400]}"):
        return []
    rj = json.loads(r.stdout)
    check(rj["aten"]["ops_recomputed"] == 3 * n_steps, f"every step ran: {rj['aten']}")
    s = train(cli, graph, swap, prefix + ".swap.bin")
    if check(s.returncode == 0, f"run of the swap-only plan: {s.stderr.strip()[:400]}"):
        sj = json.loads(s.stdout)
        print(f"  losses {rj['losses']}\n  swap-only {sj['losses']}")
        check(rj["losses"] == sj["losses"], "losses equal the swap-only plan's bit for bit")
        with open(prefix + ".run.bin", "rb") as a, open(prefix + ".swap.bin", "rb") as b:
            check(a.read() == b.read(), "final state equals the swap-only plan's bit for bit")
    losses, state = eager_train(os.path.join(ROOT, entry), 3, initial=prefix + ".values.bin",
                                graph=graph)
    print(f"  eager {losses}")
    check(all(abs(a - b) <= 1e-6 * abs(b) for a, b in zip(rj["losses"], losses)),
          "losses equal eager's within 1e-6 (docs/capture.md)")
    mine = tensors_by_name(prefix + ".run.bin", graph)
    compared = [n for n in mine if n in state]
    worst = max(rel_error(mine[n], state[n]) for n in compared)
    check(worst <= 1e-5, f"final state within 1e-5 of eager's (worst {worst:g})")
    return compared


def check_inplace_replay(cli, tmp):
    entry = "tests/capture/entries/inplace_mlp.py"
    prefix = os.path.join(tmp, "mlp")
    capture(entry, prefix)
    graph = prefix + ".graph.json.gz"
    g = read_json_gz(graph)
    plan, swap = plan_files(cli, graph, prefix, 0.6, 200)
    steps = [s[1] for s in read_json_gz(plan)["steps"] if s[0] == "recompute"]
    replays = sorted({g["ops"][o]["type"] for o in steps if g["ops"][o].get("updates")})
    print(f"  {len(steps)} recompute steps, replays of {replays}")
    check(replays == ["aten::relu_"], f"the plan replays relu_: {replays}")
    trains_alike(cli, entry, prefix, graph, plan, swap, len(steps))


def check_batchnorm_recompute(cli, tmp):
    entry = "tests/capture/entries/bn_mlp.py"
    prefix = os.path.join(tmp, "bn_mlp")
    summary = capture(entry, prefix)
    graph = prefix + ".graph.json.gz"
    g = read_json_gz(graph)
    # torch 1.13 records native_batch_norm; torch 2.x may record
    # _native_batch_norm_legit or _batch_norm_with_update
    bns = [o for o in g["ops"] if "batch_norm" in o["type"] and "backward" not in o["type"]
           and o["phase"] == "forward"]
    check(summary["recompute_skips_updates"] == 5, f"--json counts them: {summary}")
    check(g.get("minor_version") == 3 and len(bns) == 5 and
          all(o.get("recompute_skips_updates") and len(o["updates"]) == 2 for o in bns),
          "the capture marks the 5 training batch norms recompute_skips_updates (format 1.3): "
          f"{sorted({o['type'] for o in bns})}")
    # Whether the search's best plan recomputes a batch norm at a given
    # budget moves with the planner (at 50% it did until the steady state's
    # pass between, Note [Steady-state passes]): the first budget of these
    # whose plan does is the one checked.
    for fraction in (0.5, 0.6, 0.3, 0.4):
        plan, swap = plan_files(cli, graph, prefix, fraction, 300)
        steps = [g["ops"][s[1]] for s in read_json_gz(plan)["steps"] if s[0] == "recompute"]
        n_bn = sum(1 for o in steps if o.get("recompute_skips_updates"))
        print(f"  at {fraction:.0%} of peak: {len(steps)} recompute steps, {n_bn} of batch norms")
        if n_bn > 0:
            break
    check(n_bn > 0, "a plan recomputes batch norms")
    compared = trains_alike(cli, entry, prefix, graph, plan, swap, len(steps))
    stats = [n for n in compared if n.endswith("running_var")]
    check(len(stats) == 5, f"the running statistics are compared with eager's: {stats}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True,
                    choices=["random-marks", "dropout-recompute", "inplace-replay",
                             "batchnorm-recompute"])
    ap.add_argument("--cli", required=True, help="the swapadvisor executable")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if a.case == "random-marks":
            check_random_marks(a.cli, tmp)
        elif a.case == "inplace-replay":
            check_inplace_replay(a.cli, tmp)
        elif a.case == "batchnorm-recompute":
            check_batchnorm_recompute(a.cli, tmp)
        else:
            check_dropout_recompute(a.cli, tmp)
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
