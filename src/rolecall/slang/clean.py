"""Cleaning comment corpora for the K/DA slang index, like the paper.

Reading the files is ``rolecall.textfiles`` (``read_corpus``); this module cleans rows.
``clean_comments`` / ``clean_records`` strip URLs and leading reply markers, collapse
whitespace (after NFC), and drop empty, too short, too long and duplicate comments,
counting each reason. Lines without Hangul are kept (slang is often romanised or mixed)
but counted, so the report shows how Korean the corpus really is.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from rolecall.errors import ConfigError
from rolecall.korean import HANGUL_RE

DROP_REASONS = ("empty", "too_short", "too_long", "duplicate")

# http(s)/www links, and bare domains followed by a path (naver.me/5h07ulzU, youtu.be/x):
# a bare "word.com" without a path is left alone, it may be the comment's topic.
# subtle: a bare domain starts only where a run of [a-z0-9.-] starts (or after ".."), never
# inside one: trying every start inside the run made a long line of "1.2.3..." or "a-b-c..."
# take minutes (quadratic); the possessive ++ keep each start linear.
URL_RE = re.compile(
    r"(?:https?://|www\.)\S+"
    r"|(?<![a-z0-9-])(?<![a-z0-9-]\.)(?:[a-z0-9-]++\.)++"
    r"(?:com|net|org|kr|me|be|ly|io|tv|at|gl)/\S*",
    re.IGNORECASE,
)
# One leading reply marker: "@user", ">>"/"> ", "RE:", or the community "ㄴ" reply arrow.
# subtle: "ㄴ" is a marker only before a space, the end or a whole syllable ("ㄴ와 ...");
# "ㄴㄴ" (no-no), "ㄴㅁㅎ" (initials) and "ㄴㅏ경원" (jamo-split name) are words, kept.
# All leading markers at once ("RE: @kim ㄴ ..."): one pass, not one per marker, which was
# quadratic on a line of thousands of "@a".
REPLY_RE = re.compile(r"^(?:(?:@\S+|>>+|>(?=\s)|re\s*:|ㄴ(?=\s|$|[가-힣]))\s*)+", re.IGNORECASE)
ZERO_WIDTH_RE = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")


def _check_limits(min_chars: int, max_chars: int | None) -> None:
    if min_chars < 0 or (max_chars is not None and max_chars < max(min_chars, 1)):
        raise ConfigError(
            f"bad comment length limits min_chars={min_chars}, max_chars={max_chars}",
            fix="use 0 <= min_chars <= max_chars (max_chars at least 1)",
        )


def clean_text(text: str) -> tuple[str, bool, bool]:
    """One comment cleaned: ``(text, had_url, had_reply_marker)``; see the module docstring."""
    text = ZERO_WIDTH_RE.sub("", unicodedata.normalize("NFC", text))
    text, urls = URL_RE.subn(" ", text)
    text = " ".join(text.split())
    text, markers = REPLY_RE.subn("", text, count=1)
    return text, urls > 0, markers > 0


def clean_records(
    records: Iterable[tuple[str, str]], min_chars: int = 5, max_chars: int | None = 300
) -> tuple[list[tuple[str, str]], dict]:
    """Clean ``(id, text)`` rows; keep the first of duplicates, so ids stay the earliest.

    Lengths are in characters after cleaning. The report counts every input row exactly
    once: ``input == kept + sum(dropped.values())``; ``changed`` and
    ``kept_without_hangul`` count rows, not drops.
    """
    _check_limits(min_chars, max_chars)
    dropped = dict.fromkeys(DROP_REASONS, 0)
    changed = {"url_removed": 0, "reply_marker_removed": 0}
    seen: set[str] = set()
    kept: list[tuple[str, str]] = []
    total = no_hangul = 0
    for source_id, raw in records:
        total += 1
        text, had_url, had_marker = clean_text(raw)
        changed["url_removed"] += had_url
        changed["reply_marker_removed"] += had_marker
        if not text:
            reason = "empty"
        elif len(text) < min_chars:
            reason = "too_short"
        elif max_chars is not None and len(text) > max_chars:
            reason = "too_long"
        elif text in seen:
            reason = "duplicate"
        else:
            seen.add(text)
            kept.append((source_id, text))
            no_hangul += HANGUL_RE.search(text) is None
            continue
        dropped[reason] += 1
    report = {
        "input": total,
        "kept": len(kept),
        "dropped": dropped,
        "changed": changed,
        "kept_without_hangul": no_hangul,
        "min_chars": min_chars,
        "max_chars": max_chars,
    }
    return kept, report


def clean_comments(
    lines: Iterable[str], min_chars: int = 5, max_chars: int | None = 300
) -> tuple[list[str], dict]:
    """``clean_records`` for bare strings: the kept texts and the report."""
    kept, report = clean_records(
        ((str(i), line) for i, line in enumerate(lines)), min_chars, max_chars
    )
    return [text for _, text in kept], report
