"""Perplexity of a response given the dialogue, from any LLM that scores text.

Used by the perplexity method of unanswerable-context detection (``serve/unanswerable.py``);
``lm_prompt`` is also the prompt of the generator, whose response perplexities pick the
bot's fallback question.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rolecall.errors import (
    BackendError,
    ConfigError,
)
from rolecall.train.data import LAST
from rolecall.train.pairs import Context


def lm_prompt(context: Context) -> str:
    """The dialogue as an LM reads it: plain ``role: text`` lines (no ``LAST`` marker, a
    model-specific cue an LM never saw), then ``system:`` for the turn to be scored."""
    if isinstance(context, str):
        lines = [line.removeprefix(LAST) for line in context.splitlines()]
    else:
        lines = [f"{turn.role}: {turn.text.strip()}" for turn in context]
    return "\n".join([*lines, "system:"])


def lm_perplexities(
    scorer: Any, prompts: Sequence[str], texts: Sequence[str], progress: bool = False
) -> np.ndarray:
    """Perplexity of each ``text`` as the continuation of its prompt (a leading space
    joins it to ``system:``). ``scorer`` is an ``LLM`` (cached) or a ``Backend``."""
    from rolecall.llm import LLM, Request
    from rolecall.llm.base import Backend

    if isinstance(scorer, Backend):
        scorer = LLM(scorer)
    if not isinstance(scorer, LLM):
        raise ConfigError(
            f"cannot score text with a {type(scorer).__name__}",
            fix="pass an LLM or a backend from rolecall.llm.load_backend, e.g. "
            "load_backend('hf:embedded')",
        )
    if len(prompts) != len(texts):
        raise ValueError(f"{len(prompts)} prompts but {len(texts)} texts")
    requests = [
        Request(prompt=p, score_text=" " + t.strip()) for p, t in zip(prompts, texts, strict=True)
    ]
    samples = scorer.generate(requests, progress=progress, description="perplexity")
    values = []
    for (sample,), text in zip(samples, texts, strict=True):
        if sample.completion is None or not sample.completion.logprobs:
            why = sample.error or "no token logprobs came back"
            raise BackendError(
                f"{scorer.model_id} could not score {text!r}: {why}",
                fix="use a backend that scores text: hf: or llamacpp:",
            )
        values.append(sample.completion.perplexity)
    return np.asarray(values, dtype=float)
