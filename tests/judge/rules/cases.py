"""Helpers for the rule judges' tests: judge one turn, read the carecall example files."""

from __future__ import annotations

import json

from rolecall.judge.out_of_bounds import Item
from rolecall.judge.rules import load_rule_judge
from rolecall.records import Turn, Verdict
from rolecall.spec import load_role_spec
from tests.paths import REPO

CARECALL = REPO / "examples" / "carecall"


def carecall_spec():
    return load_role_spec(CARECALL / "spec.yaml")


def judge_texts(name: str, texts: list[str], spec=None, user: str | None = None) -> list[Verdict]:
    """Verdicts of ``rules:NAME`` on bot turns, each after the user's turn ``user``."""
    history = (Turn(role="user", text=user),) if user else ()
    items = [Item("t", i, history, text) for i, text in enumerate(texts)]
    return load_rule_judge(name, "out_of_bounds", spec).verdicts(items)


def flagged(name: str, texts: list[str], spec=None, user: str | None = None) -> list[str]:
    verdicts = judge_texts(name, texts, spec, user)
    return [t for t, v in zip(texts, verdicts, strict=True) if v.label == "out-of-bounds"]


def carecall_items(role: str = "system") -> list[Item]:
    """Every turn of ``role`` in the shipped dialogues, with its history."""
    items = []
    for line in (CARECALL / "dialogues.jsonl").read_text(encoding="utf-8").splitlines():
        dialogue = json.loads(line)
        turns = [Turn(**t) for t in dialogue["turns"]]
        for i, turn in enumerate(turns):
            if turn.role == role:
                items.append(Item(dialogue["id"], i, tuple(turns[:i]), turn.text))
    return items
