"""A classifier with N named labels over single texts or text pairs: the trained K/DA judges
on a neural backbone (``rolecall train implicit-judge --backbone embedded``).

The same head and training as the out-of-bounds classifier (``pairs.py``: ``[CLS] first
[SEP] second [SEP]``, pooled, LayerNorm -> MLP, cross-entropy), with as many outputs as the
task has labels. A single text is read as a pair with an empty first part, the way the
offensiveness classifier reads a sentence with no history, so both kinds share one
encoding and one feature cache. Its TF-IDF counterpart is ``baselines.TfidfModel``; both
take the same inputs (a text, or a ``(first, second)`` tuple) and give probabilities in
``labels`` order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from rolecall.train.backbones.base import Backbone, torch_module
from rolecall.train.backbones.features import Features
from rolecall.train.baselines import TextOrPair
from rolecall.train.loop import TrainConfig
from rolecall.train.pairs import (
    PairModel,
    PairSettings,
    build_head,
    encode_pairs,
    model_device,
    train_head,
)

KIND = "label-judge"


class LabelSettings(PairSettings):
    task: str = Field("text", description="what the labels mean (implicit, consistency, ...)")
    labels: list[str] = Field(["negative", "positive"], min_length=2)
    pair: bool = Field(False, description="inputs are (first, second) text pairs")
    max_length: int = Field(192, ge=8, description="tokens of the whole pair")
    response_max: int = Field(96, ge=1, description="tokens kept of the second text")
    class_weights: Literal["none", "balanced"] = "balanced"


class LabelModel(PairModel):
    """``fit(inputs, labels)``, ``predict_proba(inputs)``; saved and loaded as ``PairModel``."""

    KIND = KIND
    SETTINGS = LabelSettings

    @property
    def labels(self) -> list[str]:
        return list(self.settings.labels)

    @classmethod
    def make_head(cls, backbone: Backbone, settings: Any) -> Any:
        return build_head(backbone, settings, len(settings.labels))

    def split(self, inputs: Sequence[TextOrPair]) -> tuple[list[str], list[str]]:
        """(firsts, seconds): '' and the text for a text model."""
        if self.settings.pair:
            if any(isinstance(item, str) or len(item) != 2 for item in inputs):
                raise ValueError("a pair model reads (first, second) pairs")
            return [a.strip() for a, _ in inputs], [b.strip() for _, b in inputs]
        if any(not isinstance(item, str) for item in inputs):
            raise ValueError("a text model reads strings")
        return [""] * len(inputs), [text.strip() for text in inputs]

    def predict_proba(
        self, inputs: Sequence[TextOrPair], batch_size: int = 32, progress: bool = False
    ) -> np.ndarray:
        """[N, len(labels)] probabilities, columns in ``labels`` order."""
        torch = torch_module()
        firsts, seconds = self.split(inputs)
        vectors = encode_pairs(
            self.backbone, self.features, firsts, seconds, self.settings, batch_size, progress
        )
        self.head.eval()
        with torch.no_grad():
            return torch.softmax(self.head(vectors), dim=-1).cpu().numpy()

    def predict(self, inputs: Sequence[TextOrPair]) -> list[str]:
        return [self.labels[i] for i in self.predict_proba(inputs).argmax(axis=1)]

    def fit(
        self,
        inputs: Sequence[TextOrPair],
        labels: Sequence[str],
        config: TrainConfig,
        progress: bool = True,
    ) -> dict[str, Any]:
        """Cross-entropy on the labels (balanced class weights by default); the loss log."""
        torch = torch_module()
        unknown = sorted(set(labels) - set(self.labels))
        if unknown:
            raise ValueError(f"labels {unknown} are not among {self.labels}")
        if self.features is None:
            self.features = Features(self.backbone, batch_size=config.batch_size)
        targets = [self.labels.index(y) for y in labels]
        weight = None
        if self.settings.class_weights == "balanced":
            counts = [max(1, targets.count(c)) for c in range(len(self.labels))]
            weight = torch.tensor(
                [len(targets) / (len(counts) * n) for n in counts],
                dtype=torch.float,
                device=model_device(self.backbone),
            )
        loss = torch.nn.CrossEntropyLoss(weight=weight)
        firsts, seconds = self.split(inputs)
        return train_head(
            self.head,
            self.backbone,
            self.features,
            [[pair] for pair in zip(firsts, seconds)],
            targets,
            self.settings,
            config,
            lambda out, y: loss(out[:, 0], y),
            progress,
            f"training {self.settings.task} judge",
        )
