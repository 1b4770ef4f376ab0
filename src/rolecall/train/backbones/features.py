"""Token states of a frozen backbone, computed once per input and kept on disk.

A frozen backbone (the embedded Gemma on a CPU) gives the same states for the same input
in every epoch, every run and every model trained on the same data, so ``Features`` runs
it once per text (or text pair), in batches, and stores the states as float16 under
``cache_dir``. Shards are written as they fill (``SHARD`` inputs each): a killed run keeps
every finished shard (a shard half written is dropped) and the next one computes only what
is missing. Opening a cache reads only the shards' directories; an input's states are read
when first asked for, so a cache of many inputs costs memory only for those used. A
trainable backbone is run afresh on every call (its weights change), with gradients.

Keys are SHA-256 of the backbone identity, the length limit and the input, so changing any
of them never returns stale states.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rolecall.progress import progress_bar
from rolecall.train.backbones.base import Backbone

SHARD = 2048
PARTIAL = ".partial.npz"


class Features:
    """``texts(...)`` and ``pairs(...)`` give (hidden [B, T, H] float, mask [B, T] bool)."""

    def __init__(self, backbone: Backbone, cache_dir: Path | None = None, batch_size: int = 32):
        self.backbone, self.batch_size = backbone, batch_size
        self.cache_dir = cache_dir if backbone.frozen else None
        self._memory: dict[str, np.ndarray] = {}
        self._pending: dict[str, np.ndarray] = {}
        # key -> its shard, opened lazily: only the zip directory is read here, an input's
        # states when first asked for, so a large cache costs memory only for what is used
        self._on_disk: dict[str, Any] = {}
        if self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            for shard in sorted(self.cache_dir.glob("shard-*.npz")):
                if shard.name.endswith(PARTIAL):  # a run killed while writing it
                    shard.unlink(missing_ok=True)
                    continue
                data = np.load(shard)
                self._on_disk.update(dict.fromkeys(data.files, data))

    def texts(self, texts: Sequence[str], max_length: int, side: str = "right"):
        def run(chunk):
            return self.backbone.batch_texts(chunk, max_length, side)

        keyed = self._keyed("texts", texts, max_length, side=side)
        return self._states([key for key, _ in keyed], list(texts), run)

    def pairs(
        self,
        firsts: Sequence[str],
        seconds: Sequence[str],
        max_length: int,
        second_max: int | None = None,
    ):
        def run(chunk):
            return self.backbone.batch_pairs(
                [a for a, _ in chunk], [b for _, b in chunk], max_length, second_max
            )

        items = list(zip(firsts, seconds))
        keyed = self._keyed("pairs", items, max_length, second_max=second_max)
        return self._states([key for key, _ in keyed], items, run)

    def precompute(
        self,
        kind: str,
        items: Sequence[Any],
        max_length: int,
        progress: bool = True,
        **options: Any,
    ) -> None:
        """Fill the cache for ``items`` in batches, with a progress bar (frozen only)."""
        if self.cache_dir is None and not self.backbone.frozen:
            return
        step = self.batch_size * 8
        with progress_bar(len(items), f"features ({kind})", enabled=progress) as bar:
            for start in range(0, len(items), step):
                chunk = items[start : start + step]
                if kind == "texts":
                    self.texts(chunk, max_length, **options)
                else:
                    self.pairs([a for a, _ in chunk], [b for _, b in chunk], max_length, **options)
                bar(len(chunk))
        self.flush()

    def missing(
        self, kind: str, items: Sequence[Any], max_length: int, **options: Any
    ) -> dict[str, Any]:
        """{key: item} of the ``items`` whose states are neither in memory nor on disk (the
        first of duplicates), keyed as ``texts`` / ``pairs`` key them: what another process
        (a Ray worker, ``features_ray.py``) should compute for this cache."""
        found: dict[str, Any] = {}
        for key, item in self._keyed(kind, items, max_length, **options):
            if not self._has(key):
                found.setdefault(key, item)
        return found

    def add(self, states: dict[str, np.ndarray], keep: bool = True) -> None:
        """Keep states computed elsewhere (float16 [tokens, H] per key from ``missing``);
        a shard is written whenever ``SHARD`` are pending, as ``texts`` / ``pairs`` do,
        and ``flush`` writes the rest. ``keep=False`` only writes them (a job filling a
        cache for others holds no more than a shard in memory; this object then no
        longer knows them: open the cache again to read them)."""
        for key, value in states.items():
            if keep or self.cache_dir is None:
                self._memory[key] = value
            if self.cache_dir is not None:
                self._pending[key] = value
        if len(self._pending) >= SHARD:
            self.flush()

    def flush(self) -> None:
        if self.cache_dir is None or not self._pending:
            return
        taken = [
            int(p.name[6:11])
            for p in self.cache_dir.glob("shard-*.npz")
            if not p.name.endswith(PARTIAL) and p.name[6:11].isdigit()
        ]
        number = max(taken, default=-1) + 1
        partial = self.cache_dir / f"shard-{number:05d}{PARTIAL}"
        np.savez(partial, **self._pending)
        partial.rename(self.cache_dir / f"shard-{number:05d}.npz")  # atomic: whole or none
        self._pending = {}

    # ---- internals ---------------------------------------------------------------------

    def _keyed(
        self, kind: str, items: Sequence[Any], max_length: int, **options: Any
    ) -> list[tuple[str, Any]]:
        """(key, item) of each of ``items``: the one place a cache key is made, so that
        ``texts`` / ``pairs`` and ``missing`` (a Ray worker's job) always agree."""
        if kind == "texts":
            side = options.get("side", "right")
            return [(self._key("T", max_length, side, text), text) for text in items]
        second_max = options.get("second_max")
        return [(self._key("P", max_length, second_max, a, b), (a, b)) for a, b in items]

    def _has(self, key: str) -> bool:
        return key in self._memory or key in self._on_disk

    def _key(self, *parts: Any) -> str:
        text = "\x1f".join([self.backbone.identity, *(str(p) for p in parts)])
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _stored(self, key: str) -> np.ndarray:
        if key not in self._memory:
            self._memory[key] = self._on_disk.pop(key)[key]
        return self._memory[key]

    def _states(self, keys: list[str], items: list[Any], run):
        if not self.backbone.frozen:
            return self.backbone.states(run(items))
        import torch

        missing = list(dict.fromkeys(k for k in keys if not self._has(k)))
        if missing:
            index = {key: item for key, item in zip(keys, items)}
            for start in range(0, len(missing), self.batch_size):
                chunk = missing[start : start + self.batch_size]
                hidden, mask = self.backbone.states(run([index[k] for k in chunk]))
                self.add(
                    {
                        key: hidden[row][mask[row]].numpy().astype(np.float16)
                        for row, key in enumerate(chunk)
                    }
                )
        arrays = [self._stored(k) for k in keys]
        width = max(1, max(len(a) for a in arrays))
        hidden = torch.zeros((len(arrays), width, self.backbone.hidden_size))
        mask = torch.zeros((len(arrays), width), dtype=torch.bool)
        for row, states in enumerate(arrays):
            hidden[row, : len(states)] = torch.from_numpy(states.astype(np.float32))
            mask[row, : len(states)] = True
        return hidden, mask


def mean_pool(hidden, mask):
    """Masked mean over tokens: [B, T, H], [B, T] -> [B, H]."""
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)


def last_index(mask):
    """[B, T] mask -> [B] position of each row's last real token (0 for an empty row).

    subtle: both the padded batches and the cached features put every row's tokens first,
    so the last real token sits at ``mask.sum(1) - 1``."""
    return (mask.long().sum(1) - 1).clamp(min=0)
