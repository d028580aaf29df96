#!/usr/bin/python3
"""Mistakes in an entry point (issue 26 item 8, issue 27; docs/capture.md,
"Mistakes in an entry point"), run by CTest one case each:

    test_mistakes.py --case mistakes       # every mistake case, one after another
    test_mistakes.py --case build-tuple-2
    test_mistakes.py --case optimizer-objects

Each mistake case writes a small entry file with one mistake into a temp
dir and runs swapadvisor-capture on it (and, where it says so, `eager`):
the command must exit with status 1 and print exactly one line on stderr,

    swapadvisor-capture: error: <entry file>: <what is wrong>; <what to do>

that contains the case's expected words, and no traceback. The other cases
check the command line's --help, the line a bug in the package gets, and the
torch.optim objects an entry point may give (SGD, Adam, AdamW: trained as
torch trains them). Exit status 77 (CTest's SKIP_RETURN_CODE) without torch.
"""

import argparse
import io
import os
import sys
import tempfile
import textwrap
import traceback

from checks import ROOT, check, run, verdict

sys.path.insert(0, os.path.join(ROOT, "python"))
CAPTURE = os.path.join(ROOT, "python", "swapadvisor-capture")

try:
    import torch
except ImportError:
    print("SKIP: this Python has no torch (apt-get install python3-torch python3-torchvision)")
    sys.exit(77)

from swapadvisor_capture import cli  # noqa: E402  (after torch: skipped without it)


class Finished:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_capture(args):
    """swapadvisor-capture ARGS, as the command runs it (its own process, its
    status, its stdout and stderr), forked from this one, which has imported
    torch already: a case takes a fraction of a second instead of the 2-4 s
    of importing torch again (all the cases in one test: 47 CTest tests took
    about 190 s of CPU)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                os.chdir(ROOT)
                code = cli.main(args)
                code = 0 if code is None else code
            except SystemExit as e:  # argparse's usage errors, as the command exits
                if isinstance(e.code, str):
                    print(e.code, file=sys.stderr)
                code = 0 if e.code is None else (e.code if isinstance(e.code, int) else 1)
            except BaseException:  # what the interpreter would print
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return Finished(os.waitstatus_to_exitcode(status), out.read().decode(),
                        err.read().decode())


# A working entry point's parts, for the cases to break one at a time.
HEAD = """
import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def make_batch():
    g = torch.Generator().manual_seed(3)
    return torch.randn(5, 4, generator=g), torch.randint(0, 3, (5,), generator=g)
"""


def entry(body):
    return HEAD + textwrap.dedent(body)


# name: (entry file text, or None for a path given in args; extra command
# line arguments; words the error line must contain; also run `eager`)
MISTAKES = {
    "no-file": (None, ["no/such/entry.py"], ["no/such/entry.py: no such entry point file"],
                True),
    "directory": (None, ["tests/capture"], ["tests/capture: is a directory"], False),
    "syntax-error": ("def build(:\n    pass\n", [], ["importing it raised SyntaxError",
                                                     "entry.py:1"], False),
    "import-error": ("import not_a_module_of_anyone\n", [],
                     ["importing it raised ModuleNotFoundError",
                      "No module named 'not_a_module_of_anyone'", "entry.py:1 in <module>"],
                     True),
    "no-build": (entry("def setup():\n    return MLP(), make_batch, nn.CrossEntropyLoss()\n"),
                 [], ["defines no build()"], False),
    "build-not-function": (entry("build = (MLP(), make_batch, nn.CrossEntropyLoss())\n"), [],
                           ["build is a tuple of 3 values, not a function"], False),
    "build-tuple-2": (entry("def build():\n    return MLP(), make_batch\n"), [],
                      ["build() returned a tuple of 2 values",
                       "(model, make_batch, loss_fn)"], True),
    "build-tuple-4": (entry("""
        def build():
            return MLP(), make_batch, nn.CrossEntropyLoss(), {"name": "adam"}
        """), [], ["build() returned a tuple of 4 values", '"optimizer"'], False),
    "build-model-only": (entry("def build():\n    return MLP()\n"), [],
                         ["build() returned a MLP"], False),
    "build-raises": (entry("""
        def build():
            raise ValueError("no data set here")
        """), [], ["build() raised ValueError: no data set here", "entry.py:", "in build"],
        True),
    "build-needs-argument": (entry("""
        def build(batch):
            return MLP(), make_batch, nn.CrossEntropyLoss()
        """), [], ["build() needs the argument(s) batch", "--entry-arg batch=VALUE"], False),
    "model-class": (entry("def build():\n    return MLP, make_batch, nn.CrossEntropyLoss()\n"),
                    [], ["model is the class MLP, not a module", "MLP(...)"], False),
    "model-not-module": (entry("""
        def build():
            return (lambda x: x), make_batch, nn.CrossEntropyLoss()
        """), [], ["model is a function, not a torch.nn.Module"], False),
    "model-no-parameters": (entry("def build():\n    return nn.ReLU(), make_batch, "
                                  "nn.CrossEntropyLoss()\n"), [],
                            ["the model has no parameters"], False),
    "batch-not-function": (entry("""
        def build():
            return MLP(), make_batch(), nn.CrossEntropyLoss()
        """), [], ["make_batch is a tuple of 2 values, not a function", "lambda: (inputs"],
        True),
    "loss-class": (entry("def build():\n    return MLP(), make_batch, nn.CrossEntropyLoss\n"),
                   [], ["loss_fn is the class CrossEntropyLoss", "CrossEntropyLoss()"], False),
    "dict-missing-key": (entry("""
        def build():
            return {"model": MLP(), "make_batch": make_batch}
        """), [], ["build() returned a dict without loss_fn"], False),
    "dict-unknown-key": (entry("""
        def build():
            return {"model": MLP(), "make_batch": make_batch, "loss_fn": nn.CrossEntropyLoss(),
                    "optimiser": {"name": "sgd"}}
        """), [], ["unknown key(s) 'optimiser'", "optionally optimizer"], False),
    "batch-one-tensor": (entry("""
        def build():
            return MLP(), lambda: make_batch()[0], nn.CrossEntropyLoss()
        """), [], ["make_batch() returned a float32 tensor of shape [5, 4]",
                   "(inputs, target)"], True),
    "batch-no-target": (entry("""
        def build():
            return MLP(), lambda: (make_batch()[0], None), nn.CrossEntropyLoss()
        """), [], ["make_batch() returned no target (None)"], False),
    "inputs-dict": (entry("""
        def build():
            x, y = make_batch()
            return MLP(), lambda: ({"x": x}, y), nn.CrossEntropyLoss()
        """), [], ["make_batch()'s inputs are a dict with keys 'x'", "tuple of tensors"], True),
    "inputs-not-tensors": (entry("""
        def build():
            x, y = make_batch()
            return MLP(), lambda: ((x, x.tolist()), y), nn.CrossEntropyLoss()
        """), [], ["make_batch()'s inputs[1] is a list of 5 values, not a tensor"], False),
    "batch-raises": (entry("""
        def build():
            def batch():
                return torch.load("no-such-batch.pt")
            return MLP(), batch, nn.CrossEntropyLoss()
        """), [], ["make_batch() raised FileNotFoundError", "no-such-batch.pt", "in batch"],
        False),
    "forward-shape": (entry("""
        class Wrong(MLP):
            def __init__(self):
                super().__init__()
                self.fc2 = nn.Linear(7, 3)
        def build():
            return Wrong(), make_batch, nn.CrossEntropyLoss()
        """), [], ["the model's forward raised RuntimeError: mat1 and mat2 shapes cannot be "
                   "multiplied", "aten::addmm.default (forward, module fc2)",
                   "entry.py:13 in forward"], True),
    "forward-raises": (entry("""
        class Picky(MLP):
            def forward(self, x):
                if x.dim() != 3:
                    raise ValueError(f"expected a 3-d batch, got {x.dim()} dimensions")
                return super().forward(x)
        def build():
            return Picky(), make_batch, nn.CrossEntropyLoss()
        """), [], ["the model's forward raised ValueError: expected a 3-d batch, got 2 "
                   "dimensions", "module Picky", "in forward"], True),
    "loss-not-scalar": (entry("""
        def build():
            return MLP(), make_batch, nn.CrossEntropyLoss(reduction="none")
        """), [], ["loss_fn returned a float32 tensor of shape [5], not one element",
                   ".mean()"], True),
    "loss-tuple": (entry("""
        def build():
            ce = nn.CrossEntropyLoss()
            return MLP(), make_batch, lambda out, y: (ce(out, y), out.argmax(1))
        """), [], ["loss_fn returned a tuple of 2 values, not a tensor"], False),
    "loss-integer": (entry("""
        def build():
            return MLP(), make_batch, lambda out, y: (out.argmax(1) == y).sum()
        """), [], ["loss_fn returned a int64 tensor of shape []",
                   "floating-point"], False),
    "loss-detached": (entry("""
        def build():
            ce = nn.CrossEntropyLoss()
            return MLP(), make_batch, lambda out, y: ce(out, y).detach()
        """), [], ["a loss that does not require grad"], True),
    "loss-raises": (entry("""
        def build():
            return MLP(), make_batch, lambda out, y: nn.functional.nll_loss(out, y.float())
        """), [], ["loss_fn raised RuntimeError", "in <lambda>"], True),
    "backward-raises": (entry("""
        class NoGrad(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2
            @staticmethod
            def backward(ctx, g):
                raise NotImplementedError("NoGrad has no backward yet")
        class M(MLP):
            def forward(self, x):
                return NoGrad.apply(super().forward(x))
        def build():
            return M(), make_batch, nn.CrossEntropyLoss()
        """), [], ["the backward pass raised NotImplementedError: NoGrad has no backward yet",
                   "in backward"], True),
    "unrecordable-op": (entry("""
        class Sparse(MLP):
            def forward(self, x):
                h = torch.relu(self.fc1(x))
                return self.fc2(h[:, h.sum(0).nonzero().flatten()[:8]])
        def build():
            return Sparse(), make_batch, nn.CrossEntropyLoss()
        """), [], ["aten::nonzero.default (forward, module Sparse)",
                   "the output's shape depends on tensor values",
                   "; keep the shapes independent of tensor values"], False),
    "optimizer-name-unknown": (entry("""
        def build():
            return {"model": MLP(), "make_batch": make_batch, "loss_fn": nn.CrossEntropyLoss(),
                    "optimizer": {"name": "rmsprop", "lr": 0.01}}
        """), [], ["build()'s optimizer: unknown optimizer name 'rmsprop'",
                   "use one of sgd, adam, adamw"], True),
    "optimizer-name-case": (entry("""
        def build():
            return {"model": MLP(), "make_batch": make_batch, "loss_fn": nn.CrossEntropyLoss(),
                    "optimizer": {"name": "AdamW"}}
        """), [], ["unknown optimizer name 'AdamW' (names are lower case: 'adamw')"], False),
    "optimizer-setting-unknown": (entry("""
        def build():
            return {"model": MLP(), "make_batch": make_batch, "loss_fn": nn.CrossEntropyLoss(),
                    "optimizer": {"name": "sgd", "lr": 0.1, "nesterov": True}}
        """), [], ["sgd takes no setting 'nesterov'", "lr, momentum, weight_decay"], False),
    "optimizer-setting-value": (entry("""
        def build():
            return {"model": MLP(), "make_batch": make_batch, "loss_fn": nn.CrossEntropyLoss(),
                    "optimizer": {"name": "adam", "lr": "1e-3"}}
        """), [], ["lr is '1e-3'; give a finite number >= 0"], False),
    "optimizer-not-dict": (entry("""
        def build():
            return {"model": MLP(), "make_batch": make_batch, "loss_fn": nn.CrossEntropyLoss(),
                    "optimizer": "adam"}
        """), [], ["build()'s optimizer is a str", '{"name": "adam"'], False),
    "optimizer-class": (entry("""
        def build():
            return {"model": MLP(), "make_batch": make_batch, "loss_fn": nn.CrossEntropyLoss(),
                    "optimizer": torch.optim.Adam}
        """), [], ["build()'s optimizer is the class Adam", "Adam(model.parameters()"], False),
    "optimizer-object-unsupported": (entry("""
        def build():
            m = MLP()
            return {"model": m, "make_batch": make_batch, "loss_fn": nn.CrossEntropyLoss(),
                    "optimizer": torch.optim.RMSprop(m.parameters(), lr=0.01)}
        """), [], ["the optimizer is a RMSprop object",
                   "torch.optim.SGD, Adam and AdamW only"], True),
    "optimizer-object-nesterov": (entry("""
        def build():
            m = MLP()
            return {"model": m, "make_batch": make_batch, "loss_fn": nn.CrossEntropyLoss(),
                    "optimizer": torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9,
                                                 nesterov=True)}
        """), [], ["the SGD optimizer has nesterov=True", "use nesterov=False"], False),
    "optimizer-object-partial": (entry("""
        def build():
            m = MLP()
            return {"model": m, "make_batch": make_batch, "loss_fn": nn.CrossEntropyLoss(),
                    "optimizer": torch.optim.SGD(m.fc2.parameters(), lr=0.1)}
        """), [], ["the SGD optimizer leaves out 2 trainable parameter(s) of the model "
                   "(fc1.weight, fc1.bias)", "requires_grad=False"], False),
    "optimizer-object-groups": (entry("""
        def build():
            m = MLP()
            opt = torch.optim.Adam([{"params": m.fc1.parameters(), "lr": 1e-2},
                                    {"params": m.fc2.parameters()}], lr=1e-3)
            return {"model": m, "make_batch": make_batch, "loss_fn": nn.CrossEntropyLoss(),
                    "optimizer": opt}
        """), [], ["param groups with different settings", "give one group"], False),
}

# Mistakes on the command line, about no entry file: (args, words, start of
# the line after "error: "). TMP stands for the case's temp dir, whose
# garbage.exec.json.gz holds no gzip data.
OPTION_MISTAKES = {
    "option-momentum-adam": (["tests/capture/entries/tiny_mlp.py", "--optimizer", "adam",
                              "--momentum", "0.5", "-o", "TMP/out"],
                             ["--momentum does not apply to adam",
                              "adam takes lr, betas, eps, weight_decay"], "--"),
    "replay-not-a-capture": (["replay", "TMP/garbage"],
                             ["garbage.exec.json.gz: not gzip-compressed JSON"], "TMP/"),
}

# An entry point giving a torch.optim object (checks_optimizer_objects).
OBJECT_ENTRY = entry("""
    OPTIMIZER = {OPTIMIZER!r}
    def build():
        m = MLP()
        opt = eval(OPTIMIZER, {{"torch": torch, "params": m.parameters()}})
        return {{"model": m, "make_batch": make_batch, "loss_fn": nn.CrossEntropyLoss(),
                 "optimizer": opt}}
    """)
OBJECTS = {
    # torch.optim object: (the optimizer dict it stands for, max relative loss
    # difference to torch training with that object itself over 4 steps)
    "torch.optim.SGD(params, lr=0.1)":
        ({"name": "sgd", "lr": 0.1, "momentum": 0, "weight_decay": 0}, 0.0),
    "torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-4)":
        ({"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 1e-4}, 0.0),
    "torch.optim.Adam(params, lr=1e-2, betas=(0.8, 0.99), eps=1e-7)":
        ({"name": "adam", "lr": 1e-2, "betas": [0.8, 0.99], "eps": 1e-7, "weight_decay": 0},
         1e-6),
    "torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1)":
        ({"name": "adamw", "lr": 1e-2, "betas": [0.9, 0.999], "eps": 1e-8,
          "weight_decay": 0.1}, 1e-6),
}


def check_line(name, r, words, prefix):
    """r: a finished command: status 1, exactly one line on stderr starting
    with prefix and holding every word and a "; " (what to do)."""
    err = r.stderr
    lines = err.strip().splitlines()
    ok = check(r.returncode == 1, f"{name}: exit status 1 (got {r.returncode})")
    ok &= check("Traceback" not in err, f"{name}: no traceback")
    ok &= check(len(lines) == 1, f"{name}: one line on stderr (got {len(lines)})")
    ok &= check(err.startswith(prefix), f"{name}: the line starts with {prefix!r}")
    for w in words:
        ok &= check(w in err, f"{name}: the line says {w!r}")
    ok &= check("; " in err, f"{name}: the line says what to do after '; '")
    print(f"  {err.strip()}" if ok else f"  stderr was:\n{err}")


def check_mistake(name, tmp):
    text, args, words, eager = MISTAKES[name]
    if text is not None:
        path = os.path.join(tmp, "entry.py")
        with open(path, "w") as f:
            f.write(text)
        args = [path] + args
    prefix = f"swapadvisor-capture: error: {args[0]}: "
    check_line(name, run_capture(args + ["-o", os.path.join(tmp, "out")]), words, prefix)
    if eager:  # eager records no ops: the op is not named there
        check_line(name + " (eager)", run_capture(["eager"] + args),
                   [w for w in words if "aten::" not in w], prefix)


def check_option_mistake(name, tmp):
    args, words, start = OPTION_MISTAKES[name]
    with open(os.path.join(tmp, "garbage.exec.json.gz"), "w") as f:
        f.write("not gzip\n")
    args = [a.replace("TMP", tmp) for a in args]
    r = run_capture(args)
    check_line(name, r, words, "swapadvisor-capture: error: " + start.replace("TMP", tmp))


def check_help():
    r = run([sys.executable, CAPTURE, "--help"])
    check(r.returncode == 0, f"--help: exit status 0 (got {r.returncode})")
    for cmd in ("ENTRY.py", "replay PREFIX", "eager ENTRY.py", "compare A B --graph G",
                "profile PREFIX"):
        check(f"\n  {cmd} " in r.stdout, f"--help lists {cmd!r} on a line of its own")
    for sub in ("replay", "eager", "compare", "profile"):
        r = run([sys.executable, CAPTURE, sub, "--help"])
        check(r.returncode == 0 and f"swapadvisor-capture {sub}" in r.stdout,
              f"{sub} --help: its own usage")
    print("  " + "\n  ".join(r for r in run([sys.executable, CAPTURE, "--help"]).stdout
                             .splitlines()[:11]))


def check_bug():
    """A bug in the package: a traceback, a line saying it is a bug, status
    2. And Note [User code or bug]: an exception the recorder's own code
    raises under the user's forward is a bug, not the model's."""
    from contextlib import redirect_stderr
    from unittest import mock

    from swapadvisor_capture import cli, recorder
    from swapadvisor_capture.capture import capture

    err = io.StringIO()
    with mock.patch.object(cli, "cmd_replay", side_effect=KeyError("tensors")), \
            redirect_stderr(err):
        status = cli.main(["replay", "x"])
    text = err.getvalue()
    check(status == 2, f"a bug: exit status 2 (got {status})")
    check("Traceback" in text and "KeyError: 'tensors'" in text, "a bug: its traceback")
    check(text.strip().splitlines()[-1].startswith("swapadvisor-capture: internal error: this is "
                                                   "a bug in swapadvisor-capture"),
          "a bug: the last line says it is a bug")

    def broken(self, t, where):
        raise KeyError("recorder bug")
    with mock.patch.object(recorder.Recorder, "_check_tensor", broken):
        try:
            capture(os.path.join(ROOT, "tests/capture/entries/tiny_mlp.py"))
            check(False, "a recorder bug under the forward raises")
        except KeyError as e:
            check(str(e) == "'recorder bug'", "a recorder bug is re-raised as it is")
        except Exception as e:
            check(False, f"a recorder bug is re-raised as it is, not as {type(e).__name__}: {e}")


def check_optimizer_objects(tmp):
    """An entry point's torch.optim.SGD, Adam or AdamW object: the capture
    records the optimizer dict it stands for, and trains as torch does with
    that object (SGD bit for bit; Adam and AdamW within 1e-6, as the capture's
    capturable formulation rounds differently)."""
    import importlib.util

    from swapadvisor_capture.entry import make_batch
    from swapadvisor_capture.reference import eager_run

    for i, (expr, (want, tol)) in enumerate(OBJECTS.items()):
        path = os.path.join(tmp, f"object{i}.py")
        with open(path, "w") as f:
            f.write(OBJECT_ENTRY.format(OPTIMIZER=expr))
        prefix = os.path.join(tmp, f"object{i}")
        r = run([sys.executable, CAPTURE, path, "-o", prefix, "--json"])
        if not check(r.returncode == 0, f"{expr}: captured ({r.stderr.strip()[:300]})"):
            continue
        from swapadvisor_capture.capture import read_json_gz
        got = read_json_gz(prefix + ".exec.json.gz")["optimizer"]
        check(got == want, f"{expr}: the exec file's optimizer is {want} (got {got})")

        # torch training with the entry point's own object
        spec = importlib.util.spec_from_file_location(f"object{i}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        torch.manual_seed(0)
        built = mod.build()
        model, opt, loss_fn = built["model"], built["optimizer"], built["loss_fn"]
        x, y = make_batch(type("S", (), {"make_batch": staticmethod(built["make_batch"])}),
                          torch.device("cpu"))
        torch_losses = []
        for _ in range(4):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(*x), y)
            loss.backward()
            opt.step()
            torch_losses.append(float(loss))
        ours = eager_run(path, 4).losses
        worst = max(abs(a - b) / abs(b) for a, b in zip(ours, torch_losses))
        print(f"  {expr}: losses {ours}, torch's {torch_losses}: max relative difference "
              f"{worst:g}")
        check(worst <= tol, f"{expr}: trains as torch does (max relative loss difference "
                            f"{worst:g} > {tol:g})")
        r = run([sys.executable, CAPTURE, "replay", prefix, "--iterations", "4"])
        replayed = [float(ln.split()[-1]) for ln in r.stdout.splitlines()
                    if ln.startswith("iteration")]
        check(r.returncode == 0 and len(replayed) == 4 and
              all(abs(a - b) <= 1e-6 * abs(b) for a, b in zip(replayed, ours)),
              f"{expr}: the capture replays as eager trains ({replayed} vs {ours})")


def main():
    cases = list(MISTAKES) + list(OPTION_MISTAKES) + ["help", "bug", "optimizer-objects"]
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True, choices=cases + ["mistakes"],
                    help="one case, or mistakes: every entry point and option mistake")
    a = ap.parse_args()
    if a.case == "mistakes":
        for name in list(MISTAKES) + list(OPTION_MISTAKES):
            print(f"{name}:")
            with tempfile.TemporaryDirectory() as tmp:
                (check_mistake if name in MISTAKES else check_option_mistake)(name, tmp)
        return verdict()
    with tempfile.TemporaryDirectory() as tmp:
        if a.case in MISTAKES:
            check_mistake(a.case, tmp)
        elif a.case in OPTION_MISTAKES:
            check_option_mistake(a.case, tmp)
        elif a.case == "help":
            check_help()
        elif a.case == "bug":
            check_bug()
        else:
            check_optimizer_objects(tmp)
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
