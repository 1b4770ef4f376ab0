"""What every bot answers with, the interface every bot answers through, and how a bot
draws a reply that a person did not reject before.

``reply(history, exclude)`` returns a ``Reply``: the text and how it was made (the path
taken, each stage's scores and thresholds, the latency). ``exclude`` holds the replies a
person already rejected at this point of the dialogue (the web app's Fix); a bot must not
offer them again. ``version`` labels the bot so that error rates can be compared per
version (NAACL 2022, Table 4); the web app replaces it with a label that hashes the bot's
files and hides where its model lives (``web/bots.py``).

Two bots implement it: the Retrieve-fail-Generate bot (``serve/bot.py``) and an LLM
prompted with the role spec (``serve/prompted.py``); ``rolecall chat`` and the web app
talk to either.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from rolecall.records import Turn

# Draws at most for one reply when a person rejected earlier ones (the generator of the
# Retrieve-fail-Generate bot and the prompted bot alike).
TRIES = 5
RESAMPLE_TEMPERATURE = 0.8  # the least temperature of the draws after the first

# How a reply was made. ``checked``: the spec's reply to a check of the user's turn (a
# crisis, abuse, an off-role request, ...: serve/user_checks.py); ``llm``: an LLM prompted
# with the role spec wrote it, with no retrieval; ``generated``: the bot's generator wrote
# it because retrieval failed (also when that generator is a prompted LLM). The web app
# stores the path with every bot turn and its dashboard groups turns by it, so a name here
# is never renamed.
ReplyPath = Literal["retrieved", "generated", "fallback", "llm", "checked"]


@dataclass
class Reply:
    """What the bot says and why."""

    text: str
    path: ReplyPath
    stages: list[dict[str, Any]] = field(default_factory=list)
    latency_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def provenance(self) -> dict[str, Any]:
        """How the reply was made: everything but its text."""
        return {"path": self.path, "stages": self.stages, "latency_ms": self.latency_ms}

    def describe(self) -> str:
        """The path, the scores that decided it and the latency, on one line (what
        ``rolecall chat`` and the demo print under each reply)."""
        parts: list[str] = [self.path]
        for stage in self.stages:
            if stage["stage"] == "user_check" and stage.get("check"):
                how = stage["by"]
                if stage.get("probability") is not None:
                    how += f" {stage['probability']:.2f} vs threshold {stage['threshold']:.2f}"
                parts.append(f"user check {stage['check']} ({how})")
                if stage.get("flagged"):
                    parts.append("flagged for the operator")
            elif stage["stage"] == "retrieve":
                best = stage["candidates"][0] if stage.get("candidates") else {}
                if best.get("rerank_score") is not None:
                    parts.append(f"rerank {best['rerank_score']:.2f}")
                if stage.get("confidence") is not None:
                    name = stage.get("method") or "confidence"  # the detector that gave it
                    parts.append(f"{name} {stage['confidence']:.3f}")
                    if stage.get("threshold") is not None:
                        parts[-1] += f" vs threshold {stage['threshold']:.3f}"
            elif stage["stage"] == "generate" and "ms" in stage:
                parts.append(f"generated in {stage['ms']:.0f} ms")
            elif stage["stage"] == "guard":
                parts.append(
                    f"P(out of bounds) {stage['p_out_of_bounds']:.2f}"
                    + (f" -> flagged {stage['text']!r}" if stage["flagged"] else "")
                )
        parts.append(f"{self.latency_ms:.0f} ms")
        return " · ".join(parts)


class ChatBot(Protocol):
    version: str

    def reply(self, history: Sequence[Turn], exclude: Collection[str] = ()) -> Reply: ...


def draw_unrejected(
    draw: Callable[[float, int], str], temperature: float, exclude: Collection[str]
) -> tuple[str, int, float]:
    """``(text, draws, temperature of the last draw)``: ``draw(temperature, seed)`` until
    it returns a non-empty text not in ``exclude``, at most ``TRIES`` times (the last draw
    is returned even if rejected: a bot always answers).

    The first draw is the configured one with seed 0, so an unrejected turn is what it
    always was (and cached calls are hits); later draws change the seed, and at least
    ``RESAMPLE_TEMPERATURE``, because a greedy draw would only repeat the rejected reply."""
    text = ""
    for attempt in range(TRIES):
        if attempt:
            temperature = max(temperature, RESAMPLE_TEMPERATURE)
        text = draw(temperature, attempt)
        if text and text not in exclude:
            break
    return text, attempt + 1, temperature


def unsaid(pool: Sequence[str], history: Sequence[Turn], also: Collection[str] = ()) -> list[str]:
    """The replies of a fixed ``pool`` the bot has not said yet in this call (its turns,
    stripped; nor in ``also``), in order; the whole pool when it has said them all: a reply
    from a fixed pool is not said twice."""
    said = {t.text.strip() for t in history if t.role == "system"} | set(also)
    return [r for r in pool if r.strip() not in said] or list(pool)


def ms_since(started: float) -> float:
    """Milliseconds since ``time.perf_counter()`` was ``started``."""
    return round(1000 * (time.perf_counter() - started), 2)
