"""Unanswerable-context detection (NAACL 2022, section 4.3 and Appendix C).

Retrieve-fail-Generate answers from the retrieved candidates unless the best of them does
not fit the context; then it falls back to the generator. Two ways to tell:

- **MC dropout** (``MCDropoutDetector``): the reranker scores (context, retrieved response)
  ``passes`` times with its head's dropout on; the confidence is the mean minus the
  variance of those scores (the paper's definition). A well-fitting response scores high
  and steadily; low confidence means unanswerable.

  Decision: each pass's logit goes through a **sigmoid** first, and the variance is the
  population variance (``ddof=0``). Mean and variance then live on a bounded scale (mean
  in [0, 1], variance in [0, 0.25]); on raw logits the variance is in squared logit units
  and would swamp the mean for any uncertain pair, so "mean - variance" would mostly rank
  by uncertainty. The sigmoid is always applied, here and only here.
- **LM perplexity** (``PerplexityDetector``) of the retrieved response given the context
  (``perplexity.lm_perplexities``, the prompt the generator reads): high
  perplexity means unanswerable.
- **Cosine** (``CosineDetector``, issue #32): the bundled sentence encoder's cosine between
  the context text and the response, untrained: low means unanswerable. It reads meaning
  the retriever was not tuned on, so it does not share the validation set's bias (the
  hard negatives are the retriever's own best guesses, which it scores high).
- **e5 cosine** (``E5CosineDetector``, ``e5``, issue #49): the same with
  multilingual-e5-small, the context read as a query (``query:``) and the response as a
  passage (``passage:``).
- **Summed** (``SummedDetector``): several detectors' scores, each standardised over the
  validation items (``fit_scores``: mean and standard deviation kept in ``scales``) and
  turned so that high means answerable, summed: ``cosine+reranker`` and ``e5+reranker``
  (a cosine and the reranker's plain score, dropout off). ``rolecall bot run`` serves the
  one that separates its own held-out contexts best (``bench/unanswerable_detectors.py``
  compares them over several draws).

``detector_named`` builds any of them by name from a bot's settings, so a bot serves the
detector its threshold was calibrated for.

The threshold is chosen where F1 is highest on a validation set in which a share of the
gold responses are replaced by hard negatives, the retriever's best non-gold candidates
(``validation_items``, Appendix C); ``compare_detectors`` reports F1, precision, recall,
ROC AUC and the threshold of each detector, and draws their ROC curves. Labels: 1 =
unanswerable. A detector says which way its score points (``higher_is_unanswerable``)
and thresholds stay in the detector's own scale: MC dropout flags
``confidence <= threshold``, perplexity flags ``perplexity >= threshold``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from rolecall.errors import ConfigError
from rolecall.eval.thresholds import (
    UnanswerableEvaluator,
    roc_curve,
    save_roc_png,
)
from rolecall.eval.validation_set import build_unanswerable_set
from rolecall.train.data import MAX_TURNS
from rolecall.train.pairs import Context, as_context
from rolecall.train.perplexity import lm_perplexities, lm_prompt
from rolecall.train.reranker import HardNegatives, Reranker


def mean_minus_variance(scores: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """[N, m] samples -> [N] confidences: mean - population variance of each row."""
    samples = np.asarray(scores, dtype=float)
    if samples.ndim != 2 or samples.shape[1] < 2:
        raise ValueError(f"expected [N, m] samples with m >= 2, got shape {samples.shape}")
    return samples.mean(axis=1) - samples.var(axis=1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # = 1 / (1 + e^-x), without overflow warnings


def mc_dropout_confidence(
    reranker: Reranker,
    contexts: Sequence[Context],
    responses: Sequence[str],
    passes: int = 20,
    seed: int = 0,
) -> np.ndarray:
    """[N] confidences: mean - variance of ``passes`` sigmoid reranker scores, dropout on."""
    return sigmoid_confidence(reranker.mc_dropout(contexts, responses, passes, seed))


def sigmoid_confidence(logits: np.ndarray) -> np.ndarray:
    """[N, m] MC-dropout logits -> [N] confidences (mean - variance of their sigmoids)."""
    return mean_minus_variance(_sigmoid(logits))


def response_perplexity(
    scorer: Any, contexts: Sequence[Context], responses: Sequence[str], progress: bool = False
) -> np.ndarray:
    """[N] LM perplexities of each response as the system's next turn after its context."""
    return lm_perplexities(scorer, [lm_prompt(c) for c in contexts], responses, progress)


class Detector(Protocol):
    """A score per (context, response) and the direction in which it means unanswerable."""

    name: ClassVar[str]
    higher_is_unanswerable: ClassVar[bool]

    def scores(self, contexts: Sequence[Context], responses: Sequence[str]) -> np.ndarray: ...


@dataclass
class MCDropoutDetector:
    """Reranker MC-dropout confidence; low = unanswerable."""

    reranker: Reranker
    passes: int = 20
    seed: int = 0
    name: ClassVar[str] = "mc_dropout"
    higher_is_unanswerable: ClassVar[bool] = False

    def scores(self, contexts: Sequence[Context], responses: Sequence[str]) -> np.ndarray:
        return mc_dropout_confidence(self.reranker, contexts, responses, self.passes, self.seed)


@dataclass
class PerplexityDetector:
    """LM perplexity of the response given the context; high = unanswerable. ``scorer``
    is an ``LLM`` (its cache makes re-calibration free) or a backend."""

    scorer: Any
    progress: bool = False
    name: ClassVar[str] = "perplexity"
    higher_is_unanswerable: ClassVar[bool] = True

    def scores(self, contexts: Sequence[Context], responses: Sequence[str]) -> np.ndarray:
        return response_perplexity(self.scorer, contexts, responses, self.progress)


@dataclass
class CosineDetector:
    """The sentence encoder's cosine between context text and response; low = unanswerable.
    Untrained: the bundled encoder (``retrieval/sentence_vectors.py``) as it ships."""

    name: ClassVar[str] = "cosine"
    higher_is_unanswerable: ClassVar[bool] = False

    def scores(self, contexts: Sequence[Context], responses: Sequence[str]) -> np.ndarray:
        texts = [as_context(c, MAX_TURNS) for c in contexts]
        if not texts:
            return np.zeros(0, dtype=np.float32)
        contexts_vectors, responses_vectors = self.unit_vectors(texts, list(responses))
        return (contexts_vectors * responses_vectors).sum(axis=1)

    def unit_vectors(self, texts: list[str], responses: list[str]):
        """(the contexts' vectors, the responses'), unit length: their dot is the cosine."""
        from rolecall.retrieval.sentence_vectors import vectors_of_unique

        both = vectors_of_unique([*texts, *responses])
        return both[: len(texts)], both[len(texts) :]


@dataclass
class E5CosineDetector(CosineDetector):
    """multilingual-e5-small's cosine between the context (``query:``) and the response
    (``passage:``); low = unanswerable. Untrained (``retrieval/e5_vectors.py``)."""

    name: ClassVar[str] = "e5"

    def unit_vectors(self, texts: list[str], responses: list[str]):
        from rolecall.retrieval.e5_vectors import e5_vectors

        return e5_vectors(texts), e5_vectors(responses, passage=True)


@dataclass
class RerankerDetector:
    """The reranker's plain score (a logit, dropout off); low = unanswerable."""

    reranker: Reranker
    name: ClassVar[str] = "reranker"
    higher_is_unanswerable: ClassVar[bool] = False

    def scores(self, contexts: Sequence[Context], responses: Sequence[str]) -> np.ndarray:
        return self.reranker.score_pairs(contexts, responses)


@dataclass
class SummedDetector:
    """Its parts' scores, each standardised with ``scales`` (mean, standard deviation: from
    ``fit_scores`` on the validation items) and turned so that high = answerable, summed;
    low = unanswerable."""

    parts: list[Any]
    scales: list[tuple[float, float]] | None = None
    higher_is_unanswerable: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return "+".join(part.name for part in self.parts)

    def _oriented(self, contexts: Sequence[Context], responses: Sequence[str]) -> np.ndarray:
        """[parts, N] scores, each turned so that high = answerable."""
        return np.stack(
            [
                (-1.0 if part.higher_is_unanswerable else 1.0)
                * np.asarray(part.scores(contexts, responses), dtype=float)
                for part in self.parts
            ]
        )

    def fit_scores(self, contexts: Sequence[Context], responses: Sequence[str]) -> np.ndarray:
        """Scales from these items (each part's mean and standard deviation), then their
        scores: what calibration calls, once."""
        oriented = self._oriented(contexts, responses)
        self.scales = [(float(row.mean()), float(row.std()) or 1.0) for row in oriented]
        return self._summed(oriented)

    def scores(self, contexts: Sequence[Context], responses: Sequence[str]) -> np.ndarray:
        if self.scales is None or len(self.scales) != len(self.parts):
            raise ConfigError(
                f"the summed detector {self.name!r} has no scales for its {len(self.parts)} parts",
                fix="calibrate it first (rolecall eval unanswerable), and keep its "
                "'scales' in bot.json as unanswerable_scales",
            )
        return self._summed(self._oriented(contexts, responses))

    def _summed(self, oriented: np.ndarray) -> np.ndarray:
        means, stds = np.array(self.scales).T
        return ((oriented - means[:, None]) / stds[:, None]).sum(axis=0)


# what a bot can serve; a cosine named alone needs no reranker
METHODS = ("mc_dropout", "cosine", "cosine+reranker", "e5", "e5+reranker")
COSINES = {"cosine": CosineDetector, "e5": E5CosineDetector}


def detector_named(
    method: str,
    reranker: Reranker | None,
    passes: int = 10,
    scales: Sequence[Sequence[float]] | None = None,
    seed: int = 0,
) -> Any:
    """The detector a bot's settings name (``METHODS``), or None when it needs a reranker
    the bot lacks."""
    if method in COSINES:
        return COSINES[method]()
    if method not in METHODS:
        raise ConfigError(
            f"unknown unanswerable method {method!r}", fix=f"use one of {', '.join(METHODS)}"
        )
    if reranker is None:
        return None
    if method == "mc_dropout":
        return MCDropoutDetector(reranker, passes, seed)
    given = [(float(m), float(s)) for m, s in scales] if scales is not None else None
    cosine = COSINES[method.split("+")[0]]()
    return SummedDetector([cosine, RerankerDetector(reranker)], given)


def index_hard_negatives(index: Any) -> HardNegatives:
    """``validation_items``' hard negatives from a candidate index (``serve/candidates.py``):
    its best candidates for the context, the gold left out."""

    def hard_negatives(context: str, gold: str, k: int) -> list[str]:
        return [text for _, text, _ in index.search([context], k + 1)[0] if text != gold][:k]

    return hard_negatives


def validation_items(
    pairs: Sequence[tuple[str, str]],
    hard_negatives: HardNegatives,
    share: float = 0.5,
    seed: int = 0,
    k: int = 5,
) -> list[dict[str, Any]]:
    """The Appendix C validation set from (context, gold) pairs (e.g.
    ``data.selection_pairs`` of held-out examples): ``share`` of the golds are replaced by
    the best of ``hard_negatives(context, gold, k)`` that is not the gold (label 1,
    unanswerable); the rest keep their gold (label 0). See ``build_unanswerable_set``."""

    def hard_negative(context: str, gold: str) -> str:
        for candidate in hard_negatives(context, gold, k):
            if candidate.strip() and candidate.strip() != gold.strip():
                return candidate.strip()
        raise ConfigError(
            f"hard_negatives returned no candidate other than the gold for "
            f"the context ending {context[-60:]!r}",
            fix="index more candidate responses, or raise k",
        )

    return build_unanswerable_set(list(pairs), hard_negative, share, seed)


def _calibrate(
    detector: Detector, items: Sequence[dict[str, Any]]
) -> tuple[dict[str, Any], tuple[np.ndarray, np.ndarray]]:
    labels = [int(item["label"]) for item in items]
    if len(set(labels)) != 2:
        raise ConfigError(
            f"the validation set needs both answerable (0) and unanswerable "
            f"(1) items; it has {len(labels)} items, labels {sorted(set(labels))}",
            fix="build it with validation_items and a share strictly between 0 and 1",
        )
    contexts = [item["context"] for item in items]
    responses = [item["response"] for item in items]
    fit = getattr(detector, "fit_scores", None)  # a summed detector takes its scales here
    scores = fit(contexts, responses) if fit else detector.scores(contexts, responses)
    scores = np.asarray(scores, dtype=float)
    higher = detector.higher_is_unanswerable
    result = UnanswerableEvaluator(name=detector.name, higher_is_unanswerable=higher)(
        labels, scores
    )
    fpr, tpr, _ = roc_curve(labels, scores if higher else -scores)
    result.update(
        {
            "method": detector.name,
            "higher_is_unanswerable": higher,
            "rule": f"unanswerable when score {'>=' if higher else '<='} threshold",
            "items": len(labels),
            "unanswerable": int(sum(labels)),
        }
    )
    if getattr(detector, "scales", None) is not None:
        result["scales"] = [list(scale) for scale in detector.scales]
    return result, (fpr, tpr)


def compare_detectors(
    detectors: Sequence[Detector],
    items: Sequence[dict[str, Any]],
    roc_path: str | Path | None = None,
) -> dict[str, dict[str, Any]]:
    """Each detector's threshold at the max-F1 point of ``items`` (``validation_items``),
    with F1, precision, recall and ROC AUC, on the same items; their ROC curves in one plot
    at ``roc_path`` (the paper's comparison of MC dropout and perplexity)."""
    results, curves = {}, {}
    for detector in detectors:
        results[detector.name], curves[detector.name] = _calibrate(detector, items)
    if roc_path is not None:
        save_roc_png(curves, roc_path, "unanswerable contexts")
    return results
