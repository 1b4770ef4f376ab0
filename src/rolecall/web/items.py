"""Items to label: uploaded files -> ``items`` rows, assigned to annotators.

Three kinds (NAACL 2022 section 3.3 and its SSA evaluation, K/DA's human checks):

- ``dialogue``: a generated dialogue (rolecall ``Dialogue`` JSONL); the annotator marks the
  first out-of-bounds system turn, or none, and its category;
- ``pair``: a K/DA pair (CSV ``neutral,implicit``, or the ``pairs.jsonl`` of a kda run,
  whose ids match the run's filter verdicts); the annotator answers the two filters'
  questions: does the rewrite keep the content (consistency), is it implicitly offensive;
- ``bot_turn``: a bot turn of a saved chat in its context, for SSA (sensible? specific?);
  made from the project's chats (``ssa_rows``), not uploaded.

Each item goes to ``per_item`` project members, round-robin, so that several annotators
label every item and agreement can be computed.
"""

from __future__ import annotations

import csv
import tempfile
from collections import defaultdict
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from rolecall.errors import ConfigError, RolecallError
from rolecall.judge.voting import most_common
from rolecall.records import Dialogue, Pair
from rolecall.store import (
    Annotation,
    Assignment,
    ChatSession,
    Item,
    ItemKind,
    ProjectMember,
    Role,
    User,
)

LABEL_KIND = {
    ItemKind.DIALOGUE: "oob",
    ItemKind.PAIR: "pair",
    ItemKind.BOT_TURN: "ssa",
}  # annotations.kind
UPLOADED = (ItemKind.DIALOGUE, ItemKind.PAIR)  # bot turns come from saved chats only
MAX_ITEMS = 5000  # per upload
MAX_DEPTH = 32  # nesting of one record's JSON (a pair's provenance is free-form)
# what reading a malformed file can raise besides rolecall's own errors: bad JSON or
# UTF-8 (ValueError), JSON nested past Python's recursion limit, broken CSV quoting
UNREADABLE = (RolecallError, ValueError, RecursionError, TypeError, LookupError, csv.Error)


def parse_upload(kind: ItemKind, name: str, data: bytes) -> list[tuple[dict, str]]:
    """(payload, source) per record of an uploaded file. The one place where an upload is
    read: whatever is wrong with the file becomes a ``ConfigError`` (a 400 page) naming
    the uploaded file, never the server's temporary copy, and never a 500."""
    pair_jsonl = kind == ItemKind.PAIR and name.lower().endswith(".jsonl")
    suffix = ".csv" if kind == ItemKind.PAIR and not pair_jsonl else ".jsonl"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"upload{suffix}"
        path.write_bytes(data)

        def scrub(text: str) -> str:
            return text.replace(str(path), name).replace(folder, ".")

        try:
            rows = _read_upload(kind, name, path, pair_jsonl)
        except RecursionError:
            raise ConfigError(
                f"{name}: a record is nested too deeply to read",
                fix=f"keep records under {MAX_DEPTH} levels of nesting",
            ) from None
        except UNREADABLE as exc:
            if isinstance(exc, RolecallError):
                raise ConfigError(scrub(exc.message), fix=exc.fix and scrub(exc.fix)) from None
            raise ConfigError(
                f"{name} could not be read: {scrub(str(exc))[:300]}", fix=_FORMAT_FIX[suffix]
            ) from None
    if not rows:
        raise ConfigError(f"{name} holds no records", fix="upload a file with at least one")
    if len(rows) > MAX_ITEMS:
        raise ConfigError(
            f"{name} holds {len(rows)} records, more than {MAX_ITEMS}",
            fix="split it into several uploads",
        )
    for payload, source in rows:
        if _depth(payload) > MAX_DEPTH:
            raise ConfigError(
                f"{source}: the record is nested more than {MAX_DEPTH} levels deep",
                fix="flatten its provenance",
            )
    return rows


_FORMAT_FIX = {
    ".csv": "upload a UTF-8 CSV with the header neutral,implicit",
    ".jsonl": "upload UTF-8 JSONL: one JSON record a line",
}


def _read_upload(kind: ItemKind, name: str, path: Path, pair_jsonl: bool) -> list[tuple[dict, str]]:
    from rolecall.formats.kda import read_kda_csv
    from rolecall.jsonl import read_jsonl

    if pair_jsonl:  # a kda run's pairs.jsonl: keeps the ids its verdicts use
        return [
            (p.model_dump(mode="json"), f"{name}:{i + 1}")
            for i, p in enumerate(read_jsonl(path, Pair))
        ]
    if kind == ItemKind.PAIR:
        return [
            (p.model_dump(mode="json"), f"{name}:{i + 2}") for i, p in enumerate(read_kda_csv(path))
        ]
    return [(d.model_dump(mode="json"), f"{name}:{d.id}") for d in read_jsonl(path, Dialogue)]


def _depth(value) -> int:
    """How deeply lists and dicts nest in ``value`` (without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, level)
            stack += [
                (v, level + 1) for v in (value.values() if isinstance(value, dict) else value)
            ]
    return deepest


def add_items(
    db: Session,
    project_id: int,
    kind: ItemKind,
    rows: list[tuple[dict, str]],
    per_item: int,
    double_share: float = 0.0,
) -> int:
    """Store the items and assign each to ``per_item`` annotators of the project, and a
    ``double_share`` of them (every k-th item, spread evenly) to one more, so that
    agreement can be measured where people overlap."""
    members = list(
        db.scalars(
            select(User.id)
            .join(ProjectMember, ProjectMember.user_id == User.id)
            .where(ProjectMember.project_id == project_id, User.role == Role.ANNOTATOR)
            .order_by(User.id)
        )
    )
    if len(members) < per_item:
        raise ConfigError(
            f"the project has {len(members)} annotators, fewer than the {per_item} asked per item",
            fix="add annotators to it: rolecall web add-user NAME, then "
            "rolecall web add-member PROJECT NAME (or on the admin page)",
        )
    doubled = per_item + 1 <= len(members)
    for number, (payload, source) in enumerate(rows):
        item = Item(project_id=project_id, kind=kind, payload=payload, source=source)
        db.add(item)
        db.flush()
        extra = doubled and _doubled(number, double_share)
        for j in range(per_item + extra):
            db.add(Assignment(item_id=item.id, user_id=members[(number + j) % len(members)]))
    return len(rows)


def _doubled(number: int, share: float) -> bool:
    """Whether item ``number`` (from 0) is one of the ``share`` given one more annotator:
    where ``floor(n * share)`` of the first ``n`` items goes up."""
    return int((number + 1) * share + 1e-9) > int(number * share + 1e-9)


def ssa_rows(db: Session, project_id: int) -> list[tuple[dict, str]]:
    """Every bot turn of the project's saved chats (kept or fixed) that is not an SSA item
    yet, with the live dialogue before it."""
    from rolecall.web.chat import bot_turns_in_context

    done = {
        payload.get("chat_turn_id")
        for payload in db.scalars(
            select(Item.payload).where(
                Item.project_id == project_id, Item.kind == ItemKind.BOT_TURN
            )
        )
    }
    rows = []
    chats = db.scalars(
        select(ChatSession)
        .where(ChatSession.project_id == project_id, ChatSession.saved.is_not(None))
        .order_by(ChatSession.id)
    ).all()
    for chat in chats:
        for turn, history in bot_turns_in_context(chat):
            if turn.id in done:
                continue
            rows.append(
                (
                    {
                        "chat_turn_id": turn.id,
                        "response": turn.text,
                        "history": [t.model_dump(mode="json") for t in history],
                        "bot_version": turn.bot_version,
                        "path": (turn.provenance or {}).get("path"),
                    },
                    f"chat-{chat.id}:turn-{turn.id}",
                )
            )
    return rows


def labels_by_item(db: Session, project_id: int, label_kind: str) -> dict[int, list[dict]]:
    """item id -> every annotator's label payload of ``label_kind`` (in labelling order)."""
    out: dict[int, list[dict]] = defaultdict(list)
    for item_id, payload in db.execute(
        select(Annotation.item_id, Annotation.payload)
        .join(Item)
        .where(Item.project_id == project_id, Annotation.kind == label_kind)
        .order_by(Annotation.id)
    ):
        out[item_id].append(payload)
    return out


SETTLED = "settled"  # a lead's label that settles an item (web/review.py)


def decided(labels: list[dict]) -> list[dict]:
    """The labels that decide an item: the lead's settling label alone where there is one
    (the latest), else every annotator's."""
    return [label for label in labels if label.get(SETTLED)][-1:] or labels


def annotators_only(labels: list[dict]) -> list[dict]:
    """The annotators' own labels of an item (agreement is theirs, not the lead's)."""
    return [label for label in labels if not label.get(SETTLED)]


def majority_yes(labels: list[dict], question: str) -> bool:
    """The annotators' majority answer to a yes/no question; a tie is "no"."""
    return most_common(bool(label.get(question)) for label in labels) == [True]
