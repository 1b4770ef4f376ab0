"""ROC curves, ROC AUC and the max-F1 threshold of the "unanswerable context" detector.

The NAACL 2022 paper decides whether the retrieved response fits the context with a score,
either the reranker's MC-dropout confidence (mean - variance of its scores under dropout)
or the LM perplexity of the response, and flags the context *unanswerable* when the score
passes a threshold, chosen where F1 is highest on a validation set with hard negatives
(Appendix C, see ``validation_set``). It reports ROC AUC for the detector.

Conventions here: label 1 = unanswerable (the positive class); a higher score = more likely
unanswerable, and a context is flagged when ``score >= threshold``. Perplexity already
points that way; MC-dropout confidence points the other way (high = the response fits), so
negate it, or give ``UnanswerableEvaluator`` ``higher_is_unanswerable=False``.

ROC curve and AUC are scikit-learn's; the max-F1 search (which it lacks) counts on its ROC
curve. subtle: ``sklearn.metrics`` takes about 2 s to import and the bot imports this
module at start-up (``serve/unanswerable.py``), so it is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from rolecall.errors import BackendNotInstalled
from rolecall.eval.evaluator import Evaluator


def _binary(labels: Sequence[int], scores: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Labels as 0/1 ints and scores as floats, checked: same length, both classes, no NaN."""
    y, s = np.asarray(labels), np.asarray(scores, dtype=float)
    if y.ndim != 1 or s.ndim != 1 or len(y) != len(s):
        raise ValueError(
            "labels and scores must be flat lists of the same length, got "
            f"shapes {y.shape} and {s.shape}"
        )
    if len(y) == 0:
        raise ValueError("no labels to evaluate (labels is empty)")
    bad = ~np.isin(y, (0, 1))
    if bad.any():
        raise ValueError(f"labels must be 0 or 1 (1 = positive), got {y[bad][0]!r}")
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    y = y.astype(np.int64)
    if y.min() == y.max():
        raise ValueError(
            f"only one class present in labels (all {int(y[0])}): ROC AUC and "
            "the F1 threshold need both positives (1) and negatives (0)"
        )
    return y, s


def roc_curve(
    labels: Sequence[int], scores: Sequence[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(fpr, tpr, thresholds)``: one point per distinct score, predicting 1 for ``>= t``.

    scikit-learn's ``roc_curve`` with ``drop_intermediate=False``: thresholds fall from
    ``+inf`` (nothing flagged, the point (0, 0)) to the lowest score (everything flagged,
    (1, 1)).
    """
    from sklearn.metrics import roc_curve as curve  # lazy, see the module docstring

    y, s = _binary(labels, scores)
    fpr, tpr, thresholds = curve(y, s, drop_intermediate=False)
    return fpr, tpr, thresholds


def roc_auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve: P(a random positive scores above a random negative), a
    tied positive/negative pair counting half (scikit-learn's ``roc_auc_score``).
    ValueError when only one class is present: the area is undefined then.
    """
    from sklearn.metrics import roc_auc_score  # lazy, see the module docstring

    y, s = _binary(labels, scores)
    return float(roc_auc_score(y, s))


def max_f1_threshold(
    labels: Sequence[int], scores: Sequence[float]
) -> tuple[float, float, float, float]:
    """``(threshold, f1, precision, recall)`` at the threshold with the best F1.

    Predicting 1 for ``score >= threshold``; the search runs over the distinct scores, and
    of thresholds with equal F1 the larger one wins (fewer contexts flagged).
    scikit-learn has no max-F1 search; the counts come from its ROC curve.
    """
    fpr, tpr, thresholds = roc_curve(labels, scores)
    y = np.asarray(labels)
    n_pos = int(y.sum())
    # subtle: F1 from float precision and recall can differ in the last bit between two
    # thresholds that tie; back to integer counts, 2TP / (2TP + FP + FN) is one division
    # of integers, so equal F1s compare equal exactly. [1:] drops the +inf point.
    tps = np.rint(tpr[1:] * n_pos).astype(np.int64)
    fps = np.rint(fpr[1:] * (len(y) - n_pos)).astype(np.int64)
    f1 = 2 * tps / (2 * tps + fps + (n_pos - tps))
    best = int(np.argmax(f1))  # first maximum = the largest threshold (thresholds fall)
    return (
        float(thresholds[1:][best]),
        float(f1[best]),
        float(tps[best] / (tps[best] + fps[best])),
        float(tps[best] / n_pos),
    )


def precise_threshold(
    labels: Sequence[int], scores: Sequence[float], min_precision: float
) -> tuple[float, float, float] | None:
    """``(threshold, precision, recall)``: of the thresholds whose flagged items (``score >=
    threshold``) are positives at least ``min_precision`` of the time, the one that flags
    the most positives; None when no threshold is that precise."""
    y, s = np.asarray(labels).astype(int), np.asarray(scores, dtype=float)
    order = np.argsort(-s, kind="stable")
    hits = np.cumsum(y[order])
    flagged = np.arange(1, len(y) + 1)
    # a threshold flags every item whose score reaches it: only the last of equal scores
    last = np.r_[s[order][1:] != s[order][:-1], True]
    precision = hits / flagged
    ok = np.flatnonzero(last & (precision >= min_precision) & (hits > 0))
    if not len(ok):
        return None
    best = ok[np.argmax(hits[ok])]
    return float(s[order][best]), float(precision[best]), float(hits[best] / max(y.sum(), 1))


def cross_fitted_threshold(
    labels: Sequence[int], scores: Sequence[float], seed: int = 0
) -> dict[str, float] | None:
    """The max-F1 threshold over all of ``labels``/``scores``, and what choosing it that way
    is worth on items it was not chosen on: the items split in two halves (stratified, by
    ``seed``), each half's own max-F1 threshold applied to the other half, the predictions
    pooled into one precision, recall and F1. None without two items of each label.

    Choosing a threshold and reporting it on one set flatters it; the cross-fitted numbers
    do not (the threshold served is still the one chosen on all the items)."""
    y, s = np.asarray(labels).astype(int), np.asarray(scores, dtype=float)
    if min(int(y.sum()), int(len(y) - y.sum())) < 2:
        return None
    threshold, f1, precision, recall = max_f1_threshold(y, s)
    order = np.random.default_rng(seed).permutation(len(y))
    halves: list[list[int]] = [[], []]
    for label in (0, 1):
        for i, index in enumerate(order[y[order] == label]):
            halves[i % 2].append(int(index))
    predicted = np.zeros(len(y), dtype=int)
    for chosen_on, applied_to in ((0, 1), (1, 0)):
        a, b = halves[chosen_on], halves[applied_to]
        t = max_f1_threshold(y[a], s[a])[0]
        predicted[b] = s[b] >= t
    tp = int(((predicted == 1) & (y == 1)).sum())
    fp, fn = int(((predicted == 1) & (y == 0)).sum()), int(((predicted == 0) & (y == 1)).sum())
    return {
        "threshold": threshold,
        "f1_where_chosen": f1,
        "precision_where_chosen": precision,
        "recall_where_chosen": recall,
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "f1": 2 * tp / (2 * tp + fp + fn) if tp else 0.0,
    }


def _area(fpr: Sequence[float], tpr: Sequence[float]) -> float:
    from sklearn.metrics import auc

    x, y = np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float)
    if x.ndim != 1 or x.shape != y.shape or len(x) < 2:
        raise ValueError("each curve needs fpr and tpr of the same length, 2 points or more")
    return float(auc(x, y))


def save_roc_png(
    curves: dict[str, tuple[Sequence[float], Sequence[float]]], path: str | Path, title: str
) -> Path:
    """Plot ROC curves ``{label: (fpr, tpr)}`` with their AUC and the chance diagonal.

    Writes a PNG at ``path`` (parent folders made) and returns the path. matplotlib is an
    optional dependency, drawn with its Agg canvas directly (no pyplot, no global backend
    switch), so it works headless and inside a server.
    """
    if not curves:
        raise ValueError("no curves to plot")
    areas = {label: _area(fpr, tpr) for label, (fpr, tpr) in curves.items()}
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise BackendNotInstalled(
            "plotting ROC curves needs matplotlib", fix="pip install 'rolecall[models]'"
        ) from None
    figure = Figure(figsize=(5, 5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for label, (fpr, tpr) in curves.items():
        axes.plot(fpr, tpr, label=f"{label} (AUC = {areas[label]:.3f})")
    axes.plot([0, 1], [0, 1], linestyle="--", color="grey", label="chance")
    axes.set(
        xlim=(0, 1),
        ylim=(0, 1.01),
        xlabel="false positive rate",
        ylabel="true positive rate",
        title=title,
    )
    axes.legend(loc="lower right")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, format="png")
    return out


@dataclass
class UnanswerableEvaluator(Evaluator):
    """ROC AUC and the max-F1 threshold of an unanswerable-context score.

    Call it as ``evaluator(labels, scores)`` with labels 1 = unanswerable, 0 = the gold
    response fits. With ``higher_is_unanswerable=False`` (e.g. MC-dropout mean - variance,
    where high means the response fits) the scores are negated inside, and the returned
    ``threshold`` is back in the caller's scale: flag ``score <= threshold`` then. Returns
    ``roc_auc``, ``threshold``, ``f1``, ``precision`` and ``recall``; primary
    ``"roc_auc"``.
    """

    name: str = "unanswerable"
    higher_is_unanswerable: bool = True
    # the precision of "unanswerable" that ``precise`` holds to: a bot that replaces a
    # retrieved reply on that verdict should seldom replace a good one
    min_precision: float = 0.9
    primary_metric: ClassVar[str] = "roc_auc"
    greater_is_better: ClassVar[bool] = True

    def __call__(self, labels: Sequence[int], scores: Sequence[float]) -> dict[str, Any]:
        sign = 1.0 if self.higher_is_unanswerable else -1.0
        oriented = sign * np.asarray(scores, dtype=float)
        threshold, f1, precision, recall = max_f1_threshold(labels, oriented)
        precise = precise_threshold(labels, oriented, self.min_precision)
        return {
            "roc_auc": roc_auc(labels, oriented),
            "threshold": sign * threshold,
            "f1": f1,
            "precision": precision,
            "recall": recall,
            "precise": None
            if precise is None
            else {
                "min_precision": self.min_precision,
                "threshold": sign * precise[0],
                "precision": precise[1],
                "recall": precise[2],
            },
        }
