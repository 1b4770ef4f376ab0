"""The out-of-bounds classifier as character TF-IDF + logistic regression over (the turn
before, the response): ``rolecall train classifier --backbone tfidf``.

On the care-call turns in their contexts (``bench/out_of_bounds_classifier.py``: 244 in
bounds, 183 written out of bounds, halves by dialogue, 3 seeds) this reading scores a
higher macro-F1 than the head on the sentence encoder's states, alone or averaged with
TF-IDF over the response (``--lexical``, that head's default; docs/benchmarks.md): where
real labelled out-of-bounds turns exist, it is the guard to train. It reads what the
classic baseline reads (``train/baselines.py``'s ``TfidfModel``, character n-grams, a
pair), trains in seconds and needs no backbone.

It answers like a ``Classifier`` where the bot's guard and the ``classifier:PATH`` judge
use one (``predict_proba(contexts, responses)``, ``predict``, ``settings.threshold``,
``evaluate``), and ``load_classifier`` opens either kind from its directory. The directory
is the ``TfidfModel``'s (``model.json`` of kind ``tfidf``, task ``out_of_bounds``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from rolecall.errors import InputFileError
from rolecall.records import Example
from rolecall.train.data import LAST
from rolecall.train.loop import MODEL_FILE
from rolecall.train.out_of_bounds import LEXICAL_LABELS as LABELS
from rolecall.train.out_of_bounds import LEXICAL_TASK as TASK
from rolecall.train.out_of_bounds import (
    flag_at_held_out_threshold,
    out_of_bounds_metrics,
    training_split,
)
from rolecall.train.pairs import Context

# TASK and LABELS (columns in, out) are --lexical's TF-IDF half's: one reading of the task
BACKBONE = "tfidf"  # what --backbone calls it
COMMAND = "rolecall train classifier EXAMPLES --backbone tfidf --out DIR"


class GuardSettings(BaseModel):
    threshold: float = Field(0.5, description="P(out of bounds) at which a turn is flagged")


class LexicalClassifier:
    """A trained TF-IDF out-of-bounds classifier (see the module docstring)."""

    def __init__(self, model: Any, threshold: float = 0.5):
        self.model, self.settings = model, GuardSettings(threshold=threshold)

    def predict_proba(self, contexts: Sequence[Context], responses: Sequence[str]) -> np.ndarray:
        """[N, 2] probabilities: column 0 in bounds, column 1 out of bounds."""
        pairs = [(last_turn(c), r.strip()) for c, r in zip(contexts, responses, strict=True)]
        return self.model.predict_proba(pairs)

    def predict(self, contexts: Sequence[Context], responses: Sequence[str]) -> np.ndarray:
        """Booleans, True = out of bounds."""
        return self.predict_proba(contexts, responses)[:, 1] >= self.settings.threshold

    def evaluate(self, examples: Sequence[Example]) -> dict[str, float]:
        return out_of_bounds_metrics(self, examples)

    @classmethod
    def load(cls, directory: str | Path) -> LexicalClassifier:
        from rolecall.train.baselines import TfidfModel

        model = TfidfModel.load(directory)
        info = json.loads((Path(directory) / MODEL_FILE).read_text(encoding="utf-8"))
        # the held-out threshold it was saved with (0.5: a model saved before it was chosen)
        threshold = float((info.get("metrics") or {}).get("threshold", 0.5))
        if model.settings.task != TASK or model.labels != LABELS or not model.settings.pair:
            raise InputFileError(
                directory,
                f"holds a TF-IDF model for {model.settings.task!r} (labels {model.labels}), "
                "not an out-of-bounds classifier",
                fix=f"train one with '{COMMAND}'",
            )
        return cls(model, threshold)


def train_lexical_classifier(
    examples_path: str | Path, out_dir: str | Path, test_share: float = 0.1, seed: int = 0
) -> dict[str, Any]:
    """Train on an example file, evaluate on the dialogues held out (as ``train_classifier``
    splits them), save to ``out_dir``; the held-out metrics (also in ``model.json``)."""
    from rolecall.train.baselines import BASELINE_VIEWS, TfidfModel, TfidfSettings

    train, test = training_split(examples_path, test_share, seed)
    settings = TfidfSettings(
        task=TASK, labels=LABELS, pair=True, views=list(BASELINE_VIEWS), seed=seed
    )
    model = TfidfModel(settings)
    fitted = model.fit(
        [(last_turn(e.history), e.response.strip()) for e in train],
        [LABELS[e.label == "negative"] for e in train],
    )
    classifier = LexicalClassifier(model)
    metrics = {
        "backbone": BACKBONE,
        "train_examples": len(train),
        "test_examples": len(test),
        "test_out_of_bounds": sum(e.label == "negative" for e in test),
        "features": fitted["features"],
        "train_log_loss": fitted["train_log_loss"],
        **classifier.evaluate(test),
    }
    # the guard flags at the held-out max-F1 threshold, not 0.5
    flag_at_held_out_threshold(classifier, test, seed, metrics)
    model.save(out_dir, metrics)
    return metrics


def last_turn(context: Context) -> str:
    """The text of a context's last turn; of a made context text (``context_text``) its
    last line without the mark and the role."""
    if not isinstance(context, str):
        return context[-1].text.strip() if context else ""
    lines = context.strip().splitlines()
    line = lines[-1].removeprefix(LAST) if lines else ""
    role, colon, text = line.partition(": ")
    return text.strip() if colon and role in ("user", "system") else line.strip()
