"""The out-of-bounds classifier and the fallback question (NAACL 2022, section 4.2).

The classifier reads ``[CLS] history [SEP] response [SEP]`` and says whether the system
response breaks the role specification. The history is the whole dialogue so far
(``data.context_text(history, max_turns=None)``, last utterance marked), cut from the
*left* to ``max_length`` tokens by the backbone, so the turns nearest the response survive;
the response keeps up to ``response_max`` tokens. A small head pools the token states and
maps them to two classes, 0 = in bounds, 1 = out of bounds (the positive class of the
metrics). Trained on the judged examples: positives are in bounds, negatives out of bounds.

With ``settings.lexical`` the classifier also fits character TF-IDF + logistic regression
over the response on the same examples (``baselines.TfidfModel``, seconds) and its P(out)
is the mean of the head's and that model's: the learned features and the character
n-grams, each good where the other is weak (measured on the README's offensiveness mixture:
``docs/models.md``). The lexical model is saved in the model directory's ``lexical/``.

When a response is flagged, the bot says one of a few pre-defined questions on another
topic instead: the one its generator finds most natural after the context (lowest
perplexity; ``serve/bot.py``).

The pieces every pair model shares are in ``pairs.py``; LM perplexities in
``perplexity.py``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rolecall.errors import (
    InputFileError,
)
from rolecall.records import Example
from rolecall.train.backbones.base import Backbone, torch_module
from rolecall.train.backbones.features import Features
from rolecall.train.checkpoints import Checkpoints
from rolecall.train.loop import MODEL_FILE, TrainConfig
from rolecall.train.out_of_bounds import (
    IN_BOUNDS,
    LEXICAL_LABELS,
    LEXICAL_TASK,
    OUT_OF_BOUNDS,
    flag_at_held_out_threshold,
    out_of_bounds_metrics,
    training_split,
)
from rolecall.train.pairs import (
    Context,
    PairModel,
    as_context,
    encode_pairs,
    model_device,
    resolve_backbone,
    split_metrics,
    train_head,
)
from rolecall.train.settings import CLASSIFIER_TRAINING, classifier_training
from rolecall.train.settings import ClassifierSettings as ClassifierSettings  # re-exported

KIND = "classifier"
LEXICAL_DIR = "lexical"  # the TF-IDF model of settings.lexical, in the model directory


class Classifier(PairModel):
    """A trained (or new) out-of-bounds classifier: head, backbone and settings."""

    KIND = KIND
    SETTINGS = ClassifierSettings
    OUTPUTS = 2
    lexical: Any = None  # the TF-IDF model of settings.lexical, once fitted or loaded

    def predict_proba(
        self, contexts: Sequence[Context], responses: Sequence[str], batch_size: int = 32
    ) -> np.ndarray:
        """[N, 2] probabilities: column 0 in bounds, column 1 out of bounds (with a
        lexical model, the mean of the head's and its)."""
        torch = torch_module()
        texts = [as_context(c, self.settings.max_turns) for c in contexts]
        vectors = encode_pairs(
            self.backbone, self.features, texts, list(responses), self.settings, batch_size
        )
        self.head.eval()
        with torch.no_grad():
            proba = torch.softmax(self.head(vectors), dim=-1).cpu().numpy()
        if self.lexical is not None:
            proba = (proba + self.lexical.predict_proba([r.strip() for r in responses])) / 2
        return proba

    def predict(self, contexts: Sequence[Context], responses: Sequence[str]) -> np.ndarray:
        """Booleans, True = out of bounds (P(out) >= the settings' threshold)."""
        return self.predict_proba(contexts, responses)[:, OUT_OF_BOUNDS] >= self.settings.threshold

    def fit(
        self,
        examples: Sequence[Example],
        config: TrainConfig,
        progress: bool = True,
        checkpoints: Checkpoints | None = None,
    ) -> dict[str, Any]:
        torch = torch_module()
        if self.features is None:
            self.features = Features(self.backbone, batch_size=config.batch_size)
        labels = [OUT_OF_BOUNDS if e.label == "negative" else IN_BOUNDS for e in examples]
        weight = _class_weights(self.settings.class_weights, labels)
        if weight is not None:
            weight = torch.tensor(weight, dtype=torch.float, device=model_device(self.backbone))
        loss = torch.nn.CrossEntropyLoss(weight=weight)
        groups = [
            [(as_context(e.history, self.settings.max_turns), e.response.strip())] for e in examples
        ]
        history = train_head(
            self.head,
            self.backbone,
            self.features,
            groups,
            labels,
            self.settings,
            config,
            lambda out, y: loss(out[:, 0], y),
            progress,
            "training classifier",
            checkpoints,
        )
        if self.settings.lexical:
            self.lexical = lexical_model(examples, config.seed)
        return history

    @classmethod
    def load(cls, directory: str | Path, cache_dir: Path | None = None) -> Classifier:
        model = super().load(directory, cache_dir)
        if model.settings.lexical:
            path = Path(directory) / LEXICAL_DIR
            if not path.is_dir():
                raise InputFileError(
                    path,
                    "is missing: the classifier was saved with a lexical model "
                    "(settings.lexical) and reads its probabilities",
                    fix="copy the whole model directory, or train the classifier again",
                )
            from rolecall.train.baselines import TfidfModel

            model.lexical = TfidfModel.load(path)
        return model

    def save(self, directory: str | Path, metrics: dict | None = None) -> Path:
        out = super().save(directory, metrics)
        if self.lexical is not None:
            self.lexical.save(Path(directory) / LEXICAL_DIR)
        return out

    def evaluate(self, examples: Sequence[Example]) -> dict[str, float]:
        return out_of_bounds_metrics(self, examples)


def load_classifier(directory: str | Path, cache_dir: Path | None = None) -> Any:
    """The out-of-bounds classifier in ``directory``, of either kind: a head over a
    backbone (``Classifier``) or TF-IDF (``lexical_classifier.LexicalClassifier``, model
    kind ``tfidf``)."""
    from rolecall.train.baselines import KIND as TFIDF

    path = Path(directory) / MODEL_FILE
    try:
        kind = json.loads(path.read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        kind = None  # Classifier.load says what is wrong
    if kind == TFIDF:
        from rolecall.train.lexical_classifier import LexicalClassifier

        return LexicalClassifier.load(directory)
    return Classifier.load(directory, cache_dir)


def lexical_model(examples: Sequence[Example], seed: int = 0) -> Any:
    """Character TF-IDF + logistic regression over the responses of ``examples`` (the
    classic baseline, ``baselines.TfidfModel`` at its defaults), columns in / out."""
    from rolecall.train.baselines import TfidfModel, TfidfSettings

    model = TfidfModel(TfidfSettings(task=LEXICAL_TASK, labels=LEXICAL_LABELS, seed=seed))
    names = [LEXICAL_LABELS[e.label == "negative"] for e in examples]
    model.fit([e.response.strip() for e in examples], names)
    return model


def _class_weights(option: str | tuple[float, float], labels: Sequence[int]) -> list[float] | None:
    if option == "none":
        return None
    if option == "balanced":
        counts = [max(1, sum(1 for y in labels if y == c)) for c in (0, 1)]
        return [len(labels) / (2 * n) for n in counts]
    return [float(w) for w in option]


def train_classifier(
    examples_path: str | Path,
    out_dir: str | Path,
    backbone: Backbone | str,
    settings: ClassifierSettings | None = None,
    config: TrainConfig | None = None,
    test_share: float = 0.1,
    progress: bool = True,
    cache_dir: Path | None = None,
    checkpoints: Checkpoints | None = None,
) -> dict[str, Any]:
    """Train on an example file, evaluate on dialogues held out, save to ``out_dir``.

    Returns (and writes into ``model.json``) the held-out accuracy, precision, recall, F1
    (positive = out of bounds) and ROC AUC (absent when no dialogue fell into the held-out
    share, or, for the AUC, when it holds one label only), plus the training loss. The
    threshold the saved model flags at is the held-out max-F1 one when the held-out share
    has two of each label (``held_out_threshold``: with its cross-fitted numbers; those at
    the default 0.5 kept as ``at_default_threshold``), else the settings' own.
    ``cache_dir`` keeps a frozen backbone's states between runs: give every model trained
    on the same data the same folder. With ``checkpoints`` a killed run goes on from the
    last one; they are removed once the model is saved.
    """
    seed = config.seed if config is not None else CLASSIFIER_TRAINING.seed
    train, test = training_split(examples_path, test_share, seed)
    backbone = resolve_backbone(backbone)
    config = config or classifier_training(backbone.frozen)
    model = Classifier.for_training(backbone, settings, config, cache_dir)
    history = model.fit(train, config, progress, checkpoints)
    out_of_bounds = sum(e.label == "negative" for e in test)
    metrics = {
        **split_metrics(train, test, history, test_out_of_bounds=out_of_bounds),
        **model.evaluate(test),
    }
    flag_at_held_out_threshold(model, test, seed, metrics)
    model.save(out_dir, metrics)
    if checkpoints is not None:
        checkpoints.clear()
    return metrics


# ---- the fallback question --------------------------------------------------------------
