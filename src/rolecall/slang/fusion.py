"""Reciprocal-rank fusion: one ranking from several, without comparing their scores.

BM25 scores and cosine similarities live on unrelated scales, so the hybrid slang search
fuses ranks instead (Cormack, Clarke & Büttcher, SIGIR 2009): a document's score is
``sum(1 / (k + rank))`` over the rankings that hold it, ranks counted from 1. The constant
``k`` (60 in the paper, and here) damps the head of each list, so that one ranking's first
place cannot outvote a document both rankings like.
"""

from __future__ import annotations

from collections.abc import Sequence

from rolecall.errors import ConfigError

RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]], k: int = RRF_K
) -> list[tuple[int, float]]:
    """``(document, fused score)``, best first, for every document in any ranking.

    Each ranking lists document numbers best first (a document at most once); a document
    missing from a ranking gets nothing from it. Equal scores go to the lower document
    number, i.e. the earlier comment in the corpus, so the order is stable.
    """
    if k < 0:
        raise ConfigError(f"the RRF constant k must be 0 or more, got {k}", fix="use 60")
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
