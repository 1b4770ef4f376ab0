"""BM25 beside the retriever: a hybrid first stage for the bot's response selection.

On role-specified dialogue a frozen-feature retriever is weak where words carry the turn
(the care-call example's held-out dialogues, ``bench/retrieval_quality.py``: BM25 on the
last user turn beats a poly-encoder on frozen states there, and the two scores
standardised and summed beat both). ``LexicalScorer`` holds a BM25 index (bm25s, Kiwi
content morphemes: the slang index's tokens and parameters) over the bot's candidate
responses; ``fuse`` joins its scores with the retriever's over the same candidates, each
standardised over them (z-scores: BM25 is 0 for most candidates, so the few with shared
words stand out; reciprocal-rank fusion measured worse in the same bench). BM25's z-score
is capped at ``LEXICAL_CAP``: BM25 is 0 for most candidates, so one rare shared word gave
a candidate a z far above any retriever score ("고마워요" pulled a thank-you for sharing
above every goodbye). Capped, the fused first stage gained on both data sets of that bench
(care-call and chatbot_data, every split), where uncapped fusion had fallen below the
retriever alone; other caps, log and square-root transforms and min-max scaling measured
in between or below. The numbers are in docs/benchmarks.md.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import numpy as np

from rolecall.retrieval.tokens import search_tokens

LEXICAL_CAP = 2.0  # the most a candidate's BM25 z-score adds (bench/retrieval_quality.py)


class LexicalScorer:
    """BM25 scores of a query against every candidate text (built once, in memory)."""

    def __init__(self, texts: Sequence[str]):
        from rolecall.retrieval.bm25 import BM25_PARAMS, load_bm25s

        self.model = load_bm25s().BM25(**BM25_PARAMS)
        self.model.index(search_tokens([_nfc(t) for t in texts]), show_progress=False)
        self.vocab = self.model.vocab_dict
        self.size = len(texts)

    def scores(self, query: str) -> np.ndarray:
        """[candidates] BM25 scores; all 0 when the query shares no token with any."""
        return self.scores_many([query])[0]

    def scores_many(self, queries: Sequence[str]) -> np.ndarray:
        """[queries, candidates] BM25 scores (the queries tokenized in one call)."""
        rows = np.zeros((len(queries), self.size))
        for row, tokens in zip(rows, search_tokens([_nfc(q) for q in queries]), strict=True):
            ids = [self.vocab[t] for t in tokens if t in self.vocab]
            if ids:
                row[:] = self.model.get_scores_from_ids(ids)
        return rows


def standardised(scores: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance along the last axis (zeros where the scores are all
    equal): one context's candidates, or a row per context."""
    scores = np.asarray(scores, dtype=float)
    centred = scores - scores.mean(axis=-1, keepdims=True)
    spread = scores.std(axis=-1, keepdims=True)
    return np.divide(centred, spread, out=np.zeros_like(scores), where=spread > 0)


def fuse(
    dense: np.ndarray, lexical: np.ndarray, weight: float, cap: float | None = LEXICAL_CAP
) -> np.ndarray:
    """``z(dense) + weight * min(z(lexical), cap)`` over one context's candidates (the last
    axis); ``cap`` None: uncapped."""
    lexical_z = standardised(lexical)
    if cap is not None:
        lexical_z = np.minimum(lexical_z, cap)
    return standardised(dense) + weight * lexical_z


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)
