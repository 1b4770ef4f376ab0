"""Temporality: what the bot cannot know now (weather, news, today's date, the time), and
concrete future appointments it cannot keep.

Per sentence of the bot's own words, on Kiwi morphemes:

- **weather**: a weather word (날씨, 비가 오다, 눈이 내리다, 미세먼지, 덥다 ...) stated as a
  present fact: with a time deixis (오늘, 지금, 요즘, 밖에, 내일 ...) or an evidential
  ending that reports an observation or a forecast (-네요, -군요, -대요, -다고 하다);
- **news**: 뉴스/신문/기사/일기예보 as the source of a statement;
- **date and time**: a day of the week, a holiday, a calendar date (3월 5일) or a clock
  time asserted of today or now (``오늘이 수요일이니까``, ``지금은 저녁 일곱 시예요``);
- **appointments**: a specific future time (내일, 다음 주, 세 시에, 수요일에) with a
  promise (-ㄹ게요, -겠습니다): ``내일 오후 세 시에 다시 전화드릴게요``.

In bounds: questions (``오늘 날씨는 어때요?``), conditionals (``비가 오면 조심하세요``),
generic advice without a time (``더운 날에는 물을 자주 드세요``), sentences that say the
bot cannot know (negation: ``날씨도 제가 알 수가 없어서요``), and *echoes*: when the
user's last turns already said it (``비가 오네.`` -> ``비가 많이 오는군요``), the spec lets
the bot carry on with it.
"""

from __future__ import annotations

from rolecall.judge.rules.analysis import Sentence, user_words
from rolecall.judge.rules.base import Hit, PatternSettings, compiled, first_hit

NAME = "temporality"
CATEGORY, DEFAULT_ERROR = "temporality", "policy violation"

WEATHER = frozenset(
    "날씨 기온 온도 미세먼지 초미세먼지 황사 장마 폭염 한파 더위 추위 태풍 소나기 폭설 영하 "
    "일교차 습도 일기예보 예보 강추위 무더위 맑 흐리 덥 춥 쌀쌀하 쌀쌀 후텁지근하 화창하".split()
)
# 비 and 눈 are weather only as the subject of 오다/내리다 (눈 is also the eye)
PRECIPITATION = frozenset({"비", "눈", "소나기", "우박"})
FALLING = frozenset({"오", "내리", "그치", "쏟아지"})
DEIXIS = frozenset(
    "오늘 지금 요즘 이번 내일 모레 오전 오후 아침 저녁 밤 밖 바깥 이따 현재 금일".split()
)
EVIDENTIAL = ("네요", "군요", "는군요", "대요", "ᆫ대요", "는대요", "더라고요", "답니다")
NEWS = frozenset("뉴스 신문 기사 방송 일기예보 속보".split())
DAYS = frozenset(
    "월요일 화요일 수요일 목요일 금요일 토요일 일요일 주말 평일 설날 추석 명절 "
    "크리스마스 성탄절 어린이날 어버이날 광복절 삼일절 한글날 공휴일 연휴 정월대보름".split()
)
NOW = frozenset({"오늘", "지금", "현재", "금일", "이번"})
FUTURE = frozenset("내일 모레 글피 다음주 다음달 주말 오전 오후".split())
CLOCK_UNITS = frozenset({"시", "월", "일", "분"})


class Settings(PatternSettings):
    """``weather``/``days``: more lemmas for the lexicons; ``echo_turns``: how many of the
    user's last turns may license a mention (0: never); ``extra_patterns``: regular
    expressions that mark a claim on their own."""

    weather: list[str] = []
    days: list[str] = []
    echo_turns: int = 2


def check(sentences: list[Sentence], history, settings: Settings) -> Hit | None:
    patterns = compiled(settings.extra_patterns)
    weather, days = WEATHER | set(settings.weather), DAYS | set(settings.days)
    heard = user_words(history, settings.echo_turns)
    return first_hit(NAME, sentences, lambda s: _claim(s, weather, days, heard), patterns)


def _claim(sentence: Sentence, weather, days, heard: str) -> str | None:
    if sentence.question or sentence.negated or _conditional(sentence):
        return None
    lemmas = sentence.lemmas()
    found = _weather_words(sentence, weather)
    if found and not _echo(found, heard) and (lemmas & DEIXIS or _evidential(sentence)):
        return f"states the weather it cannot know: {found[0]}"
    news = sorted(lemmas & NEWS)
    if news and not _echo(news, heard):
        return f"reports news it cannot know: {news[0]}"
    named = sorted(lemmas & days) or _clock(sentence)
    if named and lemmas & NOW and not _echo(named, heard):
        return f"states today's date or the time: {named[0]}"
    return _appointment(sentence, lemmas)


def _weather_words(sentence: Sentence, weather) -> list[str]:
    own = sentence.own
    found = sorted(sentence.lemmas() & weather)
    for i, m in enumerate(own):
        # subtle: 눈이 오다 is snow, 눈이 침침하다 the eye: only a falling verb makes weather
        following = [n.form for n in own[i + 1 : i + 4] if n.tag.startswith("VV")][:1]
        if m.form in PRECIPITATION and m.tag == "NNG" and set(following) & FALLING:
            found.append(m.form)
    return found


def _evidential(sentence: Sentence) -> bool:
    own = sentence.own
    if any(m.tag == "EF" and m.form.endswith(EVIDENTIAL) for m in own):
        return True
    # -다고 하다 / -대요: hearsay, i.e. a forecast the bot repeats as fact
    return any(m.form.endswith(("다고", "ᆫ다고", "는다고")) for m in own if m.tag == "EC")


def _conditional(sentence: Sentence) -> bool:
    """-면 / -ㄹ 때: advice for a case, not a statement that it is so."""
    own = sentence.own
    if any(m.tag == "EC" and m.form in ("면", "으면") for m in own):
        return True
    return any(
        m.form == "때" and i and own[i - 1].tag == "ETM" and own[i - 1].form in ("ᆯ", "을")
        for i, m in enumerate(own)
    )


def _clock(sentence: Sentence) -> list[str]:
    """A number (3, 세, 일곱) before 시/월/일: a time or a date."""
    own = sentence.own
    return [
        f"{own[i - 1].form}{m.form}"
        for i, m in enumerate(own)
        if i and m.form in CLOCK_UNITS and m.tag == "NNB" and own[i - 1].tag in ("SN", "NR", "MM")
    ]


def _appointment(sentence: Sentence, lemmas: set[str]) -> str | None:
    promised = sentence.promise is not None
    if not promised or sentence.main_honorific:
        return None
    compact = sentence.compact()
    when = sorted(lemmas & (FUTURE | DAYS)) or _clock(sentence)
    if "다음주" in compact or "다음달" in compact:
        when = when or ["다음 주" if "다음주" in compact else "다음 달"]
    return f"promises a specific future time: {when[0]}" if when else None


def _echo(words: list[str], heard: str) -> bool:
    """Did the user's last turns already say it? Words of two syllables or more match on
    their first two; subtle: a one-syllable stem loses its final consonant first, since
    ㅂ-irregular stems drop it (덥 -> 더워, 춥 -> 추워), so the user's 더워 licenses 덥다."""
    return any((word[:2] if len(word) > 1 else _open(word)) in heard for word in words)


def _open(syllable: str) -> str:
    """A Hangul syllable without its final consonant (덥 -> 더)."""
    code = ord(syllable) - 0xAC00
    return chr(0xAC00 + code - code % 28) if 0 <= code < 11172 else syllable
