import numpy as np
import pytest

from rolecall.eval.retrieval import (
    Evaluator,
    HitsEvaluator,
    gold_ranks,
    hits_at,
    sample_candidates,
)


def hits_at_1_of_k(score_fn, queries, pool, gold_index, K, seed=0) -> float:
    """Hits@1/K of a scorer, as ``HitsEvaluator`` gives it for one K."""
    return HitsEvaluator(ks=(K,), seed=seed)(score_fn, queries, pool, gold_index)[f"hits@1/{K}"]


# Three queries, three candidates each, gold in column 0:
#   row 0: gold 0.9 beats 0.1 and 0.5          -> rank 1
#   row 1: gold 0.4 loses to 0.7, beats 0.2    -> rank 2
#   row 2: gold 0.3 loses to 0.6 and 0.8       -> rank 3
SCORES = [[0.9, 0.1, 0.5], [0.4, 0.7, 0.2], [0.3, 0.6, 0.8]]


def test_hits_at_hand_computed():
    assert gold_ranks(SCORES).tolist() == [1, 2, 3]
    assert hits_at(SCORES, 1) == pytest.approx(1 / 3)  # only row 0
    assert hits_at(SCORES, 2) == pytest.approx(2 / 3)  # rows 0 and 1
    assert hits_at(SCORES, 3) == 1.0
    assert hits_at(np.array(SCORES), 5) == 1.0  # k >= K: every row is a hit


def test_ties_count_against_the_gold():
    # gold 0.5 tied with one negative: 1 + #{0.5 >= 0.5} = rank 2, so not a Hits@1
    assert gold_ranks([[0.5, 0.5, 0.1]]).tolist() == [2]
    assert hits_at([[0.5, 0.5, 0.1]], 1) == 0.0
    assert hits_at([[0.5, 0.5, 0.1]], 2) == 1.0
    # a constant scorer ranks every gold last (rank K = 5), never first
    assert gold_ranks(np.ones((4, 5))).tolist() == [5, 5, 5, 5]
    assert hits_at(np.ones((4, 5)), 1) == 0.0


@pytest.mark.parametrize("bad", [np.empty((0, 3)), np.empty((2, 0)), [1.0, 2.0], [[0.1, np.nan]]])
def test_hits_at_rejects_bad_matrices(bad):
    with pytest.raises(ValueError):
        hits_at(bad, 1)


def test_hits_at_rejects_k_below_one():
    with pytest.raises(ValueError, match="k must be 1 or more"):
        hits_at(SCORES, 0)


def test_sample_candidates_gold_first_distinct_negatives_and_deterministic():
    gold = [3, 0, 49, 17, 17, 25]
    rows = sample_candidates(6, gold, pool_size=50, K=10, seed=7)
    assert rows.shape == (6, 10)
    assert rows[:, 0].tolist() == gold
    for g, row in zip(gold, rows):
        negatives = row[1:].tolist()
        assert g not in negatives
        assert len(set(negatives)) == 9
        assert all(0 <= n < 50 for n in negatives)
    assert np.array_equal(rows, sample_candidates(6, gold, 50, 10, seed=7))
    assert not np.array_equal(rows, sample_candidates(6, gold, 50, 10, seed=8))


def test_sample_candidates_can_use_the_whole_pool():
    rows = sample_candidates(3, [0, 2, 4], pool_size=5, K=5, seed=0)
    for row in rows:
        assert sorted(row.tolist()) == [0, 1, 2, 3, 4]


def test_sample_candidates_is_uniform_over_the_others():
    # pool 5, gold 2, one negative per row: each of 0, 1, 3, 4 about 1/4 of 4000 rows
    rows = sample_candidates(4000, [2] * 4000, pool_size=5, K=2, seed=0)
    counts = np.bincount(rows[:, 1], minlength=5)
    assert counts[2] == 0
    assert all(900 < c < 1100 for c in counts[[0, 1, 3, 4]])


def test_sample_candidates_errors():
    with pytest.raises(ValueError, match="cannot draw 20 distinct candidates from a pool of 10"):
        sample_candidates(2, [0, 1], pool_size=10, K=20, seed=0)
    with pytest.raises(ValueError, match="2 entries for 3 queries"):
        sample_candidates(3, [0, 1], pool_size=10, K=5, seed=0)
    with pytest.raises(ValueError, match="range"):
        sample_candidates(2, [0, 10], pool_size=10, K=5, seed=0)
    with pytest.raises(ValueError, match="K must be"):
        sample_candidates(2, [0, 1], pool_size=10, K=0, seed=0)


# a toy retriever: query i and response j are vectors; score = dot product
POOL = np.eye(30)  # 30 orthogonal responses
QUERIES = list(range(30))  # query i is about response i
GOLD = list(range(30))


def oracle(queries, candidates):
    q = POOL[np.asarray(queries)]  # (n, d)
    return np.einsum("nd,nkd->nk", q, POOL[candidates])  # 1 for the gold, 0 elsewhere


def test_hits_at_1_of_k_with_an_index_scorer():
    assert hits_at_1_of_k(oracle, QUERIES, POOL, GOLD, K=10) == 1.0
    constant = lambda queries, candidates: np.zeros(candidates.shape)  # noqa: E731
    assert hits_at_1_of_k(constant, QUERIES, 30, GOLD, K=10) == 0.0
    # half the queries point at the wrong response: exactly those miss
    wrong = [g if g % 2 == 0 else (g + 1) % 30 for g in GOLD]
    assert hits_at_1_of_k(oracle, wrong, POOL, GOLD, K=30) == 0.5


def test_hits_at_1_of_k_checks_the_score_shape_and_empty_input():
    with pytest.raises(ValueError, match="score_fn returned shape"):
        hits_at_1_of_k(lambda q, c: np.zeros(len(q)), QUERIES, POOL, GOLD, K=5)
    with pytest.raises(ValueError, match="no queries"):
        hits_at_1_of_k(oracle, [], POOL, [], K=5)


def test_random_scorer_gets_about_one_over_k():
    rng = np.random.default_rng(1)
    noise = lambda queries, candidates: rng.random(candidates.shape)  # noqa: E731
    queries = list(range(2000))
    assert hits_at_1_of_k(noise, queries, 500, [q % 500 for q in queries], K=20) == pytest.approx(
        1 / 20, abs=0.015
    )


def test_hits_evaluator():
    evaluator = HitsEvaluator(ks=(5, 20), top=(1, 3))
    assert isinstance(evaluator, Evaluator)
    assert evaluator.primary_metric == "hits@1/5" and evaluator.greater_is_better
    metrics = evaluator(oracle, QUERIES, POOL, GOLD)
    assert metrics == {"hits@1/5": 1.0, "hits@3/5": 1.0, "hits@1/20": 1.0, "hits@3/20": 1.0}
    assert evaluator.primary(metrics) == 1.0
    assert evaluator.prefixed(metrics)["hits/hits@1/20"] == 1.0


def test_hits_evaluator_defaults_and_seeded_candidates():
    evaluator = HitsEvaluator()
    assert evaluator.primary_metric == "hits@1/20"
    seen = []

    def recording(queries, candidates):
        seen.append(candidates.copy())
        return np.zeros(candidates.shape)

    pool = list(range(120))
    metrics = evaluator(recording, [0, 1, 2], pool, [5, 6, 7])
    assert metrics == {"hits@1/20": 0.0, "hits@1/100": 0.0}
    assert [c.shape for c in seen] == [(3, 20), (3, 100)]
    evaluator(recording, [0, 1, 2], pool, [5, 6, 7])
    assert np.array_equal(seen[0], seen[2]) and np.array_equal(seen[1], seen[3])


def test_hits_evaluator_errors():
    with pytest.raises(ValueError, match="pool of 30"):
        HitsEvaluator()(oracle, QUERIES, POOL, GOLD)  # K=100 > 30 responses
    with pytest.raises(ValueError, match="top must include 1"):
        HitsEvaluator(top=(5,))
