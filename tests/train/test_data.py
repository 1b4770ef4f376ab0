"""Training data: context text, reading example files, candidates, splits."""

from __future__ import annotations

import pytest

from rolecall.errors import InputFileError
from rolecall.jsonl import write_jsonl
from rolecall.records import Example, Turn
from rolecall.train.data import (
    LAST,
    context_text,
    read_examples,
    selection_pairs,
    split_by,
    unique_candidates,
)


def turns(n):
    return [Turn(role="user" if i % 2 == 0 else "system", text=f"말 {i}") for i in range(n)]


def test_context_keeps_the_last_turns_and_marks_the_last_utterance():
    assert context_text(turns(3)) == f"user: 말 0\nsystem: 말 1\n{LAST}user: 말 2"
    assert context_text(turns(12)).splitlines()[0] == "user: 말 2"
    assert len(context_text(turns(12), max_turns=None).splitlines()) == 12
    assert context_text([]) == ""


def test_read_examples_refuses_empty_files_and_missing_negatives(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputFileError, match="holds no examples"):
        read_examples(empty)
    positives = tmp_path / "pos.jsonl"
    write_jsonl(positives, [Example(history=turns(1), response="네", label="positive")])
    assert len(read_examples(positives)) == 1
    with pytest.raises(InputFileError, match="no negative"):
        read_examples(positives, need_negatives=True)


def test_selection_pairs_and_unique_candidates():
    examples = [
        Example(history=turns(1), response=" 네 ", label="positive"),
        Example(history=turns(1), response="욕", label="negative", category="x"),
        Example(history=turns(3), response="네", label="positive"),
    ]
    pairs = selection_pairs(examples)
    assert [r for _, r in pairs] == ["네", "네"]
    assert unique_candidates(["네", " 네", "아니요", ""]) == ["네", "아니요"]


def test_split_by_key_is_stable_and_keeps_keys_together():
    items = [(f"q{i % 50}", i) for i in range(500)]
    train, test = split_by(items, key=lambda item: item[0], held_out=0.2)
    assert {k for k, _ in train}.isdisjoint({k for k, _ in test})
    assert 0.05 < len(test) / len(items) < 0.4
    assert split_by(items, key=lambda item: item[0], held_out=0.2) == (train, test)
    with pytest.raises(ValueError):
        split_by(items, key=str, held_out=1.5)
