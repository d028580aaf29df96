#!/usr/bin/python3
"""swapadvisor.Trainer (python/swapadvisor/trainer.py, docs/python.md):

    test_trainer.py --python BUILD/python --case equivalence

Cases:
  equivalence  an MLP with batch norm trained 12 steps from a DataLoader (a
               different batch each step, the 7th smaller), SGD with
               momentum and weight decay, at 60% of the step's peak: every
               loss and the final state_dict bit-equal to eager PyTorch
               running the same loop; a second Trainer on the same cache
               plans nothing (cache hits); AdamW bit-equal too.
  schedule     SGD (momentum; Nesterov), AdamW with two param groups and
               Adam, each with a learning-rate schedule (StepLR,
               ExponentialLR, CosineAnnealingLR, OneCycleLR, which changes
               beta1 too): bit-equal to eager with one capture, the
               schedule's values given as step scalars.
  accumulate   AdamW + cosine schedule + gradient clipping + 2 micro-batches,
               SGD with clipping that bites + 4 micro-batches, and AdamW under
               bf16 autocast: 8 steps bit-equal to the eager loop Trainer's
               docstring gives.
  eval         eval_step between training steps equals eager's model.eval()
               under no_grad, and training goes on as eager's.
  state        tied weights (one tensor under two state_dict names) and
               load_state_dict between steps, as eager PyTorch.
  staged       Trainer.staged(loader): the same losses and state as the
               plain loop, batches loaded while steps run (a loader that
               waits), the loader's error raised at its batch, an early
               break that stops the loading thread.
  fp16         fp16 autocast with a GradScaler whose first steps overflow:
               the losses, the skipped steps, the state and the scale as
               eager's (torch 2.3 and later: skipped, 77, before).
  mistakes     what a user can get wrong is a swapadvisor.Error with one
               clear line.
Exit status 77 without torch.
"""

import argparse
import copy
import os
import sys
import tempfile
import time

try:
    import torch
except ImportError:
    print("SKIP: this Python has no torch")
    sys.exit(77)

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.bn = torch.nn.BatchNorm1d(64)
        self.fc2 = torch.nn.Linear(64, 64)
        self.out = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.fc1(x)))
        x = torch.relu(self.fc2(x))
        return self.out(x)


def loader(n=100, batch=16, seed=7):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 32, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    ds = torch.utils.data.TensorDataset(x, y)
    return torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=False)


def eager(model, opt, loss_fn, batches, sched=None):
    losses = []
    for x, y in batches:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        losses.append(loss.detach())
    return losses


def eager_full(model, opt, loss_fn, batches, sched=None, micro_batches=1, max_grad_norm=None,
               autocast=None):
    """The step Trainer's docstring gives: micro-batches, clipping, a schedule."""
    losses = []
    for x, y in batches:
        opt.zero_grad(set_to_none=True)
        loss = None
        for xc, yc in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast == "bf16"):
                part = loss_fn(model(xc), yc)
            if micro_batches > 1:
                part = part / micro_batches
            loss = part.detach() if loss is None else loss + part.detach()
            part.backward()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        opt.step()
        if sched:
            sched.step()
        losses.append(loss)
    return losses


def twins(seed):
    """Two equal Nets: one for eager PyTorch, one for the Trainer."""
    torch.manual_seed(seed)
    ref = Net()
    mine = Net()
    mine.load_state_dict(ref.state_dict())
    return ref, mine


def same_state(a, b):
    bad = [k for k in a if not torch.equal(a[k], b[k])]
    return bad


def case_equivalence(sa, cache):
    ref, mine = twins(0)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = [b for _ in range(2) for b in loader()]  # 2 epochs of 7 batches, the 7th of 4
    batches = batches[:12]

    def sgd(params):
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-3)
    want = eager(ref, sgd(ref.parameters()), loss_fn, batches)
    initial = {k: v.clone() for k, v in mine.state_dict().items()}
    t0 = time.time()
    tr = sa.Trainer(mine, sgd(mine.parameters()), loss_fn, memory_fraction=0.6,
                    cache_dir=cache, time_budget=2, threads=1)
    got = [tr.step(x, y) for x, y in batches]
    first = time.time() - t0
    check(all(torch.equal(a, b) for a, b in zip(got, want)),
          f"12 losses through the Trainer (SGD, momentum, weight decay) equal eager's bit for "
          f"bit (first {got[0].item():.7f}, last {got[-1].item():.7f} / {want[-1].item():.7f})")
    check(tr.captures == 2 and tr.plans_searched == 2,
          f"two batch shapes: 2 captures, 2 searches (got {tr.captures}, {tr.plans_searched})")
    bad = same_state(tr.state_dict(), ref.state_dict())
    check(not bad, "the final state_dict equals eager's" + (f" (differs: {bad})" if bad else ""))
    check(not same_state(mine.state_dict(), initial),
          "the user's model is left as it was (the Trainer trains its own state)")

    # The second run of the same script: the plans come from the cache.
    again = Net()
    again.load_state_dict(initial)
    t0 = time.time()
    tr2 = sa.Trainer(again, sgd(again.parameters()), loss_fn, memory_fraction=0.6,
                     cache_dir=cache, time_budget=2, threads=1)
    got2 = [tr2.step(x, y) for x, y in batches]
    second = time.time() - t0
    check(tr2.plans_searched == 0, f"a second Trainer searched {tr2.plans_searched} plans (0: "
          "cache hits)")
    check(all(torch.equal(a, b) for a, b in zip(got2, want)), "and trains the same")
    print(f"     first run {first:.2f} s, second {second:.2f} s")

    # AdamW: its step scalars (bias corrections) given anew at every step.
    ref, mine = twins(0)

    def adamw(params):
        return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)
    want = eager(ref, adamw(ref.parameters()), loss_fn, batches)
    tr = sa.Trainer(mine, adamw(mine.parameters()), loss_fn, memory_fraction=0.6,
                    cache_dir=cache, time_budget=2, threads=1)
    got = [tr.step(x, y) for x, y in batches]
    check(all(torch.equal(a, b) for a, b in zip(got, want)),
          "AdamW: 12 losses equal eager's bit for bit")
    bad = same_state(tr.state_dict(), ref.state_dict())
    check(not bad, "AdamW: the final state_dict equals eager's" + (f" (differs: {bad})" if bad
                                                                   else ""))


def case_schedule(sa, cache):
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = list(loader(n=96, batch=16))  # 6 equal batches

    def groups(m):
        """No weight decay on biases and batch norm: two param groups."""
        decay = [p for n, p in m.named_parameters() if n.endswith("weight") and p.dim() > 1]
        rest = [p for n, p in m.named_parameters() if not (n.endswith("weight") and p.dim() > 1)]
        return [{"params": decay}, {"params": rest, "weight_decay": 0.0}]

    runs = [
        ("SGD (momentum) + StepLR",
         lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9),
         lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5)),
        ("SGD (Nesterov, dampening 0) + ExponentialLR",
         lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                                   weight_decay=1e-4),
         lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.8)),
        ("AdamW, two param groups + CosineAnnealingLR",
         lambda m: torch.optim.AdamW(groups(m), lr=3e-3, weight_decay=0.05),
         lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=6)),
        ("Adam (weight decay, betas, eps) + OneCycleLR (lr and beta1 change every step)",
         lambda m: torch.optim.Adam(m.parameters(), lr=1e-3, betas=(0.8, 0.99), eps=1e-6,
                                    weight_decay=1e-3),
         lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=1e-2, total_steps=6)),
    ]
    for i, (what, make_opt, make_sched) in enumerate(runs):
        ref, mine = twins(1 + i)
        ref_opt = make_opt(ref)
        want = eager(ref, ref_opt, loss_fn, batches, make_sched(ref_opt))
        opt = make_opt(mine)
        my_sched = make_sched(opt)
        tr = sa.Trainer(mine, opt, loss_fn, memory_fraction=0.6, cache_dir=cache, time_budget=2,
                        threads=1)
        got = []
        for x, y in batches:
            got.append(tr.step(x, y))
            my_sched.step()
        check(all(torch.equal(a, b) for a, b in zip(got, want)),
              f"{what}: 6 losses equal eager's bit for bit")
        # The schedule's values are step scalars: one capture serves every step.
        check(tr.captures == 1 and tr.plans_searched <= 1,
              f"{what}: 1 capture, at most 1 search (got {tr.captures}, {tr.plans_searched})")
        # Settings of a known structure: the values of steps 2-6 computed
        # while their forward and backward passes ran.
        check(tr.steps_overlapped == 5,
              f"{what}: 5 steps with their values computed during the step "
              f"(got {tr.steps_overlapped})")
        bad = same_state(tr.state_dict(), ref.state_dict())
        check(not bad, f"{what}: the final state_dict equals eager's" +
              (f" (differs: {bad})" if bad else ""))


def case_accumulate(sa, cache):
    """AdamW + a cosine schedule + clipping + 2 micro-batches (issue 27's
    recipe), and clipping that bites (a small max norm) with SGD."""
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = list(loader(n=128, batch=16))  # 8 batches
    runs = [
        ("AdamW + cosine + clip 1.0 + 2 micro-batches",
         lambda m: torch.optim.AdamW(m.parameters(), lr=3e-3, weight_decay=0.05),
         lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=8), 2, 1.0),
        ("SGD + clip 0.05 (every step clipped) + 4 micro-batches",
         lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9),
         lambda o: None, 4, 0.05, None),
        ("AdamW + bf16 autocast + clip 1.0 + 2 micro-batches",
         lambda m: torch.optim.AdamW(m.parameters(), lr=3e-3),
         lambda o: None, 2, 1.0, "bf16"),
    ]
    runs[0] += (None,)
    for i, (what, make_opt, make_sched, mb, clip, amp) in enumerate(runs):
        ref, mine = twins(10 + i)
        ref_opt = make_opt(ref)
        want = eager_full(ref, ref_opt, loss_fn, batches, make_sched(ref_opt), mb, clip, amp)
        opt = make_opt(mine)
        sched = make_sched(opt)
        tr = sa.Trainer(mine, opt, loss_fn, memory_fraction=0.6, cache_dir=cache, time_budget=2,
                        threads=1, micro_batches=mb, max_grad_norm=clip, autocast=amp)
        got = []
        for x, y in batches:
            got.append(tr.step(x, y))
            if sched:
                sched.step()
        check(all(torch.equal(a, b) for a, b in zip(got, want)),
              f"{what}: 8 losses equal eager's bit for bit (last {got[-1].item():.7f} / "
              f"{want[-1].item():.7f})")
        bad = same_state(tr.state_dict(), ref.state_dict())
        check(not bad, f"{what}: the final state_dict equals eager's" +
              (f" (differs: {bad})" if bad else ""))
        check(tr.captures == 1, f"{what}: one capture (got {tr.captures})")


def case_eval(sa, cache):
    """eval_step between training steps: the loss of the model as trained so
    far (batch norm on its running statistics, no update), as eager's
    model.eval() under torch.no_grad(); training goes on after it."""
    ref, mine = twins(20)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = list(loader(n=96, batch=16))
    held_out = list(loader(n=40, batch=20, seed=8))
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=3e-3)
    opt = torch.optim.AdamW(mine.parameters(), lr=3e-3)
    tr = sa.Trainer(mine, opt, loss_fn, memory_fraction=0.6, cache_dir=cache, time_budget=2,
                    threads=1)
    want, got = [], []
    for epoch in range(2):
        want += eager(ref, ref_opt, loss_fn, batches[3 * epoch:3 * epoch + 3])
        got += [tr.step(x, y) for x, y in batches[3 * epoch:3 * epoch + 3]]
        ref.eval()
        with torch.no_grad():
            want += [loss_fn(ref(x), y) for x, y in held_out]
        ref.train()
        got += [tr.eval_step(x, y) for x, y in held_out]
    check(all(torch.equal(a, b) for a, b in zip(got, want)),
          f"6 training and 4 evaluation losses equal eager's bit for bit "
          f"({', '.join(f'{t.item():.5f}' for t in got[3:5])} evaluated after 3 steps)")
    bad = same_state(tr.state_dict(), ref.state_dict())
    check(not bad, "the final state_dict equals eager's (evaluation changed nothing)" +
          (f" (differs: {bad})" if bad else ""))
    check(tr.captures == 2 and tr.steps == 6,
          f"one capture for training, one for evaluation; 6 steps (got {tr.captures}, "
          f"{tr.steps})")


class Tied(torch.nn.Module):
    """A language model whose output layer shares the embedding's weight."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 16)
        self.mid = torch.nn.Linear(16, 16)
        self.out = torch.nn.Linear(16, 50, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, x):
        return self.out(torch.tanh(self.mid(self.emb(x))))


def case_state(sa, cache):
    torch.manual_seed(2)
    ref = Tied()
    mine = copy.deepcopy(ref)
    g = torch.Generator().manual_seed(3)
    batches = [(torch.randint(0, 50, (12,), generator=g), torch.randint(0, 50, (12,), generator=g))
               for _ in range(6)]
    loss_fn = torch.nn.CrossEntropyLoss()

    def sgd(params):
        return torch.optim.SGD(params, lr=0.1, momentum=0.9)
    ref_opt = sgd(ref.parameters())
    want = eager(ref, ref_opt, loss_fn, batches[:3])
    tr = sa.Trainer(mine, sgd(mine.parameters()), loss_fn, memory_fraction=0.7,
                    cache_dir=cache, time_budget=1, threads=1)
    got = [tr.step(x, y) for x, y in batches[:3]]
    check(all(torch.equal(a, b) for a, b in zip(got, want)), "tied weights: losses as eager's")
    sd = tr.state_dict()
    bad = same_state(sd, ref.state_dict())
    check(not bad, "tied weights: state_dict() has both names, trained"
          + (f" (differs: {bad})" if bad else ""))
    # A changed state goes into the next steps, as model.load_state_dict
    # does in eager PyTorch (the optimizer state is kept on both sides).
    with torch.no_grad():
        ref.mid.weight.mul_(0.5)
    changed = {"mid.weight": sd["mid.weight"] * 0.5}
    tr.load_state_dict(changed)
    want = eager(ref, ref_opt, loss_fn, batches[3:])
    got = [tr.step(x, y) for x, y in batches[3:]]
    check(all(torch.equal(a, b) for a, b in zip(got, want)),
          "after load_state_dict: losses as eager's")
    bad = same_state(tr.state_dict(), ref.state_dict())
    check(not bad, "after load_state_dict: the state as eager's" + (f" ({bad})" if bad else ""))
    expect_error(sa, "load_state_dict of an unknown name", ["not in the model"],
                 lambda: tr.load_state_dict({"nope": torch.zeros(1)}))
    expect_error(sa, "load_state_dict of another shape", ["mid.weight"],
                 lambda: tr.load_state_dict({"mid.weight": torch.zeros(3)}))


def expect_error(sa, what, words, fn):
    try:
        fn()
    except sa.Error as e:
        msg = str(e)
        check(all(w in msg for w in words) and "\n" not in msg, f"{what}: {msg}")
        return
    except Exception as e:  # noqa: BLE001
        check(False, f"{what}: {type(e).__name__} instead of swapadvisor.Error: {e}")
        return
    check(False, f"{what}: no error")


class Slow(torch.utils.data.Dataset):
    """A dataset that waits `wait` s per item (storage standing in) and
    fails at item `fail`."""

    def __init__(self, base, wait, fail=None):
        self.base, self.wait, self.fail = base, wait, fail
        self.loaded = 0

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        if i == self.fail:
            raise OSError(f"item {i} cannot be read")
        time.sleep(self.wait)
        self.loaded += 1
        return self.base[i]


def case_staged(sa, cache):
    import threading
    loss_fn = torch.nn.CrossEntropyLoss()
    base = loader(n=96, batch=16).dataset
    ref, mine = twins(40)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    want = eager(ref, ref_opt, loss_fn, loader(n=96, batch=16))
    opt = torch.optim.SGD(mine.parameters(), lr=0.05, momentum=0.9)
    tr = sa.Trainer(mine, opt, loss_fn, memory_fraction=0.6, cache_dir=cache, time_budget=1,
                    threads=1)
    slow = Slow(base, wait=0.002)
    got, ahead = [], []
    for x, y in tr.staged(torch.utils.data.DataLoader(slow, batch_size=16), depth=2):
        got.append(tr.step(x, y))
        ahead.append(slow.loaded - 16 * len(got))  # items loaded beyond this step's batch
    check(all(torch.equal(a, b) for a, b in zip(got, want)) and len(got) == 6,
          f"staged: {len(got)} losses equal eager's bit for bit")
    check(not same_state(tr.state_dict(), ref.state_dict()),
          "staged: the final state_dict equals eager's")
    check(max(ahead) >= 16, f"staged: the next batch was loaded during a step (items loaded "
          f"ahead after each step: {ahead})")
    failing = torch.utils.data.DataLoader(Slow(base, wait=0, fail=40), batch_size=16)
    seen = 0
    try:
        for x, y in tr.staged(failing):
            tr.step(x, y)
            seen += 1
        check(False, "staged: a failing loader raised nothing")
    except OSError as e:
        check(seen == 2 and "item 40" in str(e),
              f"staged: the loader's error at its batch (after {seen} steps): {e}")
    before = threading.active_count()
    for x, y in tr.staged(torch.utils.data.DataLoader(Slow(base, wait=0.001), batch_size=16)):
        break
    check(threading.active_count() == before and
          not any(t.name == "swapadvisor-staging" for t in threading.enumerate()),
          "staged: an early break stops the loading thread")


def case_fp16(sa, cache):
    """FP16 autocast with a GradScaler (torch 2.3 and later on the CPU): from
    a scale of 2^20, steps 1, 2, 5 and 8 overflow and are skipped (as
    GradScaler.step skips them) and the scale grows every 2 good steps."""
    if not hasattr(torch.amp, "GradScaler"):
        print(f"SKIP: torch {torch.__version__} has no CPU GradScaler (torch 2.3 and later)")
        sys.exit(77)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = list(loader(n=128, batch=16))  # 8 equal batches
    mb, clip = 2, 1.0

    def scaler():
        return torch.amp.GradScaler("cpu", init_scale=2.0 ** 20, growth_interval=2)

    ref, mine = twins(50)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=3e-3, weight_decay=0.05)
    ref_scaler = scaler()
    want, scales = [], []
    for x, y in batches:
        ref_opt.zero_grad(set_to_none=True)
        loss = None
        for xc, yc in zip(x.chunk(mb), y.chunk(mb)):
            with torch.autocast("cpu", dtype=torch.float16):
                part = loss_fn(ref(xc), yc)
            part = part / mb
            loss = part.detach() if loss is None else loss + part.detach()
            ref_scaler.scale(part).backward()
        ref_scaler.unscale_(ref_opt)
        torch.nn.utils.clip_grad_norm_(ref.parameters(), clip)
        ref_scaler.step(ref_opt)
        ref_scaler.update()
        want.append(loss)
        scales.append(ref_scaler.get_scale())
    skipped = sum(1 for a, b in zip([2.0 ** 20] + scales, scales) if b < a)
    opt = torch.optim.AdamW(mine.parameters(), lr=3e-3, weight_decay=0.05)
    my_scaler = scaler()
    tr = sa.Trainer(mine, opt, loss_fn, memory_fraction=0.6, cache_dir=cache, time_budget=2,
                    threads=1, micro_batches=mb, max_grad_norm=clip, autocast="fp16",
                    grad_scaler=my_scaler)
    got = [tr.step(x, y) for x, y in batches]
    check(all(torch.equal(a, b) for a, b in zip(got, want)),
          f"fp16 + GradScaler: 8 losses equal eager's bit for bit ({skipped} steps skipped there, "
          f"scales {', '.join(f'{v:g}' for v in scales)})")
    check(0 < skipped < 8 and tr.steps_skipped == skipped,
          f"fp16 + GradScaler: {tr.steps_skipped} steps skipped, eager {skipped}")
    bad = same_state(tr.state_dict(), ref.state_dict())
    check(not bad, "fp16 + GradScaler: the final state_dict equals eager's" +
          (f" (differs: {bad})" if bad else ""))
    check(my_scaler.get_scale() == ref_scaler.get_scale() and
          torch.equal(my_scaler._growth_tracker, ref_scaler._growth_tracker),
          f"fp16 + GradScaler: the scaler's scale {my_scaler.get_scale():g} and growth tracker "
          f"equal eager's ({ref_scaler.get_scale():g})")


def case_mistakes(sa, cache):
    net = Net()
    loss_fn = torch.nn.CrossEntropyLoss()
    sgd = torch.optim.SGD(net.parameters(), lr=0.1)
    expect_error(sa, "no budget", ["budget", "memory_fraction"],
                 lambda: sa.Trainer(net, sgd, loss_fn, cache_dir=cache))
    expect_error(sa, "a budget and a fraction", ["not both"],
                 lambda: sa.Trainer(net, sgd, loss_fn, budget="1GiB", memory_fraction=0.5,
                                    cache_dir=cache))
    expect_error(sa, "a bad budget", ["budget"],
                 lambda: sa.Trainer(net, sgd, loss_fn, budget="lots", cache_dir=cache))
    expect_error(sa, "a bad device", ["device"],
                 lambda: sa.Trainer(net, sgd, loss_fn, budget="1MiB", device="tpu",
                                    cache_dir=cache))
    expect_error(sa, "not a module", ["torch.nn.Module"],
                 lambda: sa.Trainer(lambda x: x, sgd, loss_fn, budget="1MiB", cache_dir=cache))
    rms = torch.optim.RMSprop(net.parameters(), lr=0.1)
    expect_error(sa, "an optimizer it cannot record", ["RMSprop", "SGD, Adam and AdamW"],
                 lambda: sa.Trainer(net, rms, loss_fn, budget="1MiB", cache_dir=cache))
    for kw, words in ((dict(micro_batches=0), ["micro_batches", ">= 1"]),
                      (dict(micro_batches=2.0), ["micro_batches"]),
                      (dict(max_grad_norm=-1.0), ["max_grad_norm", "> 0"]),
                      (dict(max_grad_norm=float("inf")), ["max_grad_norm", "finite"]),
                      (dict(batch_dim=-1), ["batch_dim"]),
                      (dict(autocast="int8"), ["autocast"])):
        expect_error(sa, f"Trainer({', '.join(f'{k}={v!r}' for k, v in kw.items())})", words,
                     lambda kw=kw: sa.Trainer(net, sgd, loss_fn, budget="1MiB", cache_dir=cache,
                                              **kw))
    if not hasattr(torch.amp, "GradScaler"):
        expect_error(sa, "fp16 autocast on the CPU before torch 2.3", ["bf16 only", "2.3"],
                     lambda: sa.Trainer(net, sgd, loss_fn, budget="1MiB", cache_dir=cache,
                                        autocast="fp16"))
    else:
        expect_error(sa, "a GradScaler without fp16", ["autocast=\"fp16\""],
                     lambda: sa.Trainer(net, sgd, loss_fn, budget="1MiB", cache_dir=cache,
                                        grad_scaler=torch.amp.GradScaler("cpu")))
    expect_error(sa, "a grad_scaler that is not one", ["GradScaler", "object"],
                 lambda: sa.Trainer(net, sgd, loss_fn, budget="1MiB", cache_dir=cache,
                                    autocast="bf16", grad_scaler=object()))
    ams = torch.optim.Adam(net.parameters(), lr=0.1, amsgrad=True)
    expect_error(sa, "Adam with amsgrad", ["amsgrad=True", "amsgrad=False"],
                 lambda: sa.Trainer(net, ams, loss_fn, budget="1MiB", cache_dir=cache))
    tr4 = sa.Trainer(net, sgd, loss_fn, memory_fraction=0.5, cache_dir=cache, time_budget=1,
                     threads=1, micro_batches=4)
    expect_error(sa, "a batch too small for its micro-batches", ["3", "4 micro-batches"],
                 lambda: tr4.step(torch.randn(3, 32), torch.zeros(3, dtype=torch.long)))
    tr = sa.Trainer(net, sgd, loss_fn, memory_fraction=0.5, cache_dir=cache, time_budget=1,
                    threads=1)
    expect_error(sa, "a batch that is not tensors", ["tensor"],
                 lambda: tr.step([1, 2, 3], torch.zeros(3, dtype=torch.long)))
    expect_error(sa, "a forward pass that fails", ["forward"],
                 lambda: tr.step(torch.randn(4, 7), torch.zeros(4, dtype=torch.long)))
    # The optimizer's values fail while the step runs (a shadow optimizer
    # that raises): the step is abandoned, the session ends, and every later
    # call says so rather than returning a stale state.
    x, y = torch.randn(16, 32), torch.zeros(16, dtype=torch.long)
    tr = sa.Trainer(net, sgd, loss_fn, memory_fraction=0.9, cache_dir=cache, time_budget=1,
                    threads=1)
    tr.step(x, y)
    shadow = tr._shadow

    class Failing:
        structure_key = staticmethod(shadow.structure_key)

        def step_values(self, groups, number):
            raise RuntimeError("the shadow optimizer failed")
    tr._shadow = Failing()
    expect_error(sa, "optimizer values that fail during a step",
                 ["the shadow optimizer failed", "abandoned"], lambda: tr.step(x, y))
    tr._shadow = shadow
    expect_error(sa, "state_dict() after an abandoned step", ["abandoned"], tr.state_dict)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True, help="the build tree's python/ directory")
    ap.add_argument("--case", required=True,
                    choices=["equivalence", "schedule", "accumulate", "eval", "state",
                             "staged", "fp16", "mistakes"])
    a = ap.parse_args()
    sys.path.insert(0, a.python)
    import swapadvisor as sa
    if not sa.training_available():
        print(f"SKIP: {sa.training_unavailable_reason()}")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="sa_trainer_") as cache:
        {"equivalence": case_equivalence, "schedule": case_schedule, "state": case_state,
         "accumulate": case_accumulate, "eval": case_eval, "staged": case_staged, "fp16": case_fp16,
         "mistakes": case_mistakes}[a.case](sa, cache)
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
