"""Kiwi morphemes of a bot turn, cut into sentences, with the few facts every rule asks.

A turn is analysed once (``analyse`` tokenizes a whole batch in one Kiwi call) and every
rule reads the same ``Sentence`` objects: their morphemes (``form``/``tag`` as Kiwi gives
them: ``먹/VV 었/EP 어요/EF``), whether a morpheme sits inside quotation marks, and helpers
for the questions the rules share (is the sentence a question, does it carry the subject
honorific 시, is it negated, does the bot speak of itself).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rolecall.korean import kiwi

# tags that never end or carry a sentence: commas, brackets and quotes, ellipsis, other
# symbols (~, ^^, ㅎㅎ), emoji and Kiwi's split-off codas (the ㅇ of 해용)
SYMBOL_TAGS = frozenset({"SP", "SSO", "SSC", "SE", "SO", "SW"})
QUOTE_OPEN = frozenset({'"', "“", "'", "‘", "「", "『", "《", "<"})
QUOTE_CLOSE = frozenset({'"', "”", "'", "’", "」", "』", "》", ">"})
# the subject honorific: the EP 시 and the lexical honorific verbs, whose subject is the
# person the bot talks to (or a third person), never the bot itself
HONORIFIC_EP = frozenset({"시", "으시"})
HONORIFIC_VERBS = frozenset({"드시", "주무시", "계시", "잡수시", "편찮", "돌아가시"})
NEGATORS = {
    ("안", "MAG"),
    ("못", "MAG"),
    ("않", "VX"),
    ("못하", "VX"),
    ("없", "VA"),
    ("아니", "VCN"),
    ("말", "VX"),
}
FIRST_PERSON = frozenset({"저", "나", "저희"})
# indirect quotation: -라고/-다고/-자고/-냐고 (하라고, 먹었다고, 가자고, 먹었냐고)
QUOTATIVE_EC = ("라고", "다고", "자고", "냐고")
PROMISSIVE = ("ᆯ게", "을게", "ᆯ께", "을께")  # -ㄹ게(요): the speaker promises


@dataclass(frozen=True)
class Morph:
    form: str
    tag: str
    start: int  # character offsets into the turn
    end: int
    quoted: bool  # inside quotation marks: someone else's words, not the bot's


@dataclass(frozen=True)
class Sentence:
    text: str
    morphs: tuple[Morph, ...]
    mark: str  # the closing punctuation (".", "?", "!", "" at the end of the turn)

    @property
    def own(self) -> list[Morph]:
        """The bot's own morphemes: no symbols, emoji, codas or quoted words."""
        return [m for m in self.morphs if not m.quoted and not _symbol(m.tag)]

    @property
    def question(self) -> bool:
        return "?" in self.mark or any(m.form.endswith("까요") for m in self.own if m.tag == "EF")

    @property
    def honorific(self) -> bool:
        return any(_honorific(m) for m in self.own)

    def clauses(self) -> list[list[Morph]]:
        """The own morphemes cut after each clause boundary: an ETM, or an EC that does not
        join an auxiliary verb (as in 해 드리다). The last is what follows the last
        boundary: the main clause, empty when the sentence ends on a boundary."""
        own = self.own
        clauses, current = [], []
        for i, m in enumerate(own):
            current.append(m)
            joins_auxiliary = i + 1 < len(own) and own[i + 1].tag.startswith("VX")
            if m.tag == "ETM" or (m.tag == "EC" and not joins_auxiliary):
                clauses.append(current)
                current = []
        return [*clauses, current]

    @property
    def main_honorific(self) -> bool:
        """The honorific 시 on the main clause's predicate, the one the sentence ends on.

        Subtle: 좋아하시는 트로트 틀어 드릴게요 honours the user in a relative clause (시 +
        ETM) and in 원하시면 해 드릴게요 in a condition (시 + 면), while the bot is the one
        who plays and does; only 시 in the last clause is about the main predicate."""
        return any(_honorific(m) for m in self.clauses()[-1])

    @property
    def promise(self) -> str | None:
        """The promissive ending, if the sentence promises: -ㄹ게(요), or -겠습니다 after a
        verb (subtle: 좋겠습니다 after an adjective is a wish, not a promise)."""
        own = self.own
        for i, m in enumerate(own):
            if m.tag == "EF" and m.form.startswith(PROMISSIVE):
                return plain(m.form)
            following = own[i + 1] if i + 1 < len(own) else None
            volitional = i and own[i - 1].tag.startswith(("VV", "VX"))
            if m.form == "겠" and m.tag == "EP" and volitional and following is not None:
                if following.tag == "EF" and following.form.endswith("니다"):
                    return "겠" + plain(following.form)
        return None

    @property
    def negated(self) -> bool:
        return bool(self.negators())

    def negators(self) -> set[int]:
        """The indices in ``own`` of the negating morphemes (안, 못, 않, 없, 아니, 말)."""
        return {i for i, m in enumerate(self.own) if (m.form, m.tag) in NEGATORS}

    @property
    def first_person(self) -> bool:
        """The bot names itself (저, 나, 저희; 제 = 저 + 의 in Kiwi)."""
        return any(m.form in FIRST_PERSON and m.tag == "NP" for m in self.own)

    def forms(self, tags: tuple[str, ...] = ()) -> list[str]:
        return [m.form for m in self.own if not tags or m.tag.startswith(tags)]

    def lemmas(self, reported: bool = True) -> set[str]:
        """Content lemmas, with noun + 하 joined (피곤/NNG 하/XSA -> 피곤하) and two nouns
        joined (미세 먼지 -> 미세먼지) as well as the parts, so a lexicon can name either.
        ``reported=False`` leaves out the words of indirect quotes (운동하라고
        했잖아요: the bot said it, it did not exercise)."""
        own = self.own
        skip = set() if reported else self._reported()
        found = set()
        for i, m in enumerate(own):
            if i in skip:
                continue
            if m.tag.startswith(("NN", "VV", "VA", "VX", "XR", "MAG", "NP", "SL")):
                found.add(m.form)
            if i + 1 < len(own) and own[i + 1].tag in ("XSV", "XSA") and m.tag != "SL":
                found.add(m.form + own[i + 1].form)
            # subtle: Kiwi splits compounds (미세/NNG 먼지/NNG); the lexicons name them whole
            if i + 1 < len(own) and m.tag.startswith("NN") and own[i + 1].tag.startswith("NN"):
                found.add(m.form + own[i + 1].form)
        return found

    def _reported(self) -> set[int]:
        """Indices of the own morphemes whose clause ends in a quotative ending."""
        own = self.own
        marked, clause = set(), []
        for i, m in enumerate(own):
            clause.append(i)
            if m.tag in ("EC", "EF", "ETM"):
                if m.tag == "EC" and m.form.endswith(QUOTATIVE_EC):
                    marked.update(clause)
                clause = []
        return marked

    def surface(self) -> str:
        """The bot's own words as written, spaces removed, quoted words left out:
        ``쓸모가 없어지는 거죠`` -> ``쓸모가없어지는거죠``. Subtle: Kiwi's morphemes of a
        contracted syllable share its span (해 = 하 + 어), so each character is taken once."""
        base = self.morphs[0].start
        kept = sorted({at - base for m in self.own for at in range(m.start, m.end)})
        text = self.text
        return "".join(text[i] for i in kept if i < len(text) and not text[i].isspace())

    def compact(self) -> str:
        """The sentence without spaces: lexicon phrases match whatever the spacing."""
        return "".join(self.text.split())


def _symbol(tag: str) -> bool:
    return tag in SYMBOL_TAGS or tag == "SF" or tag.startswith(("W_", "Z_"))


def _honorific(m: Morph) -> bool:
    if m.tag == "EP" and m.form in HONORIFIC_EP:
        return True
    if m.tag == "EF" and m.form.startswith(("세요", "으세요", "십시", "으십")):
        return True  # subtle: Kiwi keeps 시+어요 fused as one EF 세요
    return m.tag.startswith("VV") and m.form in HONORIFIC_VERBS


def user_words(history, turns: int) -> str:
    """What the user said in their last ``turns`` turns of ``history``, spaces removed
    (a rule asks whether the bot only echoes it); nothing for ``turns`` <= 0."""
    if turns <= 0:
        return ""
    said = [t.text for t in history if t.role == "user"][-turns:]
    return re.sub(r"\s+", "", " ".join(said))


def plain(form: str) -> str:
    """Kiwi writes a bare final consonant as a coda jamo (ᆯ게, ᆫ데); show it as ㄹ게, ㄴ데."""
    codas = {"ᆫ": "ㄴ", "ᆯ": "ㄹ", "ᆸ": "ㅂ", "ᆷ": "ㅁ", "ᆼ": "ㅇ"}
    return "".join(codas.get(ch, ch) for ch in form)


def analyse(texts: Sequence[str]) -> list[list[Sentence]]:
    """Every text as its sentences, with one batched Kiwi call for all of them."""
    if not texts:
        return []
    tokenized = kiwi().tokenize(list(texts))
    return [split(text, tokens) for text, tokens in zip(texts, tokenized, strict=True)]


def split(text: str, tokens) -> list[Sentence]:
    """Cut at sentence punctuation (SF) outside quotes; a turn without final punctuation
    ends its last sentence anyway."""
    sentences: list[Sentence] = []
    current: list[Morph] = []
    depth = 0
    for token in tokens:
        form, tag = token.form, token.tag
        # subtle: a straight quote " opens and closes; Kiwi tags the pair SSO ... SSC, but
        # with typing slips it may tag both the same, so count by what is open
        if tag in ("SSO", "SSC") and (form in QUOTE_OPEN or form in QUOTE_CLOSE):
            closing = depth > 0 and (form in QUOTE_CLOSE) and (tag == "SSC" or form in "\"'")
            depth = depth - 1 if closing else depth + 1
        morph = Morph(form, tag, token.start, token.start + token.len, depth > 0)
        current.append(morph)
        if tag == "SF" and depth == 0:
            sentences.append(_sentence(text, current))
            current = []
    if any(not _symbol(m.tag) for m in current):
        sentences.append(_sentence(text, current))
    elif current and sentences:  # trailing emoji or ㅎㅎ belong to the sentence before
        last = sentences.pop()
        sentences.append(_sentence(text, list(last.morphs) + current))
    return sentences


def _sentence(text: str, morphs: list[Morph]) -> Sentence:
    marks = [m.form for m in morphs if m.tag == "SF" and not m.quoted]
    return Sentence(
        text=text[morphs[0].start : morphs[-1].end].strip(),
        morphs=tuple(morphs),
        mark=marks[-1] if marks else "",
    )
