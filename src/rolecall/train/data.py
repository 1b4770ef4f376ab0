"""Training data for the selection and safety models, from example files (JSONL ``Example``).

A context is the dialogue history as text, one turn a line (``user: ...`` /
``system: ...``), the last utterance marked with ``LAST`` so a model can tell it from the
rest whatever its tokenizer (a plain-text marker needs no new token embeddings, which a
frozen backbone could not learn). Selection models see the last ``max_turns`` turns (the
paper: 10); token limits are applied later, from the left, by the backbone.

- ``selection_pairs``: (context, response) of the positive examples;
- ``unique_candidates``: the unique positive system turns, the retriever's candidate pool;
- ``split_by``: a held-out split by a key (dialogue id, or the question), never by row, so
  no test context was seen in training.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from rolecall.errors import InputFileError
from rolecall.jsonl import read_jsonl
from rolecall.records import Example, Turn

LAST = "▶ "
MAX_TURNS = 10
T = TypeVar("T")


def context_text(history: Sequence[Turn], max_turns: int | None = MAX_TURNS) -> str:
    """``user: ...`` / ``system: ...`` lines, the last one marked; '' for no history."""
    turns = list(history)[-max_turns:] if max_turns else list(history)
    lines = [f"{turn.role}: {turn.text.strip()}" for turn in turns]
    if lines:
        lines[-1] = LAST + lines[-1]
    return "\n".join(lines)


def read_examples(path: str | Path, need_negatives: bool = False) -> list[Example]:
    """The examples of a JSONL file; an empty file, or one without negatives when a model
    needs them, is an ``InputFileError`` that says how to make one."""
    examples = list(read_jsonl(path, Example))
    if not examples:
        raise InputFileError(
            path,
            "holds no examples",
            fix="make examples with 'rolecall dialogues run CONFIG' (or 'rolecall dialogues "
            "judge', which writes examples.jsonl), or export them: 'rolecall web export'",
        )
    if need_negatives and not any(e.label == "negative" for e in examples):
        raise InputFileError(
            path,
            f"has {len(examples)} examples but no negative one: the "
            "out-of-bounds classifier needs both labels",
            fix="judge generated dialogues first ('rolecall dialogues judge'), "
            "or add negatives collected with Fix in the web app",
        )
    if not any(e.label == "positive" for e in examples):
        raise InputFileError(path, "has no positive example", fix="add in-bounds examples")
    return examples


def selection_pairs(
    examples: Iterable[Example], max_turns: int | None = MAX_TURNS
) -> list[tuple[str, str]]:
    return [
        (context_text(e.history, max_turns), e.response.strip())
        for e in examples
        if e.label == "positive"
    ]


def unique_candidates(responses: Iterable[str]) -> list[str]:
    """Unique responses, first seen first."""
    return list(dict.fromkeys(r.strip() for r in responses if r.strip()))


def split_by(
    items: Sequence[T], key: Callable[[T], str], held_out: float = 0.1, seed: int = 0
) -> tuple[list[T], list[T]]:
    """(train, test): every item whose key hashes into the held-out share goes to test.

    Hashing the key (not shuffling rows) keeps all items of one key on one side and gives
    the same split for the same data on every machine.
    """
    if not 0 < held_out < 1:
        raise ValueError("held_out is a share between 0 and 1")
    train, test = [], []
    for item in items:
        digest = hashlib.sha256(f"{seed}\x1f{key(item)}".encode()).digest()
        (test if int.from_bytes(digest[:8], "big") / 2**64 < held_out else train).append(item)
    return train, test
