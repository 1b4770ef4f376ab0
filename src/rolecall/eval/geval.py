"""G-Eval (Liu et al., 2023) as K/DA uses it: 1-5 scores on four criteria.

Criteria: ``overall`` offensiveness, ``implicit`` offensiveness, ``consistency`` (pairs only:
does the rewrite keep the neutral sentence's content) and ``fluency``. One template each.

The score is the expectation over the score tokens "1".."5":

- ``score`` mode (backends with log-likelihood scoring, e.g. the embedded model): the
  likelihood of each of " 1".." 5" after the prompt, normalised over the five;
- ``logprobs`` mode (servers that return top-k logprobs): one generated token, its top
  alternatives restricted to "1".."5" and normalised;
- ``sample`` mode (anything else): the mean of k sampled answers' first digit 1-5.

G-Eval is a label judge over the words "1".."5" (``GevalJudge``): it resolves its mode,
softmaxes its label scores and collects its votes with the same core as the other judges
(``judge/labels.py``, ``judge/voting.py``), and can keep every vote in a verdicts file.

Every result states the mode it used; an item whose answer gives no score is ``None`` with
the reason, never a default.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rolecall.errors import ConfigError
from rolecall.jsonl import ResumableJsonl
from rolecall.judge.labels import label_requests, pick_label, resolve_mode, softmax
from rolecall.judge.voting import collect_votes
from rolecall.llm import LLM, Request, SamplingParams
from rolecall.llm.base import Completion, TopLogprob
from rolecall.prompts import Template, load_template
from rolecall.records import Verdict

CRITERIA = ("overall", "implicit", "consistency", "fluency")
SCORES = (1, 2, 3, 4, 5)
WORDS = [str(s) for s in SCORES]  # the label words: scored as " 1".." 5"
MODES = ("score", "logprobs", "sample")  # in order of preference for auto
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


def from_top_logprobs(top: Sequence[TopLogprob]) -> dict[int, float] | None:
    """Score-token probabilities among the alternatives of one generated token."""
    found: dict[int, float] = {}
    for alternative in top:
        token = alternative.token.strip()
        if token in {str(s) for s in SCORES}:
            score = int(token)
            found[score] = max(found.get(score, -math.inf), alternative.logprob)
    return softmax(found) if found else None


def _requests(prompt: str, mode: str) -> list[Request]:
    if mode == "score":
        return label_requests(prompt, WORDS)
    if mode == "logprobs":
        return [
            Request(
                prompt=prompt, params=SamplingParams(temperature=0.0, max_tokens=1, logprobs=20)
            )
        ]
    return [Request(prompt=prompt, params=SamplingParams(temperature=1.0, max_tokens=3, seed=0))]


@dataclass(frozen=True)
class GevalItem:
    """One text to score (``number``: its position in the input), with its neutral
    sentence for ``consistency``."""

    number: int
    text: str
    neutral: str = ""


@dataclass(frozen=True)
class GevalJudge:
    """G-Eval on one criterion as a label judge over the score words "1".."5", so it runs
    through the same voting core as every judge (``judge/voting.py``). A vote's label is
    the most likely score (score, logprobs modes; ``probabilities`` over "1".."5") or the
    sampled answer's first digit (sample mode: one vote per sample)."""

    criterion: str
    mode: str  # "score", "logprobs" or "sample"
    template: Template

    @property
    def name(self) -> str:
        return f"geval_{self.criterion}"

    @staticmethod
    def item_id(item: GevalItem) -> str:
        return str(item.number)

    def format_input(self, item: GevalItem) -> list[Request]:
        return _requests(self.template.render(text=item.text, neutral=item.neutral), self.mode)

    def parse_output(self, item: GevalItem, completions: list[Completion], model: str) -> Verdict:
        common = {"judge": self.name, "item_id": self.item_id(item), "model": model}
        if self.mode == "score":
            word, probabilities, raw = pick_label(WORDS, completions)
            return Verdict(
                label=word,
                probabilities=probabilities,
                raw_output=raw,
                parse_status="parsed",
                **common,
            )
        text = completions[0].text
        if self.mode == "logprobs":
            steps = completions[0].logprobs or []
            found = from_top_logprobs(steps[0].top) if steps else None
            if found is None:
                return Verdict(raw_output=text, parse_status="unparsed", **common)
            return Verdict(
                label=str(max(found, key=found.get)),
                raw_output=text,
                probabilities={str(s): p for s, p in found.items()},
                parse_status="parsed",
                **common,
            )
        digit = _DIGIT.search(text)
        if digit is None:
            return Verdict(raw_output=text, parse_status="unparsed", **common)
        return Verdict(label=digit.group(), raw_output=text, parse_status="parsed", **common)


_NO_SCORE = {
    "logprobs": "no score token among the top logprobs",
    "sample": "no sampled answer holds a score 1-5",
}


def _result(item: int, criterion: str, mode: str, votes: Sequence[Verdict]) -> GevalResult:
    """An item's score from its votes: the expectation of the one vote's probabilities,
    or the mean of the sampled digits."""
    result = GevalResult(item, criterion, mode, None)
    if any(v.parse_status == "failed" for v in votes):
        result.problem = "LLM call failed"
        return result
    parsed = [v for v in votes if v.parse_status == "parsed"]
    if mode == "sample":
        result.samples = [int(v.label) for v in parsed]
        if result.samples:
            result.score = sum(result.samples) / len(result.samples)
    elif parsed:
        result.probabilities = {int(s): p for s, p in parsed[0].probabilities.items()}
        result.score = weighted_score(result.probabilities)
    if result.score is None:
        result.problem = _NO_SCORE[mode]
    return result


def geval(
    llm: LLM,
    texts: Sequence[str],
    neutrals: Sequence[str] | None,
    criteria: Sequence[str],
    mode: str = "auto",
    samples: int = 5,
    language: str = "ko",
    progress: bool = True,
    votes_out: ResumableJsonl | None = None,
) -> list[GevalResult]:
    """Score every text on every criterion; ``neutrals`` pairs them for consistency.
    ``votes_out`` keeps every vote (a ``Verdict`` named ``geval_CRITERION/MODE/SAMPLE``)."""
    mode = resolve_mode(mode, MODES, llm.backend, "G-Eval")
    for criterion in criteria:
        if criterion not in CRITERIA:
            raise ConfigError(f"unknown criterion '{criterion}'", fix=f"use {CRITERIA}")
        if criterion == "consistency" and neutrals is None:
            raise ConfigError("consistency needs pairs", fix="give a K/DA CSV or pairs JSONL")
    items = [GevalItem(i, t, neutrals[i] if neutrals else "") for i, t in enumerate(texts)]
    results = []
    for criterion in criteria:
        judge = GevalJudge(criterion, mode, load_template(f"geval_{criterion}", language))
        votes = collect_votes(
            llm,
            judge,
            items,
            samples if mode == "sample" else 1,
            votes_out,
            progress,
            f"G-Eval: {criterion}",
        )
        results += [
            _result(item.number, criterion, mode, item_votes)
            for item, item_votes in zip(items, votes)
        ]
    return results


def summarise(results: Sequence[GevalResult]) -> dict[str, dict]:
    """Per criterion: mean score over scored items, how many were scored, the mode."""
    table: dict[str, dict] = {}
    for criterion in dict.fromkeys(r.criterion for r in results):
        rows = [r for r in results if r.criterion == criterion]
        scored = [r.score for r in rows if r.score is not None]
        table[criterion] = {
            "mean": sum(scored) / len(scored) if scored else None,
            "scored": len(scored),
            "items": len(rows),
            "mode": rows[0].mode,
        }
    return table
