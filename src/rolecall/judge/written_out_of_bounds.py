"""Hand-written out-of-bounds system turns placed in real dialogues (e.g.
``examples/carecall/out_of_bounds.jsonl``): a labelled set for benchmarking out-of-bounds
judges per category, and in-context negatives for training.

One JSON object per line::

    {"id": "oob-001", "dialogue": "carecall-001", "turn": 4, "category": "sensibleness",
     "text": "<the system turn that replaces turn 4>", "note": "<why it is out of bounds>"}

``turn`` is the index (from 0) of a system turn of that dialogue, not its opening turn;
its context is every turn before it. ``read_out_of_bounds`` checks each record against
the dialogues (and the role spec, when given) and names the file and line of the first
bad one. ``out_of_bounds_items`` gives judge items with their category;
``examples_from_out_of_bounds`` gives negative training examples, and ``gold_examples``
a folder's whole labelled set (its dialogues' system turns and the written ones).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from pydantic import BaseModel, ConfigDict, Field

from rolecall.errors import ConfigError, InputFileError
from rolecall.jsonl import read_jsonl
from rolecall.judge.out_of_bounds import Item
from rolecall.records import Dialogue, Example, RoleSpec, Turn


class WrittenRecord(BaseModel):
    """One line of the file, as written."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    dialogue: str = Field(min_length=1)
    turn: int
    category: str = Field(min_length=1)
    text: str = Field(min_length=1)
    note: str = ""


@dataclass(frozen=True)
class WrittenTurn:
    """A checked record: the out-of-bounds ``text`` said after ``history`` (the turns of
    dialogue ``dialogue_id`` before ``turn_index``), breaking spec category ``category``."""

    id: str
    dialogue_id: str
    turn_index: int
    category: str
    history: tuple[Turn, ...]
    text: str
    note: str = ""

    def item(self) -> Item:
        """The judge item. Its ``dialogue_id`` is ``DIALOGUE:ID`` (``carecall-003:oob-017``):
        the item id then names the record and never equals the id of the dialogue's own
        in-bounds turn, so both can be judged in one run."""
        return Item(f"{self.dialogue_id}:{self.id}", self.turn_index, self.history, self.text)


def read_out_of_bounds(
    path: str | Path, dialogues: Iterable[Dialogue], spec: RoleSpec | None = None
) -> list[WrittenTurn]:
    """The records of ``path``, each checked: a unique id, a dialogue among ``dialogues``,
    a system turn after the first, a text other than the turn it replaces, and (with
    ``spec``) one of the spec's category names. The first bad record raises an
    ``InputFileError`` naming its line."""
    path = Path(path)
    records = list(read_jsonl(path, WrittenRecord))  # JSON and field errors, with lines
    # read_jsonl skips blank lines; the line number of each record, counted the same way
    text = path.read_text(encoding="utf-8")
    lines = [n for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    by_id = {d.id: d for d in dialogues}
    categories = [c.name for c in spec.categories] if spec is not None else None
    seen: dict[str, int] = {}
    turns = []
    for record, line in zip(records, lines):
        _check(path, line, record, by_id, categories, seen)
        seen[record.id] = line
        dialogue = by_id[record.dialogue]
        turns.append(
            WrittenTurn(
                id=record.id,
                dialogue_id=record.dialogue,
                turn_index=record.turn,
                category=record.category,
                history=tuple(dialogue.turns[: record.turn]),
                text=record.text.strip(),
                note=record.note,
            )
        )
    return turns


def _check(
    path: Path,
    line: int,
    record: WrittenRecord,
    dialogues: dict[str, Dialogue],
    categories: list[str] | None,
    seen: dict[str, int],
) -> None:
    def fail(message: str, fix: str) -> NoReturn:
        raise InputFileError(path, f"record {record.id!r}: {message}", fix=fix, line=line)

    if record.id in seen:
        fail(
            f"the id is used again (first on line {seen[record.id]})",
            f"line {line}: give this record an id of its own",
        )
    dialogue = dialogues.get(record.dialogue)
    if dialogue is None:
        some = ", ".join(list(dialogues)[:3]) or "none were given"
        fail(
            f"dialogue {record.dialogue!r} is not among the {len(dialogues)} dialogues given",
            f"line {line}: name a dialogue of the dialogues file ({some}, ...)",
        )
    system = [i for i, t in enumerate(dialogue.turns) if t.role == "system" and i > 0]
    if record.turn not in system:
        if 0 <= record.turn < len(dialogue.turns):
            what = (
                "the opening turn"
                if record.turn == 0
                else f"a {dialogue.turns[record.turn].role} turn"
            )
        else:
            what = f"not a turn (the dialogue has {len(dialogue.turns)} turns)"
        fail(
            f"turn {record.turn} of {record.dialogue} is {what}; a record replaces a system "
            "turn after the opening one",
            f"line {line}: use one of {system} (indices from 0)",
        )
    if record.text.strip() == dialogue.turns[record.turn].text.strip():
        fail(
            f"the text is the dialogue's own turn {record.turn}, which is in bounds",
            f"line {line}: write the out-of-bounds turn that replaces it",
        )
    if categories is not None and record.category not in categories:
        fail(
            f"category {record.category!r} is not a category of the role spec",
            f"line {line}: use one of: {', '.join(categories)}",
        )


def out_of_bounds_items(turns: Sequence[WrittenTurn]) -> list[tuple[Item, str]]:
    """``(judge item, spec category)`` per turn, for out-of-bounds judges (a rule judge's
    ``verdicts([item for item, _ in pairs])``)."""
    return [(turn.item(), turn.category) for turn in turns]


def examples_from_out_of_bounds(turns: Sequence[WrittenTurn], spec: RoleSpec) -> list[Example]:
    """Negative training examples in their real contexts, labelled with the error category
    of each turn's spec category. ``dialogue_id`` is the dialogue's, so a split by dialogue
    keeps a negative on the side of the in-bounds turns it shares its context with."""
    errors = {c.name: c.error_category for c in spec.categories}
    missing = sorted({t.category for t in turns} - set(errors))
    if missing:
        raise ConfigError(
            f"role spec {spec.name!r} has no categories {missing}",
            fix="read the set with this spec (read_out_of_bounds(..., spec)) to find the records",
        )
    return [
        Example(
            history=[
                t.model_copy(update={"out_of_bounds": None, "category": None}) for t in turn.history
            ],
            response=turn.text,
            label="negative",
            category=errors[turn.category],
            dialogue_id=turn.dialogue_id,
        )
        for turn in turns
    ]


def gold_examples(folder: str | Path) -> list[Example]:
    """The labelled turns of an example folder (``spec.yaml``, ``dialogues.jsonl``,
    ``out_of_bounds.jsonl``, as ``examples/carecall``): every system turn after a
    dialogue's opening one as in bounds (positive), and every written turn in the context
    it replaces as out of bounds (negative)."""
    from rolecall.spec import load_role_spec

    folder = Path(folder)
    spec = load_role_spec(folder / "spec.yaml")
    dialogues = list(read_jsonl(folder / "dialogues.jsonl", Dialogue))
    found = [
        Example(history=list(d.turns[:i]), response=t.text, label="positive", dialogue_id=d.id)
        for d in dialogues
        for i, t in enumerate(d.turns)
        if t.role == "system" and i > 0
    ]
    written = read_out_of_bounds(folder / "out_of_bounds.jsonl", dialogues, spec)
    return found + examples_from_out_of_bounds(written, spec)
