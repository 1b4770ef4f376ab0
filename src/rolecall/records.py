"""The records every stage reads and writes, as validated pydantic models.

Role-specified dialogue (NAACL 2022): ``RoleSpec`` -> ``Dialogue`` of ``Turn``s -> ``Example``
(history, response, positive/negative, category). K/DA (ACL 2025): ``Pair`` (neutral,
toxic, provenance). Both: ``Verdict``, one judge's answer (an LLM's with its raw output
kept, a trained model's, a rule's).
JSONL reading and writing for these lives in ``jsonl.py``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Category(_Record):
    """One part of a role specification, with the error category a violation maps to."""

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    forbidden_examples: list[str] = []
    error_category: str = Field(min_length=1)


# What the bot does when a user-turn check fires (serve/user_checks.py). ``crisis``: the
# spec's referral reply, and the turn is flagged for the operator; ``abuse``: a calm reply
# that steers back; ``refuse``: the spec's refusal and a redirect; ``answer``: a fixed honest
# answer (who the bot is, that it cannot know the date); ``clarify``: a clarifying question.
# Listed most urgent first: when several checks fire, the first kind answers.
CheckKind = Literal["crisis", "abuse", "refuse", "answer", "clarify"]
NO_CHECK = "none"  # the classifier's label of a turn no check fires on


class UserCheck(_Record):
    """One check of the user's turn, read before the bot picks its reply (DESIGN.md,
    "Safety by default"), with the bot's response policy."""

    name: str = Field(min_length=1, pattern=r"^[a-z][a-z0-9_]*$")
    kind: CheckKind
    description: str = Field(min_length=1)
    # what the bot says when the check fires: the first not yet said in this call
    replies: list[str] = Field(min_length=1)
    # user turns this check must fire on (training turns; more in a turns file)
    examples: list[str] = []
    # shared corpora that add training turns for this check ("square:contentious", ...;
    # train/user_checks.CORPORA)
    corpora: list[str] = []
    # regular expressions that fire the check on their own, before the classifier: only
    # where a phrase is exact (an explicit means of self-harm), never a topic word
    patterns: list[str] = []
    flag: bool | None = None  # flag the call for the operator; None: crisis checks only

    @field_validator("patterns")
    @classmethod
    def _patterns_compile(cls, patterns: list[str]) -> list[str]:
        import re

        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"pattern {pattern!r} is not a regular expression: {exc}")
        return patterns

    @property
    def flags(self) -> bool:
        return self.kind == "crisis" if self.flag is None else self.flag


class RoleSpec(_Record):
    """What the bot is and must not do: an outline plus categories (paper's Table 1)."""

    name: str = Field(min_length=1)
    outline: str = Field(min_length=1)
    # the prompt templates' language: the package ships Korean and English templates
    language: Literal["ko", "en"] = "ko"
    categories: list[Category] = Field(min_length=1)
    # settings of the rule judges (``rules:NAME``), per rule name: lexicons and patterns
    # that the rules in ``judge/rules/`` validate and read; empty: each rule's defaults
    rules: dict[str, Any] = Field(default_factory=dict)
    # per language, a category's or error category's display name (the web app's labels),
    # e.g. {"ko": {"not sensible": "맥락에 맞지 않음"}}; one without a name shows as itself
    display_names: dict[str, dict[str, str]] = Field(default_factory=dict)
    # where to get help, by phone number: {"119": "응급 상황", ...}; every crisis check's
    # replies name at least one of them
    help_lines: dict[str, str] = Field(default_factory=dict)
    # checks of the user's turn before the bot answers it (serve/user_checks.py)
    user_checks: list[UserCheck] = []

    @model_validator(mode="after")
    def _checks_are_answerable(self):
        names = [c.name for c in self.user_checks]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"user_checks names must be unique; repeated: {repeated}")
        if NO_CHECK in names:
            raise ValueError(f"'{NO_CHECK}' is the label of turns no check fires on: rename it")
        for check in self.user_checks:
            if check.kind != "crisis":
                continue
            if not self.help_lines:
                raise ValueError(
                    f"user_checks.{check.name} is a crisis check, but the spec has no "
                    "help_lines: add them, e.g. help_lines: {'119': '응급 상황'}"
                )
            for reply in check.replies:
                if not any(number in reply for number in self.help_lines):
                    raise ValueError(
                        f"user_checks.{check.name}: the reply {reply!r} names none of "
                        f"help_lines ({', '.join(self.help_lines)}): a crisis reply must "
                        "point to help"
                    )
        return self

    @model_validator(mode="after")
    def _named_things_exist(self):
        known = {c.name for c in self.categories} | {c.error_category for c in self.categories}
        for language, names in self.display_names.items():
            unknown = sorted(set(names) - known)
            if unknown:
                raise ValueError(
                    f"display_names.{language} names {unknown}, which are not categories or "
                    f"error categories of this spec (known: {sorted(known)})"
                )
        return self

    @field_validator("categories")
    @classmethod
    def _unique_names(cls, categories: list[Category]) -> list[Category]:
        names = [c.name for c in categories]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"category names must be unique; repeated: {duplicates}")
        return categories

    @property
    def error_categories(self) -> list[str]:
        return sorted({c.error_category for c in self.categories})


class Turn(_Record):
    role: Literal["system", "user"]
    text: str
    out_of_bounds: bool | None = None  # None: not judged
    category: str | None = None  # error category when out of bounds


class UserTurn(_Record):
    """A user-turn check's training turn: the turn, the check it calls for (or ``none``)
    and, optionally, the turns before it."""

    text: str
    check: str = Field(min_length=1)
    context: list[Turn] = []


class Dialogue(_Record):
    id: str = Field(min_length=1)
    turns: list[Turn]
    metadata: dict[str, Any] = {}


class Example(_Record):
    """A training example: the system ``response`` to ``history`` is in or out of bounds."""

    history: list[Turn]
    response: str
    label: Literal["positive", "negative"]
    category: str | None = None
    dialogue_id: str | None = None

    @model_validator(mode="after")
    def _negative_has_category(self):
        if self.label == "negative" and not self.category:
            raise ValueError("a negative example needs the error category it violates")
        if self.label == "positive" and self.category:
            raise ValueError("a positive example has no error category")
        return self


class Pair(_Record):
    """A K/DA pair: a neutral sentence and its implicitly offensive rewrite."""

    neutral: str = Field(min_length=1)
    toxic: str = Field(min_length=1)
    provenance: dict[str, Any] = {}


class Verdict(_Record):
    """One judge's answer about one item. An unparsable answer is its own outcome."""

    judge: str = Field(min_length=1)
    item_id: str = Field(min_length=1)
    label: str | None = None
    category: str | None = None
    raw_output: str
    parse_status: Literal["parsed", "unparsed", "failed"]
    probabilities: dict[str, float] | None = None
    model: str | None = None
    # which kind of judge answered (None in files written before judge kinds existed), the
    # judge's score for its label where it has one (a trained model's probability), and
    # for a rule judge the rule that fired
    kind: Literal["llm", "classifier", "rules"] | None = None
    score: float | None = None
    rule: str | None = None

    @model_validator(mode="after")
    def _label_matches_status(self):
        if self.parse_status == "parsed" and self.label is None:
            raise ValueError("a parsed verdict needs a label")
        if self.parse_status != "parsed" and self.label is not None:
            raise ValueError(f"an {self.parse_status} verdict has no label")
        return self


class Rejected(_Record):
    """A generation that did not become a record, kept with the reason and the raw text."""

    id: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    raw: str
    metadata: dict[str, Any] = {}


class RedteamVerdict(_Record):
    """A judge's answer on one bot reply, as a red-team record keeps it."""

    label: str | None = None
    category: str | None = None
    kind: str | None = None
    rule: str | None = None
    model: str | None = None
    parse_status: str = "parsed"


class RedteamTurn(_Record):
    """One turn of a red-team conversation. A bot turn keeps how it was made (``path``,
    ``stages``, ``latency_ms``: ``serve/reply.py``); from the attack on it is judged
    (``verdict``: the panel's majority; ``votes``: each member's) and checked for the
    attack's content morphemes said again (``repeated``)."""

    role: Literal["system", "user"]
    text: str
    path: str | None = None
    stages: list[dict[str, Any]] | None = None
    latency_ms: float | None = None
    verdict: RedteamVerdict | None = None
    votes: list[RedteamVerdict] | None = None
    repeated: list[str] | None = None


class RedteamOutcome(_Record):
    """What the judged bot turns of one red-team conversation add up to."""

    judged: int = 0
    unjudged: int = 0
    out_of_role: bool
    not_safe: bool
    repeated: bool
    fallback: int = 0


REDTEAM_COUNTS = ("n", "not_safe", "out_of_role", "repeated")


def tally(outcomes: list[RedteamOutcome]) -> dict[str, int]:
    """The conversations ``n`` and how many were not safe, out of role, or repeated the
    attack: the one count behind the red-team report and the dashboard's rates."""
    return {
        "n": len(outcomes),
        "not_safe": sum(o.not_safe for o in outcomes),
        "out_of_role": sum(o.out_of_role for o in outcomes),
        "repeated": sum(o.repeated for o in outcomes),
    }


class RedteamConversation(_Record):
    """One line of a red-team run's ``conversations.jsonl`` (``pipelines/redteam/run.py``
    writes it, the report and the web app read it). ``bot_version``: the label the web app
    records (``serve/version.py``), None for a bot without one; ``attack``: the attack
    turn's index, text and how it was made (its fields depend on ``kind``)."""

    id: str
    kind: str
    seed: int
    topic: str
    bot_version: str | None = None
    attack: dict[str, Any] = {}
    turns: list[RedteamTurn]
    outcome: RedteamOutcome
