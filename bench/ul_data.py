"""The examples and the repeat measure of bench/ul_vs_mle.py: the care-call example
dialogues' in-bounds turns and the hand-written out-of-bounds turns, split by dialogue,
and the n-grams of a context's negatives that a reply repeats. A helper of the bench, not
a benchmark of its own."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rolecall.examples import examples_from_dialogues, marked_in_bounds
from rolecall.jsonl import read_jsonl
from rolecall.judge.written_out_of_bounds import (
    examples_from_out_of_bounds,
    read_out_of_bounds,
)
from rolecall.records import Dialogue, Example, Turn
from rolecall.spec import load_role_spec

CARECALL = Path(__file__).resolve().parents[1] / "examples" / "carecall"
NGRAM = 4


# ---- data ------------------------------------------------------------------------------


def carecall_examples(directory: Path = CARECALL) -> tuple[list[Example], list[Example]]:
    """(positives, negatives) of the shipped example: in-bounds system turns after the
    opening one, and the hand-written out-of-bounds turns in their contexts."""
    spec = load_role_spec(directory / "spec.yaml")
    dialogues = list(read_jsonl(directory / "dialogues.jsonl", Dialogue))
    positives = [
        e for e in examples_from_dialogues(marked_in_bounds(d) for d in dialogues) if e.history
    ]
    written = read_out_of_bounds(directory / "out_of_bounds.jsonl", dialogues, spec)
    return positives, examples_from_out_of_bounds(written, spec)


def split_by_dialogue(
    examples: Sequence[Example], test_share: float, seed: int
) -> tuple[list[Example], list[Example]]:
    """(train, test): a seeded shuffle of the sorted dialogue ids, the first
    ``round(test_share * n)`` of them (at least one) held out with all their examples."""
    ids = sorted({e.dialogue_id or "" for e in examples})
    random.Random(seed).shuffle(ids)
    held = set(ids[: max(1, round(test_share * len(ids)))])
    train = [e for e in examples if (e.dialogue_id or "") not in held]
    test = [e for e in examples if (e.dialogue_id or "") in held]
    return train, test


@dataclass
class Context:
    """A held-out context with negatives: its history, the negatives written for it and
    the in-bounds turn(s) said there."""

    dialogue_id: str
    turn: int
    history: list[Turn]
    negatives: list[str] = field(default_factory=list)
    in_bounds: list[str] = field(default_factory=list)


def contexts_with_negatives(examples: Sequence[Example]) -> list[Context]:
    """One ``Context`` per (dialogue, turn index) that has a negative, in first-seen order."""
    by_key: dict[tuple[str, int], Context] = {}
    for e in examples:
        key = (e.dialogue_id or "", len(e.history))
        if e.label == "negative" and key not in by_key:
            by_key[key] = Context(key[0], key[1], list(e.history))
    for e in examples:
        context = by_key.get((e.dialogue_id or "", len(e.history)))
        if context is not None:
            (context.negatives if e.label == "negative" else context.in_bounds).append(e.response)
    return list(by_key.values())


# ---- repeated n-grams --------------------------------------------------------------------


def char_ngrams(text: str, n: int = NGRAM) -> set[str]:
    """Character n-grams of ``text`` with spaces, punctuation and symbols removed."""
    letters = re.sub(r"[\W_]+", "", text)
    return {letters[i : i + n] for i in range(len(letters) - n + 1)}


def morphemes(text: str) -> set[str]:
    """Kiwi content morphemes (``form/T``: nouns, verb and adjective stems, adverbs, ...;
    no particles or endings), as the retrieval index tokenizes."""
    from rolecall.retrieval.tokens import search_tokens

    return set(search_tokens([text])[0])


GRAMS = {"morph": morphemes, "char4": char_ngrams}


def negative_ngrams(context: Context, grams=char_ngrams) -> set[str]:
    """The grams of the context's negatives that neither its in-bounds turn nor its
    history holds: what only saying the out-of-bounds thing would repeat."""
    said = set().union(*(grams(t) for t in context.negatives))
    fine = set().union(
        *(grams(t) for t in context.in_bounds), *(grams(t.text) for t in context.history)
    )
    return said - fine


def repeat_share(replies: Sequence[str], contexts: Sequence[Context], grams=char_ngrams) -> float:
    """The share of replies holding any of their context's ``negative_ngrams``."""
    if not contexts:
        return 0.0
    hits = sum(bool(grams(r) & negative_ngrams(c, grams)) for r, c in zip(replies, contexts))
    return hits / len(contexts)
