"""The evaluator protocol: a call that returns ``{metric: value}`` and names its primary
metric and direction (sentence-transformers' ``SentenceEvaluator``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass
class Evaluator:
    """Base of rolecall's evaluators: a call returning ``{metric: value}``.

    Subclasses set ``primary_metric`` (the key model selection looks at, always in the
    returned dict) and ``greater_is_better``; ``name`` tells evaluators apart in logs.
    """

    name: str = "evaluator"
    primary_metric: ClassVar[str] = ""
    greater_is_better: ClassVar[bool] = True

    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        raise NotImplementedError

    def primary(self, metrics: dict[str, float]) -> float:
        """The primary metric's value from a result of this evaluator."""
        return metrics[self.primary_metric]

    def prefixed(self, metrics: dict[str, float]) -> dict[str, float]:
        """``{"<name>/<metric>": value}``: results of several evaluators in one log."""
        return {f"{self.name}/{key}": value for key, value in metrics.items()}
