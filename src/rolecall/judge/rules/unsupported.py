"""Unsupported features: the bot offers, promises or reports doing what the spec says it
cannot do (calling family, booking, sending money, playing music ...).

The features come from the spec (``rules.unsupported.features``); each has a ``name``,
``words`` (phrases matched with the spaces removed, so ``예약``, ``틀어 드``, ``대신 연락``)
and optional ``patterns`` (regular expressions that fire on their own, for claims that
are not offers, such as remembering an earlier call).

A feature word fires only inside an *offer by the bot*, read from Kiwi morphemes:

- a promise: the promissive ending -ㄹ게요/-ㄹ게 or -겠습니다 (``틀어 드릴게요``);
- an offer question: the benefactive 드리다/주다 + -ㄹ까요 (``택시를 불러 드릴까요?``);
- a done deed: the completive 두다/놓다 or 드리다 + the past 었 (``예약해 두었어요``);

and not when the main predicate carries the subject honorific 시 (``예약해 보세요``: the
user would do it) or the sentence a negation or inability (``틀어 드릴 수는 없어요``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rolecall.judge.rules.analysis import Sentence, plain
from rolecall.judge.rules.base import Hit, RuleSettings, check_patterns

NAME = "unsupported"
CATEGORY, DEFAULT_ERROR = "unsupported_features", "policy violation"
BENEFACTIVE = frozenset({"드리", "주"})
COMPLETIVE = frozenset({"두", "놓", "드리", "주"})


class Feature(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    words: list[str] = []
    patterns: list[str] = []

    _patterns = field_validator("patterns")(check_patterns)

    @field_validator("words")
    @classmethod
    def _no_blank(cls, words: list[str]) -> list[str]:
        if any(not w.strip() for w in words):
            raise ValueError("a feature word must not be blank")
        return words


class Settings(RuleSettings):
    """``features``: what the bot cannot do, each with ``name``, ``words``, ``patterns``."""

    features: list[Feature] = []


def check(sentences: list[Sentence], history, settings: Settings) -> Hit | None:
    compiled = [(f, [re.compile(p) for p in f.patterns]) for f in settings.features]
    for sentence in sentences:
        for feature, patterns in compiled:
            found = _offer(sentence, feature) or _pattern(sentence, patterns)
            if found:
                return Hit(NAME, sentence.text, f"{feature.name}: {found}")
    return None


def _offer(sentence: Sentence, feature: Feature) -> str | None:
    compact = sentence.compact()
    words = [w for w in feature.words if "".join(w.split()) in compact]
    if not words or sentence.main_honorific or sentence.negated:
        return None
    frame = _offer_frame(sentence)
    return f"{frame} with {words[0]!r}" if frame else None


def _offer_frame(sentence: Sentence) -> str | None:
    if sentence.promise:
        return f"promise -{sentence.promise}"
    own = sentence.own
    for i, m in enumerate(own):
        helper = own[i - 1] if i else None
        if helper is None or not helper.tag.startswith(("VX", "VV")):
            continue
        if m.tag == "EF" and m.form.endswith("까요") and helper.form in BENEFACTIVE:
            return f"offer {helper.form} + -{plain(m.form)}"
        if m.tag == "EP" and m.form in ("었", "았") and helper.form in COMPLETIVE:
            return f"done deed {helper.form} + {m.form}"
    return None


def _pattern(sentence: Sentence, patterns: list[re.Pattern[str]]) -> str | None:
    for pattern in patterns:
        found = pattern.search(sentence.text)
        if found:
            return f"pattern {pattern.pattern!r} matched {found.group(0)!r}"
    return None
