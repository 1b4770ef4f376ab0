"""The one training loop every head uses, and how a trained model is saved and read back.

A model is a torch ``nn.Module`` head plus a ``Backbone``. ``fit`` runs epochs of shuffled
mini-batches through a loss function the model module supplies (one loss per module, see
``losses/``); a frozen backbone contributes no parameters, a trainable one trains with its
own, smaller learning rate. ``save_model`` writes ``model.json`` (kind, settings, metrics),
``head.pt`` (the head's state dict) and the backbone (``backbones/base.py``: whole when it
trained, a reference when frozen); ``read_model`` gives them back, so a model directory
is ``from_pretrained``-style: everything needed to score again, identically.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from rolecall import __version__
from rolecall.errors import InputFileError
from rolecall.progress import progress_bar, say
from rolecall.rundir import write_json
from rolecall.train import distributed
from rolecall.train.backbones.base import Backbone
from rolecall.train.backbones.load import load_saved_backbone
from rolecall.train.checkpoints import Checkpoints, fingerprint
from rolecall.train.settings import Settings as Settings  # re-exported
from rolecall.train.settings import TrainConfig

MODEL_FILE = "model.json"
HEAD_FILE = "head.pt"
T = TypeVar("T")


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)


def fit(
    head: Any,
    backbone: Backbone | None,
    items: Sequence[T],
    loss_of: Callable[[list[T]], Any],
    config: TrainConfig,
    progress: bool = True,
    description: str = "training",
    checkpoints: Checkpoints | None = None,
) -> dict[str, Any]:
    """Train ``head`` (and a trainable ``backbone``) on ``items``; returns the loss history.

    ``head`` is any module whose trainable parameters are to learn at ``config.lr`` (a
    LoRA-wrapped LM has only its adapters trainable); ``backbone`` may be None.

    ``loss_of(batch)`` returns a scalar tensor. Batches are shuffled with ``config.seed``;
    the last short batch is kept (in-batch negatives then just has fewer). The history
    holds every step's loss and each epoch's mean (``epoch_losses``).

    Launched by ``torchrun`` / ``accelerate launch`` (``distributed.py``),
    ``config.batch_size`` is the *global* batch: every process draws the same order and
    takes every N-th item of each batch, the gradients are averaged over the processes
    (weighted by their items) and the reported loss is the mean over the whole batch, so
    the steps, the epochs and the loss curve are those of one process. Processes other
    than rank 0 end (status 0) after the last step; ``fit`` returns on rank 0 only.

    With ``checkpoints`` (``checkpoints.py``) the run writes a checkpoint now and then
    (rank 0) and, started again, goes on from the latest one: same batches, same result.
    """
    import torch

    if not items:
        raise ValueError("nothing to train on")
    seed_everything(config.seed)
    named = _trained_parameters(head, backbone)
    groups = [{"params": [p for n, p in named.items() if n.startswith("head.")], "lr": config.lr}]
    if backbone is not None and not backbone.frozen:
        tuned = [p for n, p in named.items() if n.startswith("backbone.")]
        groups.append({"params": tuned, "lr": config.backbone_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=config.weight_decay)
    trained = list(named.values())
    world = distributed.join(trained[0].device if trained else None)
    order = list(range(len(items)))
    rng = random.Random(config.seed)
    steps_per_epoch = math.ceil(len(items) / config.batch_size)
    epochs_run = config.epochs
    if config.min_steps:  # a small set gets more passes
        epochs_run = max(epochs_run, math.ceil(config.min_steps / steps_per_epoch))
    total = steps_per_epoch * epochs_run
    if config.max_steps:
        total = min(total, config.max_steps)
    losses: list[float] = []
    epochs: list[list[float]] = []
    position = len(order)  # where the next batch starts in this pass's order
    if checkpoints is not None:
        if backbone is not None:  # the weights under the trained ones make the run too
            checkpoints = checkpoints.also(backbone=backbone.identity)
        run_id = fingerprint(items, config, named, checkpoints.identity)
        resumed = checkpoints.read(run_id)
        if resumed is not None:
            run, state = resumed
            losses, epochs, order = run["losses"], run["epochs"], run["order"]
            position = run["position"]
            rng.setstate(_random_state(run["random"]))
            _restore(named, optimizer, state)
            say(f"{description}: going on from the checkpoint at step {len(losses)} of {total}")
    if world is not None:
        distributed.same_start(trained)
    head.train()
    if backbone is not None:
        backbone.train(True)
    shown = distributed.shows_progress(progress)
    with progress_bar(total, description, enabled=shown, start=len(losses)) as advance:
        while len(losses) < total:
            if position >= len(order):
                rng.shuffle(order)
                epochs.append([])
                position = 0
            batch = [items[i] for i in order[position : position + config.batch_size]]
            position += config.batch_size
            if world is None:
                loss = loss_of(batch)
                optimizer.zero_grad()
                loss.backward()
                value = float(loss.detach())
            else:
                value = _distributed_step(trained, optimizer, loss_of, batch, world)
            optimizer.step()
            losses.append(value)
            epochs[-1].append(value)
            advance(1)
            if checkpoints and distributed.is_rank0():
                if checkpoints.due() or len(losses) == total:
                    run = {"step": len(losses), "losses": losses, "epochs": epochs}
                    run |= {"order": order, "position": position, "random": rng.getstate()}
                    checkpoints.write(run | {"fingerprint": run_id}, _state(named, optimizer))
    distributed.leave_unless_rank0()
    head.eval()
    if backbone is not None:
        backbone.train(False)
    return {
        "steps": len(losses),
        "first_loss": losses[0],
        "last_loss": losses[-1],
        "losses": [round(x, 5) for x in losses],
        "epoch_losses": [round(sum(e) / len(e), 5) for e in epochs],
    }


def _trained_parameters(head: Any, backbone: Backbone | None) -> dict[str, Any]:
    """The parameters ``fit`` trains, by name (``head.`` / ``backbone.``)."""
    named = {f"head.{n}": p for n, p in head.named_parameters() if p.requires_grad}
    if backbone is not None and not backbone.frozen:
        tuned = backbone.model.named_parameters()
        named |= {f"backbone.{n}": p for n, p in tuned if p.requires_grad}
    return named


def _state(named: dict[str, Any], optimizer: Any) -> dict[str, Any]:
    import torch

    return {
        "parameters": {name: p.detach().cpu().clone() for name, p in named.items()},
        "optimizer": optimizer.state_dict(),
        "torch_random": torch.get_rng_state(),
    }


def _restore(named: dict[str, Any], optimizer: Any, state: dict[str, Any]) -> None:
    import torch

    with torch.no_grad():
        for name, p in named.items():
            p.copy_(state["parameters"][name])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_random"])


def _random_state(saved: list) -> tuple:
    """``random.Random.getstate()`` back from its JSON form."""
    version, internal, gauss = saved
    return version, tuple(internal), gauss


def _distributed_step(
    trained: list, optimizer: Any, loss_of: Callable, batch: list, world: Any
) -> float:
    """This rank's share of ``batch`` forward and backward, the gradients averaged over
    the ranks; the loss of the whole batch. A rank whose share is empty still averages."""
    mine = distributed.share(batch, world)
    optimizer.zero_grad()
    loss = None
    if mine:
        loss = loss_of(mine)
        loss.backward()
    return distributed.average(trained, loss, len(mine))


def save_model(
    directory: Path,
    kind: str,
    settings: dict,
    head: Any,
    backbone: Backbone,
    metrics: dict | None = None,
) -> Path:
    import torch

    directory.mkdir(parents=True, exist_ok=True)
    backbone.save(directory)
    torch.save(head.state_dict(), directory / HEAD_FILE)
    info = {"kind": kind, "settings": settings, "metrics": metrics or {}, "rolecall": __version__}
    write_json(directory / MODEL_FILE, info)
    return directory


def read_info(directory: Path, kind: str, command: str | None = None) -> dict:
    """``model.json`` of a saved model, checked to be of ``kind`` (made by ``command``,
    default ``rolecall train KIND``)."""
    command = command or f"rolecall train {kind}"
    path = directory / MODEL_FILE
    if not directory.exists():
        raise InputFileError(
            directory,
            "no such model directory",
            fix=f"check the path, or train one: {command} ... --out DIR",
        )
    if not path.is_file():
        raise InputFileError(
            directory,
            f"has no {MODEL_FILE}: not a trained rolecall model",
            fix=f"train one with '{command} ... --out DIR'",
        )
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputFileError(
            path, f"is not valid JSON: {exc}", fix=f"train the {kind} again"
        ) from None
    if info.get("kind") != kind:
        raise InputFileError(
            directory,
            f"holds a {info.get('kind')} model, not a {kind}",
            fix=f"point at a directory written by '{command}'",
        )
    return info


def read_model(directory: str | Path, kind: str) -> tuple[dict, dict, Backbone]:
    """(settings, head state dict, backbone) of a saved model of ``kind``."""
    import torch

    directory = Path(directory)
    info = read_info(directory, kind)
    if not (directory / HEAD_FILE).is_file():
        raise InputFileError(
            directory,
            f"is missing {HEAD_FILE}",
            fix="the model directory is incomplete: train it again",
        )
    try:
        state = torch.load(directory / HEAD_FILE, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for a corrupt file
        raise InputFileError(
            directory / HEAD_FILE,
            f"cannot be read: {exc}",
            fix="the file is corrupt: train the model again",
        ) from exc
    return info["settings"], state, load_saved_backbone(directory)


def write_metrics(directory: Path, metrics: dict) -> None:
    """Add ``metrics`` to a saved model's ``model.json`` (evaluation after training)."""
    path = directory / MODEL_FILE
    info = json.loads(path.read_text(encoding="utf-8"))
    info["metrics"].update(metrics)
    write_json(path, info)


def exportable_kind(model_dir: Path) -> str:
    """The kind in ``model_dir``'s ``model.json`` when it is one ``rolecall train export``
    exports (generator, detox), else an ``InputFileError`` that says what it is."""
    path = model_dir / "model.json"
    try:
        kind = json.loads(path.read_text(encoding="utf-8")).get("kind")
    except (OSError, json.JSONDecodeError):
        raise InputFileError(
            model_dir,
            "has no readable model.json: not a trained model",
            fix="point at a directory from 'rolecall train generator' or 'rolecall detox train'",
        ) from None
    if kind not in ("generator", "detox"):
        raise InputFileError(
            model_dir,
            f"holds a {kind} model: only generator and detox models are exported",
            fix="the selection models (classifier, "
            "retriever, reranker) are used from their directories",
        )
    return kind
