#!/usr/bin/python3
"""Train a model on a dataset with swapadvisor.Trainer, under a memory
budget, and (with --check) against eager PyTorch running the same loop.

    PYTHONPATH=build/python examples/train.py --model resnet18 --fraction 0.5 --check
    PYTHONPATH=build/python examples/train.py --model transformer_lm --epochs 2

The dataset: torchvision's FakeData (images, resnet18) or random token
sequences (transformer_lm) in a DataLoader, its last batch smaller (a batch
of another shape is planned on its own). The loop, as training scripts
write it: AdamW (weight decay on the weights only: two param groups), a
cosine learning-rate schedule stepped every step, gradient clipping
(--clip) and gradient accumulation over --micro-batches; --optimizer sgd
for SGD with momentum. The Trainer captures a step on the first batch,
plans it at --fraction of the step's peak live bytes (or within --budget)
and runs every step on the host-emulated device (device="cpu"; "cuda" on a
GPU build). Plans are cached (--cache), so a second run skips the search.

The loop takes its batches through trainer.staged(loader), which loads the
next ones while a step runs. --data-parallel, under `mpirun -np N`: each
rank trains on its DistributedSampler shard, the gradients averaged.

--check trains an eager copy of the model on the same batches and compares
every loss and the final state_dict, bit for bit (data-parallel: against
an emulation of DistributedDataParallel). --timing prints the step time
through the Trainer beside the executor's own iteration time.

    mpirun -np 2 examples/train.py --model resnet18 --data-parallel --check
"""

import argparse
import copy
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # the example models (examples/*.py)


def dataset(model_name, samples, batch, seed, rank=0, ranks=1):
    """The epoch's DataLoader (seed: the epoch); with ranks > 1, rank's
    shard of it, as DistributedSampler gives it to DistributedDataParallel."""
    g = torch.Generator().manual_seed(seed)
    if model_name == "resnet18":
        import torchvision
        ds = torchvision.datasets.FakeData(size=samples, image_size=(3, 64, 64), num_classes=10,
                                           transform=torchvision.transforms.ToTensor(),
                                           random_offset=seed)
        collate = None
    else:
        import transformer_lm as lm
        seq = torch.randint(0, lm.VOCAB, (samples, lm.SEQ + 1), generator=g)
        ds = torch.utils.data.TensorDataset(seq[:, :-1], seq[:, 1:])

        def collate(items):  # (sequence, batch), as the model takes it
            x = torch.stack([a for a, _ in items]).t().contiguous()
            y = torch.stack([b for _, b in items]).t().contiguous()
            return x, y
    if ranks > 1:
        sampler = torch.utils.data.distributed.DistributedSampler(
            ds, num_replicas=ranks, rank=rank, shuffle=True, seed=seed)
        return torch.utils.data.DataLoader(ds, batch_size=batch, sampler=sampler,
                                           collate_fn=collate)
    return torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, generator=g,
                                       collate_fn=collate)


def build(model_name):
    if model_name == "resnet18":
        import torchvision
        return torchvision.models.resnet18(num_classes=10), torch.nn.CrossEntropyLoss()
    import transformer_lm as lm
    return lm.TransformerLM(0.0), lm.loss_fn


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=["resnet18", "transformer_lm"], default="resnet18")
    ap.add_argument("--fraction", type=float, default=0.5,
                    help="the budget as a share of the step's peak live bytes (default 0.5)")
    ap.add_argument("--budget", help="the budget as a size (e.g. 300MiB), instead of --fraction")
    ap.add_argument("--samples", type=int, default=36, help="dataset size (default 36)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=None,
                    help="stop after this many steps (default: every batch of --epochs)")
    ap.add_argument("--optimizer", choices=["adamw", "sgd"], default="adamw")
    ap.add_argument("--lr", type=float, default=None,
                    help="peak learning rate (default 1e-3 for adamw, 0.05 for sgd)")
    ap.add_argument("--clip", type=float, default=1.0,
                    help="clip gradients to this total norm (0: no clipping; default 1.0)")
    ap.add_argument("--micro-batches", type=int, default=2,
                    help="gradient accumulation: micro-batches per step (default 2)")
    ap.add_argument("--time-budget", type=float, default=5, help="search seconds per plan")
    ap.add_argument("--cache", help="plan cache directory (default: ~/.cache/swapadvisor)")
    ap.add_argument("--device", default="cpu", help="cpu (host-emulated) or cuda")
    ap.add_argument("--data-parallel", action="store_true",
                    help="under mpirun -np N: each rank trains on its shard of the data "
                         "(DistributedSampler), gradients averaged over the ranks")
    ap.add_argument("--check", action="store_true", help="compare with eager PyTorch "
                    "(data-parallel: with an emulation of DistributedDataParallel)")
    ap.add_argument("--timing", action="store_true", help="print step times")
    a = ap.parse_args()

    import swapadvisor

    if a.check and a.device == "cuda":
        # The eager side and the Trainer's kernels share libtorch's settings.
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    torch.manual_seed(0)  # every rank starts from the same model
    model, loss_fn = build(a.model)
    eager_model = copy.deepcopy(model)

    lr = a.lr if a.lr is not None else (1e-3 if a.optimizer == "adamw" else 0.05)
    rank, ranks = swapadvisor.ranks() if a.data_parallel else (0, 1)
    per_epoch = len(dataset(a.model, a.samples, a.batch, 0, rank, ranks))
    steps = min(a.steps or a.epochs * per_epoch, a.epochs * per_epoch)
    batch_dim = 1 if a.model == "transformer_lm" else 0  # its batches are (sequence, batch)

    def optimizer(m):
        if a.optimizer == "sgd":
            return torch.optim.SGD(m.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
        decay = [p for n, p in m.named_parameters() if p.dim() > 1]
        rest = [p for n, p in m.named_parameters() if p.dim() <= 1]
        return torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                                  {"params": rest, "weight_decay": 0.0}], lr=lr)

    def schedule(o):
        return torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=steps)

    opt = optimizer(model)
    sched = schedule(opt)
    clip = a.clip if a.clip > 0 else None
    budget = dict(budget=a.budget) if a.budget else dict(memory_fraction=a.fraction)
    trainer = swapadvisor.Trainer(model, opt, loss_fn, device=a.device, cache_dir=a.cache,
                                  time_budget=a.time_budget, micro_batches=a.micro_batches,
                                  max_grad_norm=clip, batch_dim=batch_dim,
                                  data_parallel=a.data_parallel, **budget)
    say = print if rank == 0 else (lambda *args, **kw: None)
    losses = []
    step_s = []
    for epoch in range(a.epochs):
        for x, y in trainer.staged(dataset(a.model, a.samples, a.batch, epoch, rank, ranks)):
            if len(losses) == steps:
                break
            t0 = time.perf_counter()
            loss = trainer.step(x, y)
            step_s.append(time.perf_counter() - t0)
            losses.append(loss)
            say(f"epoch {epoch} step {len(losses)}: loss {loss.item():.6f} "
                f"(lr {opt.param_groups[0]['lr']:.3g}, batch {tuple(x.shape)})")
            sched.step()
    say(f"trained {trainer.steps} steps{f' on each of {ranks} ranks' if ranks > 1 else ''}: "
        f"{trainer.captures} captures, {trainer.plans_searched} plans searched (the rest "
        f"from the cache)")
    state = trainer.state_dict()

    if a.timing:
        # The first step of each capture includes the capture, the plan and
        # the session's setup; the others are steps.
        ws = [w / 1e6 for w in trainer.last_session_step_wall_us()]
        steady = sorted(step_s[-len(ws):])[len(ws) // 2] if ws else float("nan")
        say(f"step time, median of the last session's {len(ws)} steps: through the Trainer "
            f"{steady * 1e3:.1f} ms, the executor's iteration "
            f"{sorted(ws)[len(ws) // 2] * 1e3:.1f} ms")

    if a.check:
        # The same loop in eager PyTorch (swapadvisor.Trainer's docstring);
        # data-parallel: DistributedDataParallel emulated with one replica
        # per rank, each stepping on its rank's shard, the gradients
        # averaged ((g0 + g1) / 2 is what MPI's sum over 2 ranks then / 2
        # gives; over more ranks the sum's order is MPI's own) before
        # clipping and the optimizer.
        # On the Trainer's device (cuda: cuDNN made deterministic above).
        edev = torch.device(a.device)
        replicas = [copy.deepcopy(eager_model).to(edev) for _ in range(ranks)]
        eopts = [optimizer(m) for m in replicas]
        escheds = [schedule(o) for o in eopts]
        want = []
        done = 0
        for epoch in range(a.epochs):
            shards = [iter(dataset(a.model, a.samples, a.batch, epoch, r, ranks))
                      for r in range(ranks)]
            for batch in zip(*shards):
                if done == steps:
                    break
                done += 1
                for r, (x, y) in enumerate(batch):
                    x, y = x.to(edev), y.to(edev)
                    eopts[r].zero_grad(set_to_none=True)
                    loss = None
                    for xc, yc in zip(x.chunk(a.micro_batches, batch_dim),
                                      y.chunk(a.micro_batches, batch_dim)):
                        part = loss_fn(replicas[r](xc), yc)
                        if a.micro_batches > 1:
                            part = part / a.micro_batches
                        loss = part.detach() if loss is None else loss + part.detach()
                        part.backward()
                    if r == rank:
                        want.append(loss.cpu())
                if ranks > 1:
                    for ps in zip(*(m.parameters() for m in replicas)):
                        avg = sum(p.grad for p in ps) / ranks
                        for p in ps:
                            p.grad = avg.clone()
                for r in range(ranks):
                    if clip is not None:
                        torch.nn.utils.clip_grad_norm_(replicas[r].parameters(), clip)
                    eopts[r].step()
                    escheds[r].step()
        same_losses = sum(torch.equal(p, q) for p, q in zip(losses, want))
        ref = {k: v.cpu() for k, v in replicas[rank].state_dict().items()}
        differ = [k for k in ref if not torch.equal(state[k], ref[k])]
        who = f"rank {rank}: " if ranks > 1 else ""
        print(f"{who}check: {same_losses} of {len(want)} losses equal eager PyTorch's bit for "
              f"bit; state_dict: {len(ref) - len(differ)} of {len(ref)} tensors equal")
        if same_losses != len(want) or differ:
            print(f"{who}check FAILED (differ: {differ[:5]})")
            sys.exit(1)


if __name__ == "__main__":
    import swapadvisor
    try:
        main()
    except swapadvisor.Error as e:
        sys.exit(f"train.py: error: {e}")
