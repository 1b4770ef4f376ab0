import sys

import numpy as np
import pytest

from rolecall.errors import BackendNotInstalled
from rolecall.eval.classification import precision_recall_f1
from rolecall.eval.evaluator import Evaluator
from rolecall.eval.thresholds import (
    UnanswerableEvaluator,
    max_f1_threshold,
    roc_auc,
    roc_curve,
    save_roc_png,
)

# scikit-learn's documentation example: positives score 0.35 and 0.8, negatives 0.1 and 0.4
LABELS, SCORES = [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]


def test_roc_curve_hand_computed():
    fpr, tpr, thresholds = roc_curve(LABELS, SCORES)
    # >= inf: nothing; >= 0.8: 1 pos; >= 0.4: 1 pos 1 neg; >= 0.35: 2 pos 1 neg; all
    assert thresholds.tolist() == [np.inf, 0.8, 0.4, 0.35, 0.1]
    assert fpr.tolist() == [0.0, 0.0, 0.5, 0.5, 1.0]
    assert tpr.tolist() == [0.0, 0.5, 0.5, 1.0, 1.0]


def test_roc_auc_hand_computed():
    # pairs (pos, neg): (0.35,0.1) yes, (0.35,0.4) no, (0.8,0.1) yes, (0.8,0.4) yes = 3/4
    assert roc_auc(LABELS, SCORES) == 0.75
    assert roc_auc([0, 1], [0.2, 0.9]) == 1.0
    assert roc_auc([0, 1], [0.9, 0.2]) == 0.0


def test_ties_count_half():
    # pos 0.5, 0.9; neg 0.5, 0.1: (0.5,0.5) half, the other three pairs won = 3.5/4
    labels, scores = [1, 0, 1, 0], [0.5, 0.5, 0.9, 0.1]
    assert roc_auc(labels, scores) == 0.875
    fpr, tpr, _ = roc_curve(labels, scores)
    assert fpr.tolist() == [0.0, 0.0, 0.5, 1.0] and tpr.tolist() == [0.0, 0.5, 1.0, 1.0]
    assert np.trapezoid(tpr, fpr) == pytest.approx(0.875)  # the tie is the diagonal step
    assert roc_auc([0, 1, 0, 1, 1], [3.0] * 5) == 0.5  # a constant score: chance


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_a_brute_force_count_on_random_data(seed):
    # the wrappers over scikit-learn against counting every pair and every threshold
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 300)
    scores = np.round(rng.normal(labels * 0.7, 1.0), 1)  # rounded: many ties
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    assert roc_auc(labels, scores) == pytest.approx(wins / (len(pos) * len(neg)))
    fpr, tpr, thresholds = roc_curve(labels, scores)
    assert thresholds[0] == np.inf and thresholds[1:].tolist() == sorted(set(scores))[::-1]
    assert np.allclose(tpr, [(pos >= t).mean() for t in thresholds])
    assert np.allclose(fpr, [(neg >= t).mean() for t in thresholds])
    best = max(
        (precision_recall_f1(labels, (scores >= t).astype(int))[2], t) for t in set(scores)
    )  # equal F1: the larger threshold wins
    threshold, f1, _, _ = max_f1_threshold(labels, scores)
    assert (f1, threshold) == (pytest.approx(best[0]), best[1])


@pytest.mark.parametrize(
    "labels, scores, match",
    [
        ([1, 1, 1], [0.1, 0.2, 0.3], "only one class"),
        ([0, 0], [0.1, 0.2], "only one class"),
        ([], [], "empty"),
        ([0, 1, 2], [0.1, 0.2, 0.3], "0 or 1"),
        ([0, 1], [0.1], "same length"),
        ([0, 1], [0.1, np.nan], "NaN"),
    ],
)
def test_errors(labels, scores, match):
    for function in (roc_auc, roc_curve, max_f1_threshold):
        with pytest.raises(ValueError, match=match):
            function(labels, scores)


def test_max_f1_threshold_hand_computed():
    labels, scores = [1, 1, 0, 1, 0, 0], [0.9, 0.8, 0.7, 0.6, 0.3, 0.2]
    # F1 = 2TP / (2TP + FP + FN) for "positive when score >= t", 3 positives in all:
    #   t=0.9: TP1 FP0 FN2 -> 2/4    t=0.8: TP2 FP0 FN1 -> 4/5    t=0.7: TP2 FP1 FN1 -> 4/6
    #   t=0.6: TP3 FP1 FN0 -> 6/7    t=0.3: TP3 FP2 -> 6/8        t=0.2: TP3 FP3 -> 6/9
    threshold, f1, precision, recall = max_f1_threshold(labels, scores)
    assert threshold == 0.6
    assert f1 == pytest.approx(6 / 7)
    assert (precision, recall) == (0.75, 1.0)  # 3/4 flagged are positive; all 3 found


def test_max_f1_threshold_prefers_the_larger_threshold_on_equal_f1():
    # t=0.9: TP1 FP0 FN1 -> 2/3; t=0.6: 2/4; t=0.5: 2/5; t=0.1: TP2 FP2 FN0 -> 4/6 = 2/3
    threshold, f1, precision, recall = max_f1_threshold([1, 0, 0, 1], [0.9, 0.6, 0.5, 0.1])
    assert (threshold, f1, precision, recall) == (0.9, pytest.approx(2 / 3), 1.0, 0.5)


def test_max_f1_threshold_with_tied_scores():
    # t=0.9: TP1 FP0 FN1 -> 2/3; t=0.5 (two items): TP2 FP1 -> 4/5; t=0.1: TP2 FP2 -> 4/6
    threshold, f1, precision, recall = max_f1_threshold([1, 0, 1, 0], [0.5, 0.5, 0.9, 0.1])
    assert (threshold, f1) == (0.5, pytest.approx(0.8))
    assert (precision, recall) == (pytest.approx(2 / 3), 1.0)


def test_unanswerable_evaluator():
    labels, perplexity = [1, 1, 0, 1, 0, 0], [0.9, 0.8, 0.7, 0.6, 0.3, 0.2]
    evaluator = UnanswerableEvaluator()
    assert isinstance(evaluator, Evaluator)
    assert evaluator.primary_metric == "roc_auc" and evaluator.greater_is_better
    metrics = evaluator(labels, perplexity)
    # AUC: of the 9 (pos, neg) pairs only (0.6, 0.7) is lost -> 8/9
    assert metrics == {
        "roc_auc": pytest.approx(8 / 9),
        "threshold": 0.6,
        "f1": pytest.approx(6 / 7),
        "precision": 0.75,
        "recall": 1.0,
        # the threshold that keeps "unanswerable" 0.9 precise: the top two flagged
        "precise": {"min_precision": 0.9, "threshold": 0.8, "precision": 1.0, "recall": 2 / 3},
    }


def test_unanswerable_evaluator_with_confidence_scores():
    # MC-dropout confidence: high = the response fits, so it runs the other way
    labels, confidence = [1, 1, 0, 1, 0, 0], [0.1, 0.2, 0.3, 0.4, 0.7, 0.8]
    metrics = UnanswerableEvaluator(higher_is_unanswerable=False)(labels, confidence)
    negated = UnanswerableEvaluator()(labels, [-c for c in confidence])
    assert metrics["roc_auc"] == negated["roc_auc"] == pytest.approx(8 / 9)
    assert metrics["threshold"] == 0.4 == -negated["threshold"]  # back in the caller's scale
    assert metrics["precise"]["threshold"] == 0.2 == -negated["precise"]["threshold"]
    flags = np.asarray(confidence) <= metrics["threshold"]  # the other way: <=
    assert flags.tolist() == [True, True, True, True, False, False]
    assert precision_recall_f1(labels, flags.astype(int))[2] == pytest.approx(metrics["f1"])


def test_save_roc_png(tmp_path):
    pytest.importorskip("matplotlib")
    fpr, tpr, _ = roc_curve(LABELS, SCORES)
    path = save_roc_png(
        {"perplexity": (fpr, tpr), "mc dropout": ([0, 1], [0, 1])},
        tmp_path / "plots" / "roc.png",
        title="unanswerable",
    )
    assert path == tmp_path / "plots" / "roc.png"
    data = path.read_bytes()
    assert len(data) > 1000 and data.startswith(b"\x89PNG\r\n\x1a\n")


def test_save_roc_png_errors(tmp_path):
    with pytest.raises(ValueError, match="no curves"):
        save_roc_png({}, tmp_path / "roc.png", "t")
    with pytest.raises(ValueError, match="same length"):
        save_roc_png({"a": ([0, 1], [0, 0.5, 1])}, tmp_path / "roc.png", "t")


def test_save_roc_png_without_matplotlib(tmp_path, monkeypatch):
    # a None entry in sys.modules makes the import fail as if the package were missing
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(BackendNotInstalled) as raised:
        save_roc_png({"a": ([0, 1], [0, 1])}, tmp_path / "roc.png", "t")
    assert "rolecall[models]" in raised.value.fix
    assert not (tmp_path / "roc.png").exists()


def test_a_cross_fitted_threshold_is_chosen_on_one_half_and_scored_on_the_other():
    from rolecall.eval.thresholds import cross_fitted_threshold, max_f1_threshold

    labels = [0] * 10 + [1] * 6
    scores = [0.1 * i for i in range(10)] + [0.55, 0.65, 0.95, 1.2, 1.3, 0.05]
    found = cross_fitted_threshold(labels, scores, seed=0)
    assert found["threshold"] == max_f1_threshold(labels, scores)[0]
    # the other half never saw the threshold it is judged by: no better than where chosen
    assert found["f1"] <= found["f1_where_chosen"] + 1e-9
    assert cross_fitted_threshold([0, 0, 1], [0.1, 0.2, 0.9]) is None
    assert found == cross_fitted_threshold(labels, scores, seed=0)
