"""The user's turn read before the bot picks its reply (DESIGN.md, "Safety by default").

``UserTurnChecks.read(history)`` says which of the spec's ``user_checks`` the last user turn
calls for, if any, and ``reply(...)`` gives the bot's answer to it: a crisis gets the spec's
referral reply (and the call is flagged for the operator), abuse a calm reply that steers
back, an off-role request the spec's refusal and a redirect, a question about the bot or
the date its fixed honest answer, an unclear turn a clarifying question.

Two readers, rules first:

- **rules** where a rule is exact: an empty turn, or one without a Hangul letter (another
  language, punctuation, digits), is unclear (the spec's ``clarify`` check); a resident
  registration or card number is personal data (the check named ``personal_data``); a
  crisis check's own ``patterns`` in the spec (an explicit means of self-harm, say);
- **the classifier** (``train/user_checks.py``): each check's probability against the
  threshold chosen for it on held-out folds; of the checks above their thresholds, the most
  urgent kind wins (crisis, abuse, refuse, answer, clarify), then the higher ratio of
  probability to threshold. A crisis it finds answers; otherwise the other checks'
  ``patterns`` (an insult, most urgent kind first) come before its verdict, so that a
  swear word inside a report of abuse by others is still read as a crisis.

A bot directory's ``user_checks/`` holds the classifier and ``checks.json`` (the checks,
their replies, the help lines, the thresholds), so a copied bot needs no spec.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, get_args

from rolecall.korean import HANGUL_RE
from rolecall.records import NO_CHECK, CheckKind, Turn, UserCheck
from rolecall.serve.reply import unsaid

# most urgent first (the order CheckKind lists them): when several checks fire, the first
# kind here answers
KIND_ORDER = get_args(CheckKind)
PERSONAL_DATA = "personal_data"  # the check the number rules fire, when the spec has it
NUMBER_RULES = {
    "resident registration number": re.compile(r"\d{6}\s*-\s*[1-8]\d{6}"),
    "card number": re.compile(r"\d{4}[\s-]\d{4}[\s-]\d{4}[\s-]\d{4}"),
}


class UserTurnChecks:
    """The spec's checks with the classifier that reads a turn for them."""

    def __init__(
        self,
        checks: Sequence[UserCheck],
        help_lines: dict[str, str],
        thresholds: dict[str, float],
        model: Any,
    ):
        self.checks = {c.name: c for c in checks}
        ordered = sorted(checks, key=lambda c: KIND_ORDER.index(c.kind))
        compiled = [(c, re.compile(p)) for c in ordered for p in c.patterns]
        self.patterns = [(c.name, p) for c, p in compiled if c.kind == "crisis"]
        self.later_patterns = [(c.name, p) for c, p in compiled if c.kind != "crisis"]
        self.help_lines, self.thresholds, self.model = help_lines, thresholds, model

    @classmethod
    def load(cls, directory: str | Path) -> UserTurnChecks:
        from rolecall.train.baselines import TfidfModel
        from rolecall.train.user_checks import read_checks

        checks, help_lines, thresholds = read_checks(Path(directory))
        return cls(checks, help_lines, thresholds, TfidfModel.load(directory))

    def read(self, history: Sequence[Turn]) -> dict[str, Any]:
        """The ``user_check`` stage of a reply: the last user turn's check (``check``:
        None when none fires), what decided it and each check's probability."""
        text = next((t.text for t in reversed(history) if t.role == "user"), "")
        stage: dict[str, Any] = {"stage": "user_check", "check": None}
        rule = self._rule(text)
        if rule is not None:
            stage.update(check=rule[0], by=f"rule: {rule[1]}")
        else:
            probabilities = self.probabilities([text])[0]
            fired = [
                name
                for name, p in probabilities.items()
                if name in self.checks and p >= self.thresholds.get(name, 1.0)
            ]
            stage["by"] = "classifier"
            stage["probabilities"] = {
                n: round(p, 4) for n, p in probabilities.items() if n != NO_CHECK and p >= 0.05
            }
            crisis = any(self.checks[n].kind == "crisis" for n in fired)
            later = None if crisis else _first_pattern(self.later_patterns, text)
            if later is not None:
                stage.update(check=later[0], by=f"rule: {later[1]}")
            elif fired:
                best = min(
                    fired,
                    key=lambda n: (
                        KIND_ORDER.index(self.checks[n].kind),
                        -probabilities[n] / max(self.thresholds[n], 1e-9),
                    ),
                )
                stage.update(
                    check=best,
                    probability=round(probabilities[best], 4),
                    threshold=self.thresholds[best],
                )
        if stage["check"] is not None:
            check = self.checks[stage["check"]]
            stage.update(kind=check.kind, flagged=check.flags)
        return stage

    def probabilities(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """Each text's probability of each label (the checks and ``none``)."""
        rows = self.model.predict_proba(list(texts))
        return [dict(zip(self.model.labels, map(float, row))) for row in rows]

    def reply(
        self, check: str, history: Sequence[Turn], exclude: Collection[str] = ()
    ) -> str | None:
        """The check's first reply not said yet in this call (the first, when all were);
        None when a person rejected every one here (the web app's Fix)."""
        replies = [r for r in self.checks[check].replies if r not in exclude]
        return unsaid(replies, history)[0] if replies else None

    def _rule(self, text: str) -> tuple[str, str] | None:
        """``(check, rule)`` when an exact rule decides the turn."""
        if PERSONAL_DATA in self.checks:
            for name, pattern in NUMBER_RULES.items():
                if pattern.search(text):
                    return PERSONAL_DATA, name
        crisis = _first_pattern(self.patterns, text)
        if crisis is not None:
            return crisis
        clarify = next((c.name for c in self.checks.values() if c.kind == "clarify"), None)
        if clarify is None:
            return None
        if not text.strip():
            return clarify, "empty turn"
        if not HANGUL_RE.search(text):
            return clarify, "no Korean letter"
        return None


def _first_pattern(patterns: list[tuple[str, re.Pattern]], text: str) -> tuple[str, str] | None:
    """``(check, rule)`` of the first pattern found in ``text``."""
    for name, pattern in patterns:
        found = pattern.search(text)
        if found:
            return name, f"pattern {found.group(0)!r}"
    return None
