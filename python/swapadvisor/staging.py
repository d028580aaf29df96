"""Batches staged in host memory ahead of the step that takes them
(Trainer.staged, docs/python.md "Staging the next batch").

A step spends most of its time in the executor with the GIL released
(swapadvisor._native.Session.end), so a thread of this process can load
the next batches meanwhile: what a DataLoader with num_workers=0 (its
default) would otherwise do between steps, on the training loop's time.
Each staged batch is made of contiguous CPU tensors (in pinned memory when
asked: the copies to a GPU then run at full speed), `depth` batches ahead.
"""

import queue
import threading

import torch

_END = object()


def _stage(batch, pin):
    def one(t):
        if not isinstance(t, torch.Tensor):
            return t
        t = t.detach()
        if t.device.type != "cpu":
            return t
        t = t.contiguous()
        return t.pin_memory() if pin else t
    if isinstance(batch, (tuple, list)):
        return type(batch)(_stage(b, pin) if isinstance(b, (tuple, list)) else one(b)
                           for b in batch)
    return one(batch)


def staged(batches, depth=2, pin=False):
    """Iterates over `batches` (a DataLoader or any iterable) with up to
    `depth` items loaded ahead by a background thread. An error in the
    loader is raised here, at the item it stopped at; leaving the loop early
    stops the thread."""
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
        raise ValueError(f"staged: depth must be an int >= 1, got {depth!r}")
    q = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item):
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def load():
        try:
            for b in batches:
                if not put((None, _stage(b, pin))):
                    return
            put((None, _END))
        except BaseException as e:  # noqa: BLE001 - raised in the loop's thread
            put((e, None))

    t = threading.Thread(target=load, name="swapadvisor-staging", daemon=True)
    t.start()
    try:
        while True:
            error, item = q.get()
            if error is not None:
                raise error
            if item is _END:
                return
            yield item
    finally:
        stop.set()
        t.join()
