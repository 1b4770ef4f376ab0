"""What every label judge shares: scoring label words, and reading a JSON answer.

A base model judges by the likelihood of each label word after the prompt (one scoring
request per word); the verdict is the most likely word and the softmax over the words is
its probability distribution. A chat model answers JSON; a field that is missing or not one
of the allowed values means the answer did not parse.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from rolecall.llm import Request
from rolecall.llm.base import Completion


def label_requests(prompt: str, words: Sequence[str]) -> list[Request]:
    return [Request(prompt=prompt, score_text=f" {word}") for word in words]


def pick_label(words: Sequence[str], completions: Sequence[Completion]
               ) -> tuple[str, dict[str, float], str]:
    """(most likely word, softmax over the words, raw output as JSON)."""
    scores = {word: c.loglikelihood for word, c in zip(words, completions)}
    top = max(scores.values())
    weights = {word: math.exp(s - top) for word, s in scores.items()}
    total = sum(weights.values())
    probabilities = {word: w / total for word, w in weights.items()}
    raw = json.dumps({"loglikelihood": scores}, ensure_ascii=False)
    return max(scores, key=scores.get), probabilities, raw


def json_answer(text: str) -> dict | None:
    """The first-to-last brace span of ``text`` as a JSON object, or None."""
    try:
        answer = json.loads(text[text.index("{"): text.rindex("}") + 1])
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def enum_schema(field: str, values: Sequence[str]) -> dict:
    return {"type": "object", "required": [field],
            "properties": {field: {"type": "string", "enum": list(values)}}}
