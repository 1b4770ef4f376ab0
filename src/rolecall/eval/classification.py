"""Accuracy, precision, recall and F1 of a binary classifier (the out-of-bounds classifier).

The NAACL 2022 paper's out-of-bounds classifier decides whether a system response breaks
the role specification; the metrics here take its hard predictions (the caller applies its
threshold). Labels may be any values that compare with ``==`` (ints, bools, strings);
``positive`` names the class that precision and recall are about.

Convention: a ratio with a zero denominator is 0.0, never NaN or an error (precision with
no positive predictions, recall with no positive labels, F1 when precision + recall is 0),
as scikit-learn does with ``zero_division=0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from rolecall.eval.evaluator import Evaluator


def _pair(y_true: Sequence[Any], y_pred: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    true, pred = np.asarray(y_true), np.asarray(y_pred)
    if true.ndim != 1 or pred.ndim != 1 or len(true) != len(pred):
        raise ValueError("y_true and y_pred must be flat lists of the same length, got "
                         f"shapes {true.shape} and {pred.shape}")
    if len(true) == 0:
        raise ValueError("no labels to evaluate (y_true is empty)")
    return true, pred


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def accuracy(y_true: Sequence[Any], y_pred: Sequence[Any]) -> float:
    """The share of predictions equal to their label."""
    true, pred = _pair(y_true, y_pred)
    return float((true == pred).mean())


def _counts(true: np.ndarray, pred: np.ndarray, positive: Any) -> tuple[int, int, int]:
    """(true positives, false positives, false negatives) for the class ``positive``."""
    # subtle: 1 == "1" is False, so string labels with the default positive=1 would score
    # 0.0 everywhere without a word; say so instead
    is_str = isinstance(positive, str)
    if (true.dtype.kind in "US" and not is_str) or (true.dtype.kind in "biuf" and is_str):
        raise ValueError(f"positive={positive!r} cannot match labels of dtype {true.dtype}: "
                         "pass the positive class as the labels spell it")
    is_true, is_pred = true == positive, pred == positive
    return (int((is_true & is_pred).sum()), int((~is_true & is_pred).sum()),
            int((is_true & ~is_pred).sum()))


def precision_recall_f1(y_true: Sequence[Any], y_pred: Sequence[Any], positive: Any = 1
                        ) -> tuple[float, float, float]:
    """``(precision, recall, f1)`` of the class ``positive``; 0/0 is defined as 0.0.

    F1 is computed as 2TP / (2TP + FP + FN), which equals the harmonic mean of precision
    and recall and is 0.0 when there are no true positives.
    """
    tp, fp, fn = _counts(*_pair(y_true, y_pred), positive)
    return _ratio(tp, tp + fp), _ratio(tp, tp + fn), _ratio(2 * tp, 2 * tp + fp + fn)


@dataclass
class ClassificationEvaluator(Evaluator):
    """Binary classification metrics; call it as ``evaluator(y_true, y_pred)``.

    Returns ``accuracy``, ``precision``, ``recall``, ``f1`` (of the class ``positive``),
    and the counts ``support_positive`` / ``support_negative`` (labels equal / not equal
    to ``positive``) and ``predicted_positive``, as floats. Primary: ``"f1"``.
    """

    name: str = "classification"
    positive: Any = 1
    primary_metric: ClassVar[str] = "f1"
    greater_is_better: ClassVar[bool] = True

    def __call__(self, y_true: Sequence[Any], y_pred: Sequence[Any]) -> dict[str, float]:
        true, pred = _pair(y_true, y_pred)
        precision, recall, f1 = precision_recall_f1(true, pred, self.positive)
        n_positive = int((true == self.positive).sum())
        return {"accuracy": accuracy(true, pred), "precision": precision, "recall": recall,
                "f1": f1, "support_positive": float(n_positive),
                "support_negative": float(len(true) - n_positive),
                "predicted_positive": float((pred == self.positive).sum())}
