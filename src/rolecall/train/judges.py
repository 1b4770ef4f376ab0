"""Trained models as judges (``classifier:PATH``): the ``judge.voting.DirectJudge`` interface.

``load_trained_judge(path, task)`` opens a trained model directory for one judge task and
returns a judge that answers with the labels of that task's LLM judge, one parsed
``Verdict`` per item (``kind="classifier"``, the label's probability as ``score``, every
label's probability in ``probabilities``):

- ``implicit`` / ``consistency`` (K/DA candidates, ``records.Pair`` items, ids by
  ``pair_filters.pair_id``): a model from ``rolecall train implicit-judge`` /
  ``consistency-judge`` (kind ``tfidf`` or ``label-judge``); the label is the most
  probable one (implicit / none / explicit; maintained / shifted).
- ``out_of_bounds`` (dialogue turns, ``judge.out_of_bounds.Item``): a model from
  ``rolecall train classifier`` (over a backbone, or ``--backbone tfidf``); out of bounds
  when P(out) reaches the threshold saved with it. The classifier says *whether* a turn
  is out of bounds, not which rule it broke, so a flagged turn gets one error category:
  the spec's ``safety`` category's when the spec has one (the shipped recipe, ``detox
  offensiveness-data``, teaches offensiveness), else ``not safe`` (the NAACL paper's name
  for it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rolecall.errors import ConfigError, InputFileError
from rolecall.judge.out_of_bounds import Item
from rolecall.judge.pair_filters import pair_id
from rolecall.judge.voting import FLAG_LABEL, SAFE_LABEL
from rolecall.records import Pair, RoleSpec, Verdict
from rolecall.train.kda_judges import LABELS

KIND = "classifier"
SAFETY, NOT_SAFE = "safety", "not safe"
# task -> the model kinds that can answer it, and the command that makes one
MODEL_KINDS = {
    "implicit": (("tfidf", "label-judge"), "rolecall train implicit-judge DATA_DIR --out DIR"),
    "consistency": (
        ("tfidf", "label-judge"),
        "rolecall train consistency-judge DATA_DIR --out DIR",
    ),
    "out_of_bounds": (("classifier", "tfidf"), "rolecall train classifier EXAMPLES --out DIR"),
}


def load_trained_judge(
    path: str | Path, task: str, spec: RoleSpec | None = None, cache_dir: Path | None = None
) -> Any:
    """A ``DirectJudge`` for ``task`` from the model directory ``path``.

    ``spec`` gives an out-of-bounds judge its error category (module docstring);
    ``cache_dir`` keeps a frozen backbone's states on disk (default: none, so a long-lived
    process keeps nothing). A missing directory, a model of another kind or trained for
    another task are ``InputFileError``\\ s that name the command making the right one.
    """
    if task not in MODEL_KINDS:
        raise ConfigError(
            f"no trained judge for the task {task!r}",
            fix=f"use one of {', '.join(MODEL_KINDS)}",
        )
    kinds, command = MODEL_KINDS[task]
    directory = Path(path).expanduser()
    kind = _model_kind(directory, command)
    if kind not in kinds:
        raise InputFileError(
            directory,
            f"holds a {kind} model, which cannot judge {task}",
            fix=f"train a {task} judge with '{command}' and point at its directory",
        )
    model = f"{KIND}:{path}"
    if task == "out_of_bounds":
        from rolecall.train.classifier import load_classifier

        return OutOfBoundsClassifierJudge(
            load_classifier(directory, cache_dir), model, _category(spec)
        )
    predictor = _load_predictor(directory, kind, cache_dir)
    trained_for = predictor.settings.task
    if trained_for != task or sorted(predictor.labels) != sorted(LABELS[task]):
        raise InputFileError(
            directory,
            f"holds a {kind} model trained for {trained_for!r} "
            f"(labels {predictor.labels}), not for {task}",
            fix=f"train a {task} judge with '{command}'",
        )
    return PairTaskJudge(task, model, predictor)


def _model_kind(directory: Path, command: str) -> str:
    path = directory / "model.json"
    if not path.is_file():
        raise InputFileError(
            directory,
            "is not a trained rolecall model (no model.json)"
            if directory.is_dir()
            else "does not exist",
            fix=f"train one with '{command}'",
        )
    try:
        return str(json.loads(path.read_text(encoding="utf-8")).get("kind"))
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as exc:
        raise InputFileError(path, f"is not a model description: {exc}", fix=command) from None


def _load_predictor(directory: Path, kind: str, cache_dir: Path | None) -> Any:
    if kind == "tfidf":
        from rolecall.train.baselines import TfidfModel

        return TfidfModel.load(directory)
    from rolecall.train.label_model import LabelModel

    return LabelModel.load(directory, cache_dir)


def _category(spec: RoleSpec | None) -> str:
    if spec is None:
        return NOT_SAFE
    return next((c.error_category for c in spec.categories if c.name == SAFETY), NOT_SAFE)


def _verdict(
    task: str, item_id: str, label: str, probabilities: dict[str, float], model: str, **extra
) -> Verdict:
    return Verdict(
        judge=task,
        item_id=item_id,
        label=label,
        raw_output=json.dumps(probabilities, ensure_ascii=False),
        parse_status="parsed",
        probabilities=probabilities,
        model=model,
        kind=KIND,
        score=probabilities[label],
        **extra,
    )


class PairTaskJudge:
    """A trained K/DA judge: ``implicit`` reads the candidate alone, ``consistency`` the
    (neutral, candidate) pair."""

    kind = KIND

    def __init__(self, task: str, model: str, predictor: Any):
        self.name, self.model, self.predictor = task, model, predictor

    @staticmethod
    def item_id(item: Pair) -> str:
        return pair_id(item)

    def verdicts(self, items: Sequence[Pair]) -> list[Verdict]:
        if not items:
            return []
        if self.name == "implicit":
            inputs: list[Any] = [pair.toxic.strip() for pair in items]
        else:
            inputs = [(pair.neutral.strip(), pair.toxic.strip()) for pair in items]
        labels = self.predictor.labels
        out = []
        for pair, row in zip(items, self.predictor.predict_proba(inputs)):
            probabilities = {label: round(float(p), 6) for label, p in zip(labels, row)}
            best = max(probabilities, key=probabilities.get)
            out.append(_verdict(self.name, pair_id(pair), best, probabilities, self.model))
        return out


class OutOfBoundsClassifierJudge:
    """The out-of-bounds classifier on dialogue turns, flagged at its saved threshold."""

    kind = KIND
    name = "out_of_bounds"

    def __init__(self, classifier: Any, model: str, category: str):
        self.classifier, self.model, self.category = classifier, model, category

    @staticmethod
    def item_id(item: Item) -> str:
        return item.id

    def verdicts(self, items: Sequence[Item]) -> list[Verdict]:
        if not items:
            return []
        proba = self.classifier.predict_proba(
            [list(item.history) for item in items], [item.response.strip() for item in items]
        )[:, 1]
        threshold = self.classifier.settings.threshold
        out = []
        for item, p in zip(items, proba):
            flagged = float(p) >= threshold
            probabilities = {SAFE_LABEL: round(1 - float(p), 6), FLAG_LABEL: round(float(p), 6)}
            label = FLAG_LABEL if flagged else SAFE_LABEL
            out.append(
                _verdict(
                    self.name,
                    item.id,
                    label,
                    probabilities,
                    self.model,
                    category=self.category if flagged else None,
                )
            )
        return out
