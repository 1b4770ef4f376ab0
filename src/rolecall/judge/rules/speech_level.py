"""Speech level: the bot keeps 해요체 or 하십시오체; a 반말 sentence ending is out of bounds.

Korean marks the speech level on the sentence-final ending, which Kiwi tags ``EF``:
``먹었어요/EF`` and ``알겠습니다`` are polite, ``먹었어/EF``, ``가자``, ``그랬냐``, ``좋다``,
``그렇구나`` are not. The rule reads every sentence of the turn:

1. every ``EF`` of the bot's own words (quoted speech and quotative ``-라고``/``하고``
   clauses are someone else's) must be polite: ending in 요/죠 (해요체) or 니다/니까/
   시오/시다 (하십시오체), or be followed by the particle 요 (``좋습니다요``, ``-거든요``);
2. a sentence may also end without an ``EF``: Kiwi tags the casual finals ``먹었니?``,
   ``드셨나?`` as connective endings (``EC``); such an ``EC`` before the sentence mark is
   반말 unless 요 follows (``켜 두시고요``);
3. a sentence made of a casual interjection (``응.``, ``그래?``, ``그치?``) is 반말;
4. the vocative particle 아/야 (``순자야``) addresses someone as a junior.

A sentence that ends in a noun (``어르신.``, ``저도요.``) has no speech level and passes.
"""

from __future__ import annotations

import re

from rolecall.judge.rules.analysis import Morph, Sentence, plain
from rolecall.judge.rules.base import Hit, PatternSettings, compiled, first_hit

NAME = "speech_level"
CATEGORY, DEFAULT_ERROR = "style", "style"

# 해요체: -요 and its contraction -죠; 하십시오체: -ㅂ니다/-ㅂ니까/-ㅂ시오/-ㅂ시다 (Kiwi writes
# the ㅂ as the coda jamo ᆸ); -슴다 is a casual spelling of -습니다.
# subtle: the ㅂ/습 matters: -니까 alone is 반말 (에어컨 빵빵하니까.), -ㅂ니까 is 하십시오체
POLITE_ENDING = re.compile(r"(요|죠|[ᆸ습읍]니다|[ᆸ습읍]니까|[ᆸ으]?시오|[ᆸ읍]시다|소서|슴다)$")
# connective endings that end a sentence only in 반말: 먹었니? 드셨나? 어디 가는데? 그렇게
# 말했잖아. 밥은 먹고? (Kiwi gives these EC where it cannot see the sentence end)
CASUAL_FINAL_EC = frozenset(
    {
        "어",
        "아",
        "여",
        "지",
        "니",
        "나",
        "고",
        "는데",
        "ᆫ데",
        "은데",
        "거든",
        "게",
        "냐",
        "냐고",
        "라고",
        "다고",
        "자고",
        "잖아",
        "다니까",
        "라니까",
        "면서",
        "구",
        "야",
    }
)
# interjections that are 반말 wherever they stand alone (응, 그래?); 어, 아니 and 야 are
# also hesitations or exclamations, so only a sentence made of them alone counts
CASUAL_INTERJECTIONS = frozenset({"응", "웅", "엉", "그래", "그치", "아니야", "맞아"})
CASUAL_ALONE = CASUAL_INTERJECTIONS | {"어", "아니", "야"}
# discourse words after the ending (잘됐지 뭐., 그렇지 참.) do not end the sentence
TRAILING_IC = frozenset({"뭐", "참", "그래", "진짜", "정말"})
QUOTATIVE = frozenset({"JKQ"})


class Settings(PatternSettings):
    """``allow_endings``: sentence-final endings (Kiwi forms, e.g. ``네``) this bot may
    use although they are not 해요체/하십시오체; ``extra_patterns``: regular expressions
    that mark a sentence as 반말 on their own."""

    allow_endings: list[str] = []


def check(sentences: list[Sentence], history, settings: Settings) -> Hit | None:
    patterns = compiled(settings.extra_patterns)
    allowed = set(settings.allow_endings)
    return first_hit(NAME, sentences, lambda s: _casual_ending(s, allowed), patterns)


def _casual_ending(sentence: Sentence, allowed: set[str]) -> str | None:
    """What makes the sentence 반말 (the ending and how it was found), or None."""
    own = sentence.own
    morphs = list(sentence.morphs)
    for i, m in enumerate(morphs):
        if m.quoted:
            continue
        if m.tag == "EF" and not _polite(m, morphs, i) and m.form not in allowed:
            if not _quotative(morphs, i):
                return f"반말 ending -{plain(m.form)} (EF)"
        if m.tag == "JKV" and m.form in ("아", "야"):
            return f"vocative -{m.form} (JKV)"
        if m.tag == "IC" and m.form in CASUAL_INTERJECTIONS and _standalone(morphs, i):
            return f"반말 interjection {m.form} (IC)"
    if own and all(m.tag == "IC" for m in own):
        return f"반말 interjection {own[-1].form} (IC)" if own[-1].form in CASUAL_ALONE else None
    while own and own[-1].tag == "IC" and own[-1].form in TRAILING_IC:
        own = own[:-1]
    if not own:
        return None
    last = own[-1]
    if last.tag == "EC" and last.form in CASUAL_FINAL_EC and last.form not in allowed:
        return f"반말 ending -{plain(last.form)} (EC at the sentence end)"
    # subtle: Kiwi reads a final -는데 after an adjective as ETM 는 + bound noun 데
    # (얼마나 맛있는데.); a bound noun 데 cannot end a sentence, the ending -는데 can
    if last.form == "데" and last.tag == "NNB" and len(own) > 1 and own[-2].tag == "ETM":
        return "반말 ending -는데 (ETM + 데 at the sentence end)"
    return None


def _standalone(morphs: list[Morph], i: int) -> bool:
    """An interjection followed by a comma or the sentence end stands on its own."""
    following = morphs[i + 1] if i + 1 < len(morphs) else None
    return following is None or following.tag in ("SP", "SF")


def _polite(m: Morph, morphs: list[Morph], i: int) -> bool:
    if POLITE_ENDING.search(m.form):
        return True
    # subtle: -거든요, -더라고요, -는데요: Kiwi may give the ending and the particle 요
    # apart (더라고/EF 요/JX); the 요 makes it 해요체
    following = _next_own(morphs, i)
    return following is not None and following.form == "요" and following.tag == "JX"


def _quotative(morphs: list[Morph], i: int) -> bool:
    """The EF ends a quoted clause: ``'괜찮아'라고``, ``"밥 먹었니?" 하고 물으셨어요``."""
    following = _next_own(morphs, i, skip_quotes=True)
    if following is None:
        return False
    if following.tag in QUOTATIVE:
        return True
    # subtle: "...?" 하고 물으셨어요: the quoted clause closes with a quote mark, then 하고
    closed = any(m.tag == "SSC" for m in morphs[i + 1 : morphs.index(following)])
    return closed and following.form == "하" and following.tag.startswith("VV")


def _next_own(morphs: list[Morph], i: int, skip_quotes: bool = False) -> Morph | None:
    for m in morphs[i + 1 :]:
        if m.tag in ("SF", "SP", "SE", "SO", "SW") or m.tag.startswith(("W_", "Z_")):
            continue
        if m.tag in ("SSO", "SSC") and skip_quotes:
            continue
        return m
    return None
