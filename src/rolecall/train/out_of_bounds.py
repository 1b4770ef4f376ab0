"""What both out-of-bounds classifiers share (the head over a backbone, ``classifier.py``;
character TF-IDF, ``lexical_classifier.py``): the training split by dialogue, the metrics
of out-of-bounds, the threshold chosen on the held-out examples, and the TF-IDF model's
task and labels."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rolecall.errors import InputFileError
from rolecall.records import Example
from rolecall.train.data import read_examples
from rolecall.train.pairs import held_out

IN_BOUNDS, OUT_OF_BOUNDS = 0, 1
LEXICAL_TASK, LEXICAL_LABELS = "out_of_bounds", ["in", "out"]  # columns: IN_BOUNDS, OUT_OF_BOUNDS


def out_of_bounds_metrics(model: Any, examples: Sequence[Example]) -> dict[str, float]:
    """Accuracy, precision, recall and F1 of out-of-bounds; ROC AUC with both labels: of
    any model with ``predict_proba(contexts, responses)`` and ``settings.threshold``."""
    from rolecall.eval.classification import accuracy, precision_recall_f1
    from rolecall.eval.thresholds import roc_auc

    if not examples:
        return {}
    labels = [OUT_OF_BOUNDS if e.label == "negative" else IN_BOUNDS for e in examples]
    proba = model.predict_proba(
        [e.history for e in examples], [e.response.strip() for e in examples]
    )[:, OUT_OF_BOUNDS]
    predicted = (proba >= model.settings.threshold).astype(int)
    precision, recall, f1 = precision_recall_f1(labels, predicted, OUT_OF_BOUNDS)
    metrics = {
        "accuracy": accuracy(labels, predicted),
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }
    if len(set(labels)) == 2:
        metrics["roc_auc"] = roc_auc(labels, proba)
    return metrics


def flag_at_held_out_threshold(
    model: Any, test: Sequence[Example], seed: int, metrics: dict[str, Any]
) -> None:
    """Set ``model.settings.threshold`` to the held-out one (``held_out_threshold``) when
    there is one, and ``metrics`` to match: the held-out numbers at it, those at the
    threshold before as ``at_default_threshold``, the choice as ``held_out_threshold`` and
    the threshold flagged at as ``threshold``. ``metrics`` holds ``model.evaluate(test)``."""
    chosen = held_out_threshold(model, test, seed)
    if chosen is not None:
        metrics["at_default_threshold"] = {
            "threshold": model.settings.threshold,
            **{k: metrics[k] for k in ("precision", "recall", "f1") if k in metrics},
        }
        model.settings = model.settings.model_copy(update={"threshold": chosen["threshold"]})
        metrics.update(model.evaluate(test), held_out_threshold=chosen)
    metrics["threshold"] = model.settings.threshold


def held_out_threshold(model: Any, test: Sequence[Example], seed: int) -> dict | None:
    """The max-F1 threshold of P(out) on the held-out examples, with the cross-fitted
    precision, recall and F1 of choosing it so (``eval/thresholds.cross_fitted_threshold``);
    None when they hold fewer than two of either label."""
    from rolecall.eval.thresholds import cross_fitted_threshold

    if not test:
        return None
    labels = [OUT_OF_BOUNDS if e.label == "negative" else IN_BOUNDS for e in test]
    proba = model.predict_proba([e.history for e in test], [e.response.strip() for e in test])
    found = cross_fitted_threshold(labels, proba[:, OUT_OF_BOUNDS], seed)
    if found is None or not 0.0 < found["threshold"] < 1.0:
        return None
    return {k: round(v, 4) for k, v in found.items()}


def training_split(
    examples_path: str | Path, test_share: float, seed: int
) -> tuple[list[Example], list[Example]]:
    """An out-of-bounds classifier's (train, test) examples: the file's, with negatives,
    dialogues held out by ``test_share``; the training part must keep a negative."""
    examples = read_examples(examples_path, need_negatives=True)
    train, test = held_out(examples, test_share, seed, examples_path)
    if not any(e.label == "negative" for e in train):
        raise InputFileError(
            examples_path,
            "every negative example fell into the held-out share",
            fix="add negatives or lower the test share",
        )
    return train, test
