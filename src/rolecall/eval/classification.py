"""Accuracy, precision, recall and F1 of a binary classifier (the out-of-bounds classifier).

The NAACL 2022 paper's out-of-bounds classifier decides whether a system response breaks
the role specification; the metrics here take its hard predictions (the caller applies its
threshold). Labels may be any values that compare with ``==`` (ints, bools, strings);
``positive`` names the class that precision and recall are about. The arithmetic is
scikit-learn's; the checks and messages (flat lists, same length, not empty, a ``positive``
that can match the labels' type) are ours.

Convention: a ratio with a zero denominator is 0.0, never NaN or an error (precision with
no positive predictions, recall with no positive labels, F1 when precision + recall is 0),
as scikit-learn does with ``zero_division=0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def _pair(y_true: Sequence[Any], y_pred: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    true, pred = np.asarray(y_true), np.asarray(y_pred)
    if true.ndim != 1 or pred.ndim != 1 or len(true) != len(pred):
        raise ValueError(
            "y_true and y_pred must be flat lists of the same length, got "
            f"shapes {true.shape} and {pred.shape}"
        )
    if len(true) == 0:
        raise ValueError("no labels to evaluate (y_true is empty)")
    return true, pred


def accuracy(y_true: Sequence[Any], y_pred: Sequence[Any]) -> float:
    """The share of predictions equal to their label (scikit-learn's ``accuracy_score``)."""
    from sklearn.metrics import accuracy_score  # lazy: ~2 s to import

    true, pred = _pair(y_true, y_pred)
    return float(accuracy_score(true, pred))


def _is_positive(
    true: np.ndarray, pred: np.ndarray, positive: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Both label lists as booleans, True = the class ``positive`` (one class against the
    rest, whatever the number of classes)."""
    # subtle: 1 == "1" is False, so string labels with the default positive=1 would score
    # 0.0 everywhere without a word; say so instead
    is_str = isinstance(positive, str)
    if (true.dtype.kind in "US" and not is_str) or (true.dtype.kind in "biuf" and is_str):
        raise ValueError(
            f"positive={positive!r} cannot match labels of dtype {true.dtype}: "
            "pass the positive class as the labels spell it"
        )
    return true == positive, pred == positive


def precision_recall_f1(
    y_true: Sequence[Any], y_pred: Sequence[Any], positive: Any = 1
) -> tuple[float, float, float]:
    """``(precision, recall, f1)`` of the class ``positive``; 0/0 is defined as 0.0.

    scikit-learn's ``precision_recall_fscore_support`` (binary, ``zero_division=0``) on
    "is ``positive``" vs "is not", so more than two classes and a ``positive`` absent from
    both lists work too (F1 = 2TP / (2TP + FP + FN), 0.0 without true positives).
    """
    from sklearn.metrics import precision_recall_fscore_support  # lazy: ~2 s to import

    true, pred = _is_positive(*_pair(y_true, y_pred), positive)
    precision, recall, f1, _ = precision_recall_fscore_support(
        true, pred, average="binary", pos_label=True, zero_division=0
    )
    return float(precision), float(recall), float(f1)
