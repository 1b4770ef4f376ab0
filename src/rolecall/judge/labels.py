"""What every label judge shares: scoring label words, and reading a JSON answer.

A base model judges by the likelihood of each label word after the prompt (one scoring
request per word); the verdict is the most likely word and the softmax over the words is
its probability distribution. Small base models carry a strong prior for some label words
whatever the input (the embedded 270M model says "노골적" for almost every K/DA candidate);
contextual calibration (Zhao et al. 2021, "Calibrate Before Use") divides that prior out:
the prior is the mean word distribution for content-free inputs ("N/A"), and a calibrated
verdict takes the argmax of log p(word | input) - log p(word | content-free).

A chat model answers JSON; a field that is missing or not one of the allowed values means
the answer did not parse.

Every judge (the out-of-bounds judge, K/DA's filters, G-Eval) picks its mode here
(``resolve_mode``: ``auto`` takes the first mode the backend can do) and turns label scores
into probabilities with the same softmax.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from rolecall.errors import ConfigError
from rolecall.llm import Request
from rolecall.llm.base import Backend, Completion

K = TypeVar("K", bound=Hashable)

# the backend capability a judging mode needs; a mode not named here needs none
MODE_NEEDS = {"score": "loglikelihood", "logprobs": "logprobs"}


def resolve_mode(mode: str, choices: Sequence[str], backend: Backend, what: str) -> str:
    """``mode`` if it is one of ``choices``; ``auto``: the first of ``choices`` (in order of
    preference) that ``backend`` can do. ``what`` names the judge in the error."""
    if mode != "auto" and mode not in choices:
        raise ConfigError(
            f"unknown {what} mode '{mode}'", fix=f"use auto or one of: {', '.join(choices)}"
        )
    if mode != "auto":
        return mode
    caps = backend.capabilities()
    return next(m for m in choices if m not in MODE_NEEDS or caps.get(MODE_NEEDS[m]))


def label_requests(prompt: str, words: Sequence[str]) -> list[Request]:
    return [Request(prompt=prompt, score_text=f" {word}") for word in words]


def log_softmax(scores: Mapping[K, float]) -> dict[K, float]:
    top = max(scores.values())
    log_total = top + math.log(sum(math.exp(s - top) for s in scores.values()))
    return {label: s - log_total for label, s in scores.items()}


def softmax(scores: Mapping[K, float]) -> dict[K, float]:
    """Probabilities from log-scores (log-likelihoods or logprobs) of the labels."""
    return {label: math.exp(lp) for label, lp in log_softmax(scores).items()}


def pick_label(
    words: Sequence[str],
    completions: Sequence[Completion],
    prior: Mapping[str, float] | None = None,
) -> tuple[str, dict[str, float], str]:
    """(most likely word, softmax over the words, raw output as JSON).

    ``prior`` (log-probabilities of the words on content-free inputs, see
    ``content_free_prior``) is subtracted first; the raw output keeps both.
    """
    scores = {word: c.loglikelihood for word, c in zip(words, completions)}
    adjusted = {w: s - prior[w] for w, s in scores.items()} if prior else scores
    probabilities = softmax(adjusted)
    raw = {"loglikelihood": scores, **({"prior": dict(prior)} if prior else {})}
    return max(adjusted, key=adjusted.get), probabilities, json.dumps(raw, ensure_ascii=False)


def content_free_prior(
    prompts: Sequence[str], words: Sequence[str], completions: Sequence[Completion]
) -> dict[str, float]:
    """Log of the mean word distribution over content-free prompts.

    ``completions`` answer ``label_requests(prompt, words)`` for each prompt in order.
    """
    if not prompts or len(completions) != len(prompts) * len(words):
        raise ValueError("one completion per (content-free prompt, label word) is needed")
    mean = dict.fromkeys(words, 0.0)
    for number in range(len(prompts)):
        chunk = completions[number * len(words) : (number + 1) * len(words)]
        scores = {word: c.loglikelihood for word, c in zip(words, chunk)}
        for word, lp in log_softmax(scores).items():
            mean[word] += math.exp(lp) / len(prompts)
    return {word: math.log(p) for word, p in mean.items()}


def json_answer(text: str) -> dict | None:
    """The first-to-last brace span of ``text`` as a JSON object, or None."""
    try:
        answer = json.loads(text[text.index("{") : text.rindex("}") + 1])
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def enum_schema(field: str, values: Sequence[str]) -> dict:
    return {
        "type": "object",
        "required": [field],
        "properties": {field: {"type": "string", "enum": list(values)}},
    }
