"""Training on several processes: what ``loop.fit`` and its callers do when launched by
``torchrun`` or ``accelerate launch`` (data parallel, one model copy per process).

A launcher sets ``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``, ``MASTER_ADDR`` and
``MASTER_PORT`` in each process; with ``WORLD_SIZE`` > 1 ``join`` opens the process group
once (gloo for a model on the CPU, nccl on a GPU). Without them every function here is a
no-op and training is the one-process training, to the digit.

Gradients are averaged by hand after ``backward`` (``average``) rather than through
``DistributedDataParallel``: a head's ``loss_of`` calls the module directly (and a frozen
backbone's features come from a cache), so a DDP wrapper would never see the forward pass.
Each rank takes its share of the global batch and the averaged gradient is weighted by
the share's size, so a loss that is a mean over examples gets exactly the one-process
gradient, whatever the number of processes (dropout masks and randomly drawn negatives
differ, so the curves match in shape, not to the digit).

Only rank 0 writes: it fills the frozen backbone's feature cache while the others wait
(``filled_by_rank0``), and the others leave with status 0 after the last step
(``leave_unless_rank0``), so the evaluation, the model directory and what is printed are
rank 0's alone.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class World:
    """This process's place among the launched ones."""

    rank: int
    size: int
    local_rank: int


def launched() -> World | None:
    """The launcher's ``RANK`` / ``WORLD_SIZE`` / ``LOCAL_RANK``; None for one process."""
    size = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if size <= 1:
        return None
    rank = int(os.environ.get("RANK", "0"))
    return World(rank, size, int(os.environ.get("LOCAL_RANK", str(rank))))


def is_rank0() -> bool:
    """True in a single process and on rank 0: the process that writes and prints."""
    world = launched()
    return world is None or world.rank == 0


def shows_progress(progress: bool) -> bool:
    """Whether this process draws the progress bars asked for: rank 0 only (one bar, not N)."""
    return progress and is_rank0()


def join(device: Any = None) -> World | None:
    """Open the process group (once; an ``Accelerator`` may have opened it already) and
    return this process's ``World``; None, touching nothing, when not launched.

    The backend follows where the model lives: nccl for a CUDA device, gloo otherwise.
    """
    world = launched()
    if world is None:
        return None
    import torch.distributed as dist

    if not dist.is_initialized():
        cuda = device is not None and getattr(device, "type", str(device)) == "cuda"
        dist.init_process_group("nccl" if cuda else "gloo")
        atexit.register(_close)
    return world


def _close() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def barrier() -> None:
    if launched() is not None:
        join()
        import torch.distributed as dist

        dist.barrier()


def same_start(parameters: Sequence[Any]) -> None:
    """Every rank starts from rank 0's weights (what DDP does when it wraps a module)."""
    import torch.distributed as dist

    for parameter in parameters:
        dist.broadcast(parameter.data, src=0)


def share(batch: Sequence[T], world: World) -> list[T]:
    """This rank's part of a global batch: every ``size``-th item from ``rank``.

    subtle: a batch shorter than the world leaves some ranks nothing; they still take part
    in ``average`` (with zero weight), or the others would wait for them forever.
    """
    return list(batch[world.rank :: world.size])


def average(parameters: Sequence[Any], loss: Any, count: int) -> float:
    """Replace each parameter's gradient by the examples-weighted mean over the ranks and
    return the mean loss over the global batch (what one process would have reported).

    ``loss`` is this rank's (already backpropagated) loss over ``count`` examples, or None
    when the rank had none. Everything travels in one all_reduce: the gradients times
    ``count``, whether each parameter got a gradient on any rank (one that got none
    anywhere keeps None, as with one process, so AdamW skips it), ``loss * count`` and
    ``count``.
    """
    import torch
    import torch.distributed as dist

    device = parameters[0].device if parameters else torch.device("cpu")
    parts = []
    for parameter in parameters:
        grad = parameter.grad
        if grad is None:
            parts.append(torch.zeros(parameter.numel(), device=device))
        else:
            parts.append(grad.detach().reshape(-1).float() * count)
    got = [0.0 if p.grad is None else 1.0 for p in parameters]
    value = 0.0 if loss is None else float(loss.detach()) * count
    tail = torch.tensor([*got, value, float(count)], dtype=torch.float32, device=device)
    buffer = torch.cat([*parts, tail])
    dist.all_reduce(buffer)
    total = float(buffer[-1])
    offset = 0
    for index, parameter in enumerate(parameters):
        size = parameter.numel()
        if float(buffer[-2 - len(parameters) + index]) > 0:
            mean = buffer[offset : offset + size] / total
            parameter.grad = mean.view_as(parameter).to(parameter.dtype)
        else:
            parameter.grad = None
        offset += size
    return float(buffer[-2]) / total


def filled_by_rank0(features: Any, fill: Callable[[Any], T]) -> tuple[Any, T]:
    """``fill(features)`` (which computes a frozen backbone's states into the features
    cache) run by rank 0 alone while the other ranks wait; then the others run ``fill``
    on a fresh, read-only view of the finished cache, so they compute nothing and no two
    processes ever write a shard at once. Returns (the features to train with, fill's
    result). In one process, or without a cache folder, just ``fill(features)``.

    subtle: the first barrier matters too: opening a cache deletes half-written shards
    (left by a killed run), which must not happen to the one rank 0 is writing.
    """
    if launched() is None or features is None or features.cache_dir is None:
        return features, fill(features)
    from rolecall.train.backbones.features import Features

    barrier()  # every rank has opened the cache: nothing will delete rank 0's shards
    if is_rank0():
        result = fill(features)
        barrier()
        return features, result
    barrier()
    view = Features(features.backbone, features.cache_dir, features.batch_size)
    view.cache_dir = None  # read-only: states missing from the cache stay in memory
    return view, fill(view)


def leave_unless_rank0() -> None:
    """End a process other than rank 0 after training (status 0): its model is rank 0's,
    and rank 0 alone evaluates, saves and prints.

    It leaves at once rather than at a final barrier: rank 0's evaluation and writing can
    outlast a collective's timeout, and the launcher waits for every process anyway.
    """
    if is_rank0():
        return
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.exit(0)
