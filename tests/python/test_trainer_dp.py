#!/usr/bin/python3
"""swapadvisor.Trainer(data_parallel=True) on 2 MPI ranks (Note [Trainer
ranks] in python/swapadvisor/trainer.py):

    mpirun -np 2 test_trainer_dp.py --python BUILD/python

Each rank trains the same Net on its own batches (every other batch of one
DataLoader, as a DistributedSampler would give) with AdamW, a cosine
schedule, clipping and 2 micro-batches. On each rank, an eager emulation of
DistributedDataParallel - two replicas, each stepping on its rank's batch,
their gradients averaged ((g0 + g1) / 2, what MPI's sum over 2 ranks then
/ 2 gives) before clipping and the step - is the reference: every loss of
this rank and its final state_dict (parameters equal on both ranks; batch
norm statistics each rank's own) bit for bit. Then a batch of another
shape on one rank only: one clear error on both ranks, no hang.
Exit status 77 without torch or outside mpirun.
"""

import argparse
import os
import sys
import tempfile

try:
    import torch
except ImportError:
    print("SKIP: this Python has no torch")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_trainer import Net, loader  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    a = ap.parse_args()
    sys.path.insert(0, a.python)
    import swapadvisor as sa
    if not sa.training_available():
        print("SKIP: built without the ATen kernels")
        return 77
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = list(loader(n=128, batch=16))  # 8 batches: 4 steps on each of 2 ranks
    mb, clip = 2, 1.0

    def replica():
        torch.manual_seed(30)
        return Net()

    def adamw(m):
        return torch.optim.AdamW(m.parameters(), lr=3e-3, weight_decay=0.05)

    def cosine(o):
        return torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4)

    model = replica()
    opt = adamw(model)
    sched = cosine(opt)
    cache = os.environ.get("SA_TEST_CACHE") or tempfile.mkdtemp()
    tr = sa.Trainer(model, opt, loss_fn, memory_fraction=0.6, cache_dir=cache, time_budget=2,
                    threads=1, micro_batches=mb, max_grad_norm=clip, data_parallel=True)
    if tr.ranks != 2:
        print(f"SKIP: {tr.ranks} rank(s); run under mpirun -np 2")
        return 77
    rank = tr.rank
    mine = batches[rank::2]
    got = []
    for x, y in mine:
        got.append(tr.step(x, y))
        sched.step()
    state = tr.state_dict()

    # The eager reference: DDP emulated with two replicas.
    reps = [replica(), replica()]
    opts = [adamw(m) for m in reps]
    scheds = [cosine(o) for o in opts]
    want = [[], []]
    for step in range(len(mine)):
        for r in range(2):
            x, y = batches[r::2][step]
            opts[r].zero_grad(set_to_none=True)
            loss = None
            for xc, yc in zip(x.chunk(mb), y.chunk(mb)):
                part = loss_fn(reps[r](xc), yc) / mb
                loss = part.detach() if loss is None else loss + part.detach()
                part.backward()
            want[r].append(loss)
        for p0, p1 in zip(reps[0].parameters(), reps[1].parameters()):
            avg = (p0.grad + p1.grad) / 2
            p0.grad, p1.grad = avg.clone(), avg.clone()
        for r in range(2):
            torch.nn.utils.clip_grad_norm_(reps[r].parameters(), clip)
            opts[r].step()
            scheds[r].step()
    check(all(torch.equal(p, q) for p, q in zip(got, want[rank])),
          f"rank {rank}: 4 losses equal the DDP emulation's bit for bit "
          f"({', '.join(f'{t.item():.6f}' for t in got)}; emulation "
          f"{', '.join(f'{t.item():.6f}' for t in want[rank])})")
    ref = reps[rank].state_dict()
    bad = [k for k in ref if not torch.equal(state[k], ref[k])]
    check(not bad, f"rank {rank}: the final state_dict equals the emulation's" +
          (f" (differs: {bad})" if bad else ""))

    # A batch shape on one rank only: an error on both, not a hang.
    x, y = batches[0]
    if rank == 1:
        x, y = x[:8], y[:8]
    try:
        tr.step(x, y)
        check(False, f"rank {rank}: a batch of another shape on rank 1 only gave no error")
    except sa.Error as e:
        msg = str(e)
        check("rank 1" in msg and "\n" not in msg,
              f"rank {rank}: a batch of another shape on rank 1 only: {msg}")
    print("all checks passed" if not failures else f"{len(failures)} check(s) failed",
          flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
