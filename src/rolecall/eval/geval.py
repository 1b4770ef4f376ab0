"""G-Eval (Liu et al., 2023) as K/DA uses it: 1-5 scores on four criteria.

Criteria: ``overall`` offensiveness, ``implicit`` offensiveness, ``consistency`` (pairs only:
does the rewrite keep the neutral sentence's content) and ``fluency``. One template each.

The score is the expectation over the score tokens "1".."5":

- ``score`` mode (backends with log-likelihood scoring, e.g. the embedded model): the
  likelihood of each of " 1".." 5" after the prompt, normalised over the five;
- ``logprobs`` mode (servers that return top-k logprobs): one generated token, its top
  alternatives restricted to "1".."5" and normalised;
- ``sample`` mode (anything else): the mean of k sampled answers' first digit 1-5.

Every result states the mode it used; an item whose answer gives no score is ``None`` with
the reason, never a default.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rolecall.errors import ConfigError
from rolecall.llm import LLM, Request, SamplingParams
from rolecall.llm.base import Completion, TopLogprob
from rolecall.prompts import load_template

CRITERIA = ("overall", "implicit", "consistency", "fluency")
SCORES = (1, 2, 3, 4, 5)
MODES = ("auto", "score", "logprobs", "sample")
_DIGIT = re.compile(r"[1-5]")


@dataclass
class GevalResult:
    item: int
    criterion: str
    mode: str
    score: float | None
    probabilities: dict[int, float] | None = None
    samples: list[int] = field(default_factory=list)
    problem: str | None = None


def weighted_score(probabilities: dict[int, float]) -> float:
    total = sum(probabilities.values())
    return sum(s * p for s, p in probabilities.items()) / total


def normalise(logprobs: dict[int, float]) -> dict[int, float]:
    top = max(logprobs.values())
    weights = {s: math.exp(lp - top) for s, lp in logprobs.items()}
    total = sum(weights.values())
    return {s: w / total for s, w in weights.items()}


def from_top_logprobs(top: Sequence[TopLogprob]) -> dict[int, float] | None:
    """Score-token probabilities among the alternatives of one generated token."""
    found: dict[int, float] = {}
    for alternative in top:
        token = alternative.token.strip()
        if token in {str(s) for s in SCORES}:
            score = int(token)
            found[score] = max(found.get(score, -math.inf), alternative.logprob)
    return normalise(found) if found else None


def choose_mode(llm: LLM, mode: str) -> str:
    if mode not in MODES:
        raise ConfigError(f"unknown G-Eval mode '{mode}'", fix=f"use one of {MODES}")
    caps = llm.backend.capabilities()
    if mode == "auto":
        return ("score" if caps.get("loglikelihood") else
                "logprobs" if caps.get("logprobs") else "sample")
    return mode


def _requests(prompt: str, mode: str) -> list[Request]:
    if mode == "score":
        return [Request(prompt=prompt, score_text=f" {s}") for s in SCORES]
    if mode == "logprobs":
        return [Request(prompt=prompt, params=SamplingParams(temperature=0.0, max_tokens=1,
                                                             logprobs=20))]
    return [Request(prompt=prompt, params=SamplingParams(temperature=1.0, max_tokens=3,
                                                         seed=0))]


def _result(item: int, criterion: str, mode: str, answers: list[list]) -> GevalResult:
    result = GevalResult(item, criterion, mode, None)
    if any(not sample.ok for row in answers for sample in row):
        result.problem = "LLM call failed"
        return result
    completions: list[Completion] = [row[0].completion for row in answers]
    if mode == "score":
        result.probabilities = normalise({s: c.loglikelihood for s, c in
                                          zip(SCORES, completions)})
    elif mode == "logprobs":
        steps = completions[0].logprobs or []
        result.probabilities = from_top_logprobs(steps[0].top) if steps else None
        if result.probabilities is None:
            result.problem = "no score token among the top logprobs"
    else:
        digits = [_DIGIT.search(s.completion.text) for s in answers[0]]
        result.samples = [int(d.group()) for d in digits if d]
        if not result.samples:
            result.problem = "no sampled answer holds a score 1-5"
        else:
            result.score = sum(result.samples) / len(result.samples)
    if result.probabilities:
        result.score = weighted_score(result.probabilities)
    return result


def geval(llm: LLM, texts: Sequence[str], neutrals: Sequence[str] | None,
          criteria: Sequence[str], mode: str = "auto", samples: int = 5,
          language: str = "ko", progress: bool = True) -> list[GevalResult]:
    """Score every text on every criterion; ``neutrals`` pairs them for consistency."""
    mode = choose_mode(llm, mode)
    for criterion in criteria:
        if criterion not in CRITERIA:
            raise ConfigError(f"unknown criterion '{criterion}'", fix=f"use {CRITERIA}")
        if criterion == "consistency" and neutrals is None:
            raise ConfigError("consistency needs pairs", fix="give a K/DA CSV or pairs JSONL")
    results = []
    for criterion in criteria:
        template = load_template(f"geval_{criterion}", language)
        prompts = [template.render(text=t, neutral=neutrals[i] if neutrals else "")
                   for i, t in enumerate(texts)]
        per_item = [_requests(p, mode) for p in prompts]
        flat = [r for requests in per_item for r in requests]
        answers = llm.generate(flat, n=samples if mode == "sample" else 1,
                               progress=progress, description=f"G-Eval: {criterion}")
        start = 0
        for i, requests in enumerate(per_item):
            results.append(_result(i, criterion, mode, answers[start: start + len(requests)]))
            start += len(requests)
    return results


def summarise(results: Sequence[GevalResult]) -> dict[str, dict]:
    """Per criterion: mean score over scored items, how many were scored, the mode."""
    table: dict[str, dict] = {}
    for criterion in dict.fromkeys(r.criterion for r in results):
        rows = [r for r in results if r.criterion == criterion]
        scored = [r.score for r in rows if r.score is not None]
        table[criterion] = {"mean": sum(scored) / len(scored) if scored else None,
                            "scored": len(scored), "items": len(rows), "mode": rows[0].mode}
    return table
