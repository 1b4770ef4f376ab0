"""Near-copies and rule paraphrases of a Korean sentence: the rewrites a K/DA consistency
judge must refuse although they look like the neutral sentence (nothing offensive added).

- ``respaced``: one space taken out or put in (``3박 4일`` -> ``3박4일``);
- ``repunctuated``: the closing punctuation taken off, or one put on;
- ``reworded``: the same sentence in another speech level and without its intensifiers:
  the last sentence ending swapped (``-어요`` <-> ``-어``, ``-습니다`` <-> ``-다``, ...)
  and adverbs like ``정말``, ``너무`` dropped (Kiwi analyses the sentence and joins the
  morphemes back, so the spelling stays right: ``먹었어요`` -> ``먹었어``).

The consistency recipe (``kda_judges.consistency_data``) trains on surface edits of the
training sentences; its ``hard`` test set holds all three kinds on the held-out sentences,
so ``reworded`` is a kind the judge never saw in training.
"""

from __future__ import annotations

import random

# the last sentence ending's other speech level (Kiwi's EF forms)
OTHER_ENDING = {
    "다": "습니다",
    "습니다": "다",
    "ㅂ니다": "다",
    "어": "어요",
    "아": "아요",
    "어요": "어",
    "아요": "아",
    "네요": "네",
    "네": "네요",
    "지": "지요",
    "지요": "지",
    "죠": "지",
    "야": "이에요",
    "에요": "야",
    "군요": "군",
    "군": "군요",
}
INTENSIFIERS = frozenset({"정말", "진짜", "너무", "좀", "완전", "되게", "엄청", "매우", "아주"})
CLOSING = ".!?~"


def respaced(text: str, rng: random.Random) -> str | None:
    """``text`` with one space removed (more often) or added; None if it cannot change."""
    spaces = [i for i, c in enumerate(text) if c == " "]
    if spaces and rng.random() < 0.6:
        i = rng.choice(spaces)
        return text[:i] + text[i + 1 :]
    inner = [i for i in range(1, len(text)) if not text[i - 1].isspace() and text[i] != " "]
    if not inner:
        return None
    i = rng.choice(inner)
    return text[:i] + " " + text[i:]


def repunctuated(text: str, rng: random.Random) -> str | None:
    """``text`` without its closing punctuation mark, or with one added."""
    stripped = text.rstrip()
    if not stripped:
        return None
    if stripped[-1] in CLOSING:
        return stripped[:-1] or None
    return stripped + rng.choice([".", "!", "~", "..."])


def reworded(text: str) -> str | None:
    """``text`` in another speech level, its intensifier adverbs dropped (module
    docstring); None when Kiwi finds no ending it knows how to swap."""
    from rolecall.korean import kiwi

    tokens = kiwi().tokenize(text)
    endings = [i for i, t in enumerate(tokens) if t.tag == "EF" and t.form in OTHER_ENDING]
    if not endings:
        return None
    last = endings[-1]
    morphemes = [
        (OTHER_ENDING[t.form] if i == last else t.form, t.tag)
        for i, t in enumerate(tokens)
        if not (t.tag == "MAG" and t.form in INTENSIFIERS)
    ]
    out = kiwi().join(morphemes)
    return out if out and out != text else None


def surface_edit(text: str, rng: random.Random) -> str | None:
    """One surface edit (``respaced`` or ``repunctuated``, drawn with ``rng``)."""
    edit = respaced if rng.random() < 0.5 else repunctuated
    out = edit(text, rng)
    return out if out != text else None
