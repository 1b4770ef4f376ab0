"""Retrieval tokens: Kiwi content morphemes, chosen for matching topic and slang, not grammar.

What the slang index (``slang.py``) is built from and searched with (``search_tokens``):

- only content morphemes are kept: nouns (NNG, NNP, NR), verb and adjective stems (VV,
  VA), adverbs (MAG), interjections (IC), roots (XR), prefixes and noun suffixes (XPN,
  XSN: slang lives in 개-, -충, -년), Latin/hanja/numbers (SL, SH, SN: "아18"), hashtags and
  emoji, and symbol runs made of Hangul jamo (SW "ㅅㅂ", "ㅋㅋ"). Particles, endings,
  copulas, auxiliaries, dependent nouns, pronouns, determiners and punctuation carry no
  topic and would only slow every query down.
- a token is ``form/T`` with T the first letter of the tag: the noun 나/N stays apart from
  the verb stem 나/V, but NNG-vs-NNP tagging noise on the same slang word still matches
  (the full ``form/TAG`` of ``eval.stats`` would split it).
- Latin is lowercased and runs of one character are cut to two (ㅋㅋㅋㅋ -> ㅋㅋ, ㅎㅎㅎ ->
  ㅎㅎ), and Kiwi's ``normalize_coda`` splits "했닼ㅋㅋ" into 했다 + ㅋㅋ.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rolecall.korean import kiwi
from rolecall.progress import progress_bar

TOKEN_RULES_VERSION = 1  # bump when search_tokens changes: old indexes must be rebuilt
KEPT_TAGS = frozenset(
    {
        "NNG",
        "NNP",
        "NR",
        "VV",
        "VA",
        "MAG",
        "IC",
        "XR",
        "XPN",
        "XSN",
        "SL",
        "SH",
        "SN",
        "W_HASHTAG",
        "W_EMOJI",
    }
)
JAMO_RE = re.compile("[\u3131-\u318e]")
REPEAT_RE = re.compile(r"(.)\1{2,}")
TOKENIZE_CHUNK = 2048  # texts per Kiwi call: big enough for its threads, small for the bar


def _token(form: str, tag: str) -> str | None:
    base = tag.split("-")[0]  # Kiwi marks irregular stems VV-I, VA-R, ...
    if base not in KEPT_TAGS and not (base == "SW" and JAMO_RE.search(form)):
        return None
    form = REPEAT_RE.sub(r"\1\1", form.lower())
    return f"{form}/{base[0]}"


def search_tokens(texts: Sequence[str], progress: bool = False) -> list[list[str]]:
    """Each text as retrieval tokens (see the module docstring); texts should be NFC."""
    analyser = kiwi()
    out: list[list[str]] = []
    with progress_bar(len(texts), "tokenizing comments", enabled=progress) as advance:
        for start in range(0, len(texts), TOKENIZE_CHUNK):
            chunk = list(texts[start : start + TOKENIZE_CHUNK])
            for tokens in analyser.tokenize(chunk, normalize_coda=True):
                out.append([t for t in (_token(m.form, m.tag) for m in tokens) if t])
            advance(len(chunk))
    return out


def tokenizer_info() -> dict:
    from kiwipiepy import __version__ as kiwi_version

    return {
        "name": "kiwi-content-morphemes",
        "rules_version": TOKEN_RULES_VERSION,
        "kiwipiepy": kiwi_version,
        "normalize_coda": True,
        "kept_tags": sorted(KEPT_TAGS) + ["SW (jamo only)"],
        "token": "form/T",
    }
