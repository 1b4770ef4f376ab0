"""What every rule shares: its hit, its settings (one section of the spec's ``rules:``) and
the category its verdicts carry."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from rolecall.errors import ConfigError, describe_validation
from rolecall.records import RoleSpec

SPEC_FIX = "see docs/rule-judges.md and the rules: section of examples/carecall/spec.yaml"


@dataclass(frozen=True)
class Hit:
    """Why a rule fired: the rule, the sentence it fired on and what in it matched."""

    rule: str
    sentence: str
    matched: str

    def describe(self) -> str:
        return f"{self.rule}: {self.matched} in «{self.sentence}»"


class RuleSettings(BaseModel):
    """Settings every rule has; a rule adds its own lexicons and patterns.

    ``category`` names the spec category whose ``error_category`` the verdicts carry.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    category: str | None = None


def check_patterns(patterns: list[str]) -> list[str]:
    """A pydantic field check: every pattern must compile (the error names the pattern)."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"bad regular expression {pattern!r}: {exc}") from None
    return patterns


class PatternSettings(RuleSettings):
    """A rule with ``extra_patterns``: regular expressions over a sentence (spaces kept)
    that fire on their own, beside the rule's Korean analysis."""

    extra_patterns: list[str] = []

    _patterns = field_validator("extra_patterns")(check_patterns)


S = TypeVar("S", bound=RuleSettings)


def settings_for(spec: RoleSpec | None, key: str, model: type[S]) -> S:
    """The ``rules.<key>`` section of the spec validated by ``model``; defaults without
    a spec or without the section."""
    raw = (spec.rules if spec is not None else {}).get(key)
    if raw is None:
        return model()
    if not isinstance(raw, dict):
        raise ConfigError(
            f"role spec {spec.name!r}: rules.{key} must be a mapping, got {type(raw).__name__}",
            fix=SPEC_FIX,
        )
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(
            f"role spec {spec.name!r}: rules.{key}: {describe_validation(exc, key)}",
            fix=SPEC_FIX,
        ) from None


def error_category(spec: RoleSpec | None, name: str, default: str) -> str:
    """The error category of the spec category ``name``; ``default`` if the spec has none."""
    if spec is not None:
        for category in spec.categories:
            if category.name == name:
                return category.error_category
    return default


def compiled(patterns: list[str]) -> list[re.Pattern[str]]:
    return [re.compile(p) for p in patterns]


def pattern_hit(rule: str, text: str, patterns: list[re.Pattern[str]]) -> Hit | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return Hit(rule, text, f"pattern {pattern.pattern!r} matched {found.group(0)!r}")
    return None


def first_hit(rule: str, sentences, claim, patterns: list[re.Pattern[str]]) -> Hit | None:
    """The first sentence that the rule's own ``claim(sentence)`` (what matched, or None)
    or one of its extra patterns catches."""
    for sentence in sentences:
        found = claim(sentence)
        if found:
            return Hit(rule, sentence.text, found)
        hit = pattern_hit(rule, sentence.text, patterns)
        if hit:
            return hit
    return None
