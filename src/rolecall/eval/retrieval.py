"""Hits@k for the response selection models (retriever, reranker), and the evaluator base.

The NAACL 2022 paper scores its poly-encoder retriever and cross-encoder reranker by
Hits@1/K: each context is shown its gold response among K candidates, the other K-1 drawn
at random from the pool of responses, and Hits@1/K is the share of contexts whose gold
scores highest. Here:

- ``hits_at`` turns a score matrix (one row per context, gold in column 0) into Hits@k;
- ``sample_candidates`` draws the K-candidate rows, deterministically for a seed;
- ``Evaluator`` is the small base every evaluator in ``rolecall.eval`` follows (after
  sentence-transformers' ``SentenceEvaluator``): a name, a primary metric and its
  direction, and a call that returns every metric as ``{name: float}``;
  ``HitsEvaluator`` reports Hits@1/20 and Hits@1/100 by default.

The score function sees candidate *indices* into the pool, not texts, so a retriever can
encode the pool once and score any index matrix with a gather and a dot product.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from rolecall.eval.evaluator import Evaluator

# score_fn(queries, candidate_index) -> scores, both (n_queries, K); see HitsEvaluator
ScoreFn = Callable[[Any, np.ndarray], Any]


def _score_matrix(scores: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    matrix = np.asarray(scores, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise ValueError(
            "scores must be a non-empty 2-D matrix (queries x candidates), "
            f"got shape {matrix.shape}"
        )
    if np.isnan(matrix).any():
        raise ValueError(
            "scores contain NaN: a NaN compares false to everything and would rank the gold first"
        )
    return matrix


def gold_ranks(scores_of_gold_first: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """The gold's rank in each row (1 = best): 1 + how many others score at least as high.

    Subtle: ties count against the gold. A negative scoring exactly the gold's score ranks
    above it, so a scorer that gives every candidate the same score ranks every gold last,
    not first.
    """
    matrix = _score_matrix(scores_of_gold_first)
    return 1 + (matrix[:, 1:] >= matrix[:, :1]).sum(axis=1)


def hits_at(scores_of_gold_first: np.ndarray | Sequence[Sequence[float]], k: int = 1) -> float:
    """Hits@k: the share of rows whose gold (column 0) ranks within the top ``k``.

    Each row holds one query's scores for its K candidates, gold first. Ties count against
    the gold: its rank is 1 + the number of other candidates scoring ``>=`` the gold's
    score, so a gold tied with a negative is *not* ranked first, and a constant scorer gets
    Hits@1 = 0 rather than 1. With ``k >= K`` every row is a hit.
    """
    if k < 1:
        raise ValueError(f"k must be 1 or more, got {k}")
    return float((gold_ranks(scores_of_gold_first) <= k).mean())


def sample_candidates(
    n_queries: int, gold_index: Sequence[int], pool_size: int, K: int, seed: int
) -> np.ndarray:
    """Candidate rows of shape ``(n_queries, K)``: row i is ``[gold_index[i], K-1 others]``.

    The K-1 negatives are distinct, drawn uniformly from ``range(pool_size)`` without the
    gold, with ``numpy.random.default_rng(seed)``: the same seed gives the same matrix.
    """
    gold = np.asarray(gold_index, dtype=np.int64).reshape(-1)
    if gold.shape[0] != n_queries:
        raise ValueError(f"gold_index has {gold.shape[0]} entries for {n_queries} queries")
    if K < 1:
        raise ValueError(f"K must be 1 or more, got {K}")
    if pool_size < K:
        raise ValueError(
            f"cannot draw {K} distinct candidates from a pool of {pool_size} "
            f"responses: use K <= {pool_size} or a larger pool"
        )
    if n_queries and (gold.min() < 0 or gold.max() >= pool_size):
        raise ValueError(f"gold_index values must lie in range({pool_size})")
    rng = np.random.default_rng(seed)
    rows = np.empty((n_queries, K), dtype=np.int64)
    for i, g in enumerate(gold):
        # draw from the pool minus one slot, then shift past the gold: never the gold,
        # never a repeat, and uniform over the others
        others = rng.choice(pool_size - 1, size=K - 1, replace=False)
        rows[i, 0] = g
        rows[i, 1:] = others + (others >= g)
    return rows


def _score_sample(
    score_fn: ScoreFn,
    queries: Sequence[Any],
    pool: Sized | int,
    gold_index: Sequence[int],
    K: int,
    seed: int,
) -> np.ndarray:
    """Draw the candidate rows for K and score them; the scores' shape is checked."""
    if len(queries) == 0:
        raise ValueError("no queries to evaluate")
    pool_size = int(pool) if isinstance(pool, (int, np.integer)) else len(pool)
    candidates = sample_candidates(len(queries), gold_index, pool_size, K, seed)
    scores = np.asarray(score_fn(queries, candidates), dtype=float)
    if scores.shape != candidates.shape:
        raise ValueError(
            f"score_fn returned shape {scores.shape}, "
            f"expected {candidates.shape} (queries x candidates)"
        )
    return scores


@dataclass
class HitsEvaluator(Evaluator):
    """Hits@k/K of a retriever or reranker for each K in ``ks`` (and each k in ``top``).

    Call it as ``evaluator(score_fn, queries, pool, gold_index)``: for each K,
    ``score_fn(queries, candidate_index)`` gets ``queries`` as passed and an int matrix
    ``(len(queries), K)`` of indices into ``pool`` (gold in column 0, see
    ``sample_candidates``) and returns a ``(len(queries), K)`` matrix of scores, higher =
    better (anything ``np.asarray`` takes); ``pool`` is only counted (or pass its size).
    The keys are ``"hits@{k}/{K}"``, e.g. ``{"hits@1/20": .., "hits@1/100": ..}``;
    primary ``"hits@1/{ks[0]}"``. The
    candidates for each K are drawn with ``seed``, so repeated evaluations of different
    models see the same candidates.
    """

    name: str = "hits"
    ks: tuple[int, ...] = (20, 100)
    seed: int = 0
    top: tuple[int, ...] = (1,)
    greater_is_better: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if not self.ks or not self.top:
            raise ValueError("HitsEvaluator needs at least one K and one k")
        if 1 not in self.top:
            raise ValueError("top must include 1: Hits@1/K is the primary metric")

    @property
    def primary_metric(self) -> str:  # type: ignore[override]
        return f"hits@1/{self.ks[0]}"

    def __call__(
        self,
        score_fn: ScoreFn,
        queries: Sequence[Any],
        pool: Sized | int,
        gold_index: Sequence[int],
    ) -> dict[str, float]:
        metrics: dict[str, float] = {}
        for K in self.ks:
            scores = _score_sample(score_fn, queries, pool, gold_index, K, self.seed)
            for k in self.top:
                metrics[f"hits@{k}/{K}"] = hits_at(scores, k)
        return metrics
