"""Checkpoints of a training run, so that a killed ``fit`` goes on where it stood.

A run on a CPU can take hours (the detox model on all K/DA pairs: ~2.5 h on 2 cores).
Every ``every_seconds`` ``loop.fit`` writes what it needs to go on into ``DIRECTORY``:
``step-N/state.pt`` (the trained parameters, the optimizer's moments, the torch random
state) and ``step-N/run.json`` (the steps' losses, the pass's batch order and where in
it the run stood, the shuffling random state, and the run's fingerprint), then points
``latest`` at ``step-N`` (one atomic rename) and removes the older step. A run killed
at any moment leaves the last whole checkpoint.

Started again on the same items with the same settings, ``fit`` reads it and goes on
from that step: the batches, the dropout and the result are those of an uninterrupted
run. A checkpoint of another run (other items, settings or trained parameters) is
refused with the fix, never silently mixed in. The training commands keep it in
``OUT/.checkpoint`` and remove it once the model is saved.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rolecall.atomic import write_text_atomic
from rolecall.errors import InputFileError
from rolecall.rundir import write_json

DIRECTORY = ".checkpoint"  # inside a training command's --out
EVERY_SECONDS = 300.0
LATEST = "latest"
STATE_FILE = "state.pt"
RUN_FILE = "run.json"


@dataclass
class Checkpoints:
    """Where and how often ``fit`` writes checkpoints; ``identity``: what else makes
    the run this run (a model's settings), compared on resuming."""

    directory: Path
    every_seconds: float = EVERY_SECONDS
    identity: dict[str, Any] = field(default_factory=dict)
    _last: float = field(default_factory=time.monotonic, init=False, repr=False)

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.every_seconds

    def write(self, run: dict[str, Any], state: dict[str, Any]) -> None:
        """Step ``run["step"]``: the new step directory first, then ``latest``, then the
        old step away, so that a kill at any point leaves one whole checkpoint."""
        import torch

        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"step-{run['step']}"
        temp = self.directory / (name + ".tmp")
        shutil.rmtree(temp, ignore_errors=True)
        temp.mkdir()
        torch.save(state, temp / STATE_FILE)
        write_json(temp / RUN_FILE, run)
        final = self.directory / name
        shutil.rmtree(final, ignore_errors=True)
        os.replace(temp, final)
        write_text_atomic(self.directory / LATEST, name)
        for old in self.directory.glob("step-*"):
            if old.name != name:
                shutil.rmtree(old, ignore_errors=True)
        self._last = time.monotonic()

    def read(self, fingerprint: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """(run, state) of the latest checkpoint, None when there is none; a checkpoint
        whose fingerprint differs from ``fingerprint`` is refused."""
        import torch

        pointer = self.directory / LATEST
        if not pointer.is_file():
            return None
        step = self.directory / pointer.read_text(encoding="utf-8").strip()
        try:
            run = json.loads((step / RUN_FILE).read_text(encoding="utf-8"))
            state = torch.load(step / STATE_FILE, map_location="cpu", weights_only=True)
        except Exception as exc:  # a missing, cut or foreign file: torch raises many kinds
            raise InputFileError(
                step,
                f"is not a readable training checkpoint ({exc})",
                fix=f"delete {self.directory} to train from the start",
            ) from exc
        if run.get("fingerprint") != fingerprint:
            differs = sorted(
                key
                for key in {*fingerprint, *run.get("fingerprint", {})}
                if fingerprint.get(key) != run.get("fingerprint", {}).get(key)
            )
            raise InputFileError(
                self.directory,
                f"holds a checkpoint of another training run ({', '.join(differs)} differ)",
                fix=f"train with the same data and options to go on, or delete "
                f"{self.directory} to start over",
            )
        self._last = time.monotonic()
        return run, state

    def also(self, **identity: Any) -> Checkpoints:
        """These checkpoints with more of what makes the run this run."""
        return Checkpoints(self.directory, self.every_seconds, self.identity | identity)

    def clear(self) -> None:
        """Remove the checkpoints (the model they lead to is saved)."""
        shutil.rmtree(self.directory, ignore_errors=True)


def digest(items: Sequence[Any]) -> str:
    """``COUNT:HASH`` of the items' ``repr`` (records and plain values repr stably)."""
    hashed = hashlib.sha256()
    for item in items:
        hashed.update(repr(item).encode("utf-8"))
        hashed.update(b"\0")
    return f"{len(items)}:{hashed.hexdigest()[:16]}"


def fingerprint(
    items: Sequence[Any], config: Any, trained: dict[str, Any], identity: dict[str, Any]
) -> dict[str, Any]:
    """What must match for a checkpoint to go on: the items (hashed), the training
    config, the trained parameters' names and shapes, and the caller's ``identity``."""
    return json.loads(
        json.dumps(
            {
                "items": digest(items),
                "config": config.model_dump(),
                "parameters": {name: list(p.shape) for name, p in trained.items()},
                "identity": identity,
            },
            default=str,
        )
    )
