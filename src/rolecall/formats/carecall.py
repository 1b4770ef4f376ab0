"""The CareCall corpus format (NAACL 2022 release) <-> rolecall ``Dialogue``s, losslessly.

The corpus is one JSON list of dialogues::

    [{"guid": "...", "data": [{"role": "system", "text": "...", "out-of-bounds": false},
                              {"role": "user", "text": "...", "out-of-bounds": false}, ...]}]

A human-labelled CareCall file is how people's judgements enter rolecall: its flags are
exactly what the first-out-of-bounds split needs (``carecall_to_examples``).

Reading accepts, detected from the content: a JSON list (the release), JSONL with one
dialogue object per line, and a file holding one dialogue object. Indices in error
messages are 0-based JSON positions (``dialogues[3]``, ``data[2]``), as in the file.

Mapping (``guid`` -> ``Dialogue.id``; each entry of ``data`` -> ``Turn``):

- ``out-of-bounds`` of a system turn -> ``Turn.out_of_bounds``; absent or ``null`` means not
  judged (``None``). User turns are never judged: their flag may be absent or ``false``
  and is read as ``None``; ``true`` on a user turn is an error. ``"category": null`` is
  the same as no category.
- Dialogue keys other than ``guid``/``data`` -> ``Dialogue.metadata``. Turn keys other than
  the four known ones -> ``metadata["turn_extras"][str(turn index)]``, so that nothing is
  dropped and writing puts every key back where it was (the index is a string so that the
  metadata survives a trip through JSON unchanged).

rolecall's extensions to the format, written only where needed and read back:

- ``"category"`` on a turn: the error category of an out-of-bounds turn (the corpus has no
  categories; without one, a negative example gets ``"unspecified"``).
- ``"out-of-bounds": null`` on a system turn that has not been judged yet.

Writing is the exact inverse: ``out-of-bounds`` on every turn (``false`` on user turns),
UTF-8 with Korean unescaped, indent 2, replaced atomically. So read -> write -> read gives
equal dialogues, and write(read(f)) is JSON-equal to f when f is in that canonical form.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rolecall.atomic import write_text_atomic
from rolecall.errors import ConfigError, InputFileError, RolecallError
from rolecall.examples import examples_from_dialogue
from rolecall.jsonl import parse_line, write_jsonl
from rolecall.records import Dialogue, Example, Turn

FLAG = "out-of-bounds"
TURN_KEYS = ("role", "text", FLAG, "category")
TURN_EXTRAS = "turn_extras"  # reserved Dialogue.metadata key, see the module docstring
FORMAT_FIX = (
    'a CareCall file is a JSON list of {"guid": ..., "data": [turns]} objects, '
    "or one such object per line (JSONL)"
)


# -- reading ---------------------------------------------------------------------------


def read_carecall(path: str | Path) -> list[Dialogue]:
    """Read a CareCall JSON (or JSONL) file; every problem names the dialogue and turn."""
    path = Path(path)
    dialogues: list[Dialogue] = []
    seen: dict[str, str] = {}
    for where, line, raw in _raw_dialogues(path):
        dialogue = dialogue_from_carecall(raw, path, where, line)
        if dialogue.id in seen:
            raise InputFileError(
                path,
                f'{where}: guid "{dialogue.id}" already used by {seen[dialogue.id]}',
                line=line,
                fix="give every dialogue its own guid",
            )
        seen[dialogue.id] = where if line is None else f"line {line}"
        dialogues.append(dialogue)
    return dialogues


def _read_text(path: Path) -> str:
    """The file's text: missing, a folder, not UTF-8 (with the iconv line), a BOM dropped:
    ``textfiles.read_text_file``'s checks."""
    from rolecall.textfiles import read_text_file

    return read_text_file(path)


def _raw_dialogues(path: Path) -> list[tuple[str, int | None, Any]]:
    """The file's dialogue objects as (where, JSONL line or None, raw value)."""
    text = _read_text(path)
    if not text.strip():
        raise InputFileError(path, "the file is empty", fix=FORMAT_FIX)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return _raw_jsonl(path, text, exc)
    if isinstance(data, dict):  # one dialogue object (possibly pretty-printed)
        return [("the dialogue", None, data)]
    if not isinstance(data, list):
        raise InputFileError(
            path, f"expected a JSON list of dialogues, found {type(data).__name__}", fix=FORMAT_FIX
        )
    if not data:
        raise InputFileError(path, "the list of dialogues is empty", fix=FORMAT_FIX)
    return [(f"dialogues[{i}]", None, raw) for i, raw in enumerate(data)]


def _raw_jsonl(path: Path, text: str, exc: json.JSONDecodeError):
    # subtle: a JSONL file is not valid JSON as a whole, so the whole-file parse fails at
    # line 2. Only a file whose first line is itself a JSON object is taken for JSONL;
    # anything else is reported with the whole-file error, which says where JSON broke.
    lines = text.splitlines()
    first = next((n for n, line in enumerate(lines, 1) if line.strip()), None)
    try:
        if first is None or not isinstance(json.loads(lines[first - 1]), dict):
            raise ValueError
    except ValueError:  # JSONDecodeError is a ValueError
        raise InputFileError(
            path,
            f"not valid JSON ({exc.msg} at column {exc.colno})",
            line=exc.lineno,
            fix=FORMAT_FIX,
        ) from None
    return [
        ("dialogue", number, parse_line(path, number, line))
        for number, line in enumerate(lines, 1)
        if line.strip()
    ]


def dialogue_from_carecall(
    raw: Any, path: str | Path = "<memory>", where: str = "dialogue", line: int | None = None
) -> Dialogue:
    """One corpus dialogue object -> ``Dialogue``; ``where``/``line`` locate it in errors."""

    def fail(message: str, fix: str = FORMAT_FIX):
        raise InputFileError(path, f"{where}: {message}", fix=fix, line=line)

    if not isinstance(raw, dict):
        fail(f"expected a dialogue object, found {type(raw).__name__}")
    guid = raw.get("guid")
    if not isinstance(guid, str) or not guid:
        fail(
            '"guid" is missing'
            if guid is None
            else f'"guid" must be a non-empty string, found {json.dumps(guid, ensure_ascii=False)}'
        )
    where = f'{where} (guid "{guid}")'
    if "data" not in raw:
        fail('"data" (the list of turns) is missing')
    if not isinstance(raw["data"], list):
        fail(f'"data" must be a list of turns, found {type(raw["data"]).__name__}')
    if TURN_EXTRAS in raw:
        fail(
            f'the dialogue key "{TURN_EXTRAS}" is reserved by rolecall',
            fix=f'rename the key "{TURN_EXTRAS}"',
        )
    turns, extras = [], {}
    for index, item in enumerate(raw["data"]):
        turn, extra = _turn(
            item, lambda msg, fix=FORMAT_FIX, i=index: fail(f"data[{i}]: {msg}", fix)
        )
        turns.append(turn)
        if extra:
            extras[str(index)] = extra
    metadata = {k: v for k, v in raw.items() if k not in ("guid", "data")}
    if extras:
        metadata[TURN_EXTRAS] = extras
    return Dialogue(id=guid, turns=turns, metadata=metadata)


def _turn(item: Any, fail) -> tuple[Turn, dict]:
    if not isinstance(item, dict):
        fail(f"expected a turn object, found {type(item).__name__}")
    role = item.get("role")
    if role not in ("system", "user"):
        fail(
            '"role" is missing'
            if "role" not in item
            else f'"role" must be "system" or "user", found {json.dumps(role, ensure_ascii=False)}',
            '"system" is the bot, "user" the person it talks to',
        )
    if "text" not in item:
        fail('"text" is missing')
    if not isinstance(item["text"], str):
        fail(f'"text" must be a string, found {type(item["text"]).__name__}')
    flag = item.get(FLAG)
    if flag is not None and not isinstance(flag, bool):
        fail(
            f'"{FLAG}" must be true or false, found {json.dumps(flag, ensure_ascii=False)}',
            "write true or false without quotes (or null: not judged yet)",
        )
    if role == "user" and flag:
        fail(
            f'"{FLAG}" is true on a user turn; only system turns are judged',
            f'set "{FLAG}" to false on user turns, or check the "role"',
        )
    category = item.get("category")
    if category is not None and (not isinstance(category, str) or not category):
        fail(
            f'"category" must be a non-empty string, found '
            f"{json.dumps(category, ensure_ascii=False)}"
        )
    turn = Turn(
        role=role,
        text=item["text"],
        category=category,
        out_of_bounds=flag if role == "system" else None,
    )
    return turn, {k: v for k, v in item.items() if k not in TURN_KEYS}


# -- writing ---------------------------------------------------------------------------


def dialogue_to_carecall(dialogue: Dialogue) -> dict:
    """``Dialogue`` -> one corpus dialogue object (the inverse of ``dialogue_from_carecall``)."""

    def fail(message: str):
        raise RolecallError(
            f'dialogue "{dialogue.id}": {message}',
            fix="rename the clashing metadata keys before exporting",
        )

    metadata = dict(dialogue.metadata)
    extras = metadata.pop(TURN_EXTRAS, {}) or {}
    if clash := sorted({"guid", "data"} & metadata.keys()):
        fail(f"metadata keys {clash} would overwrite the corpus keys")
    if bad := sorted(set(extras) - {str(i) for i in range(len(dialogue.turns))}):
        fail(f"{TURN_EXTRAS} names turns that do not exist: {bad}")
    data = []
    for index, turn in enumerate(dialogue.turns):
        if turn.role == "user" and turn.out_of_bounds:
            raise RolecallError(
                f'dialogue "{dialogue.id}", turn {index}: a user turn is '
                "marked out of bounds; the CareCall format cannot say that",
                fix="only system turns can be out of bounds",
            )
        item = {
            "role": turn.role,
            "text": turn.text,
            FLAG: bool(turn.out_of_bounds) if turn.role == "user" else turn.out_of_bounds,
        }
        if turn.category is not None:
            item["category"] = turn.category
        extra = extras.get(str(index), {})
        if clash := sorted(set(TURN_KEYS) & extra.keys()):
            fail(f"{TURN_EXTRAS} for turn {index} would overwrite {clash}")
        data.append(item | extra)
    return {"guid": dialogue.id, "data": data} | metadata


def write_carecall(path: str | Path, dialogues: Iterable[Dialogue]) -> int:
    """Write dialogues as a CareCall JSON list, or one dialogue object per line when the
    name ends in ``.jsonl``, atomically; returns how many were written."""
    items = [dialogue_to_carecall(d) for d in dialogues]
    path = Path(path)
    if path.suffix.lower() == ".jsonl":
        text = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)
    else:
        text = json.dumps(items, ensure_ascii=False, indent=2) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)
    return len(items)


# -- training examples -----------------------------------------------------------------


UNFLAGGED = ("stop", "in-bounds")  # what a system turn without a flag means to the split


def carecall_to_examples(path: str | Path, unflagged: str = "stop") -> list[Example]:
    """A human-labelled CareCall file -> training examples by the first-out-of-bounds split.

    Per dialogue, system turns before the first flagged one are positives, the flagged one
    is a negative (category from the ``"category"`` extension, else ``"unspecified"``), the
    rest is dropped. A system turn with no flag (absent or ``null``) stops the dialogue's
    split (``unflagged="stop"``) or is read as in bounds (``"in-bounds"``: human-fixed
    dialogues, whose turns are all in bounds, carry no flags). With ``"stop"``, a file that
    gives no example because of unflagged turns is an error rather than an empty result.
    """
    if unflagged not in UNFLAGGED:
        raise ConfigError(
            f'unflagged must be one of {", ".join(UNFLAGGED)}, not "{unflagged}"',
            fix='"stop" (unflagged turns end the split) or "in-bounds"',
        )
    dialogues = read_carecall(path)
    if unflagged == "in-bounds":
        dialogues = [unflagged_in_bounds(d) for d in dialogues]
    examples = [e for d in dialogues for e in examples_from_dialogue(d)]
    unjudged = sum(
        t.role == "system" and t.out_of_bounds is None for d in dialogues for t in d.turns
    )
    if not examples and unjudged:
        raise InputFileError(
            path,
            f"gives no training examples: {unjudged} system turns have no "
            f'"{FLAG}" flag, and a turn without one ends its dialogue\'s split',
            fix="pass --unflagged in-bounds if these dialogues are all in bounds (e.g. "
            "human-fixed), or judge them first (rolecall dialogues judge --spec SPEC "
            f"--dialogues {path} --out DIR writes DIR/examples.jsonl)",
        )
    return examples


def unflagged_in_bounds(dialogue: Dialogue) -> Dialogue:
    """``dialogue`` with its unflagged system turns marked in bounds; flagged ones kept."""
    return dialogue.model_copy(
        update={
            "turns": [
                t.model_copy(update={"out_of_bounds": False})
                if t.role == "system" and t.out_of_bounds is None
                else t
                for t in dialogue.turns
            ]
        }
    )


def write_examples_jsonl(path: str | Path, examples: Iterable[Example]) -> int:
    """Write examples as rolecall JSONL (atomically); returns the count."""
    return write_jsonl(path, examples)
