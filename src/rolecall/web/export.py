"""Feedback and annotations -> training data, in the formats the commands read.

Examples JSONL (``rolecall train classifier/retriever/reranker/generator``):

- chats: every bot turn rejected with Fix -> a **negative** example with its error
  category and the dialogue up to it (saved or not: the rejection itself is the label);
  every bot turn of a saved dialogue -> a **positive** one. ``dialogue_id`` = ``chat-<id>``;
  unsaved dialogues give no positives (nobody vouched for them);
- labelled dialogues: the annotators' majority first out-of-bounds turn and its majority
  category, then the paper's first-out-of-bounds split (``rolecall/examples.py``):
  positives before it, one negative. A dialogue whose annotators split evenly on the turn
  is left out until a review breaks the tie (``web/review.py``).

K/DA CSV (``rolecall detox train``): the labelled pairs that the annotators' majority
found both consistent and implicitly offensive (a tie is "no"). Pair labels CSV
(``rolecall eval agreement --labels``): every annotator's answers in the filters' words.
Labels JSONL: every label of every kind as it was given, with its annotator, seconds,
queue share and times (``raw_labels``).

Both CSVs are also opened by people in spreadsheets: a cell that a spreadsheet would run
as a formula (``= + - @``, tab, CR first) is prefixed with a quote
(``rolecall.formats.spreadsheet``), which the two rolecall readers remove again, so they
read the exact text. The examples JSONL is for training only and keeps the exact text.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from sqlalchemy import select
from sqlalchemy.orm import Session

from rolecall.examples import examples_from_dialogue
from rolecall.formats.kda import COLUMNS
from rolecall.formats.spreadsheet import csv_text
from rolecall.judge.voting import most_common
from rolecall.records import Dialogue, Example, Pair
from rolecall.store import (
    Annotation,
    ChatSession,
    Item,
    ItemKind,
    Project,
    TurnStatus,
    User,
    WebSession,
)
from rolecall.web.chat import bot_turns_in_context
from rolecall.web.deps import DB, ID, admin, project_download
from rolecall.web.items import decided, labels_by_item, majority_yes
from rolecall.web.settings import time_zone

router = APIRouter()


def chat_examples(db: Session, project_id: int) -> list[Example]:
    examples = []
    chats = db.scalars(
        select(ChatSession).where(ChatSession.project_id == project_id).order_by(ChatSession.id)
    ).all()
    for chat in chats:
        dialogue = f"chat-{chat.id}"
        for turn, history in bot_turns_in_context(chat):
            if turn.status == TurnStatus.FIXED:
                examples.append(
                    Example(
                        history=history,
                        response=turn.text,
                        label="negative",
                        category=turn.error_category,
                        dialogue_id=dialogue,
                    )
                )
            elif turn.status == TurnStatus.SAVED:
                examples.append(
                    Example(
                        history=history, response=turn.text, label="positive", dialogue_id=dialogue
                    )
                )
    return examples


def _labelled(
    db: Session, project_id: int, kind: ItemKind, label_kind: str
) -> list[tuple[Item, list[dict]]]:
    labels = labels_by_item(db, project_id, label_kind)
    items = db.scalars(
        select(Item).where(Item.project_id == project_id, Item.kind == kind).order_by(Item.id)
    )
    return [(item, decided(labels[item.id])) for item in items if item.id in labels]


def majority_first_oob(labels: list[dict]) -> tuple[int | None, str | None]:
    """The annotators' majority first out-of-bounds turn and its majority category; a tie
    between turns goes to the earliest turn named (a tie with "none" too), a tie between
    categories to the first in sort order."""
    named = sorted(t for t in most_common(label["first_oob"] for label in labels) if t is not None)
    if not named:
        return None, None
    turn = named[0]
    return turn, sorted(
        most_common(label["category"] for label in labels if label["first_oob"] == turn)
    )[0]


def split_on_the_turn(labels: list[dict]) -> bool:
    """The annotators split evenly on the first out-of-bounds turn (one says turn 2, one
    says none): no majority to train on until someone breaks the tie (``web/review.py``)."""
    return len(most_common(label["first_oob"] for label in labels)) > 1


def tied_dialogues(db: Session, project_id: int) -> int:
    """How many labelled dialogues the examples leave out, their annotators split."""
    labelled = _labelled(db, project_id, ItemKind.DIALOGUE, "oob")
    return sum(split_on_the_turn(labels) for _, labels in labelled)


def dialogue_examples(db: Session, project_id: int) -> list[Example]:
    examples = []
    for item, labels in _labelled(db, project_id, ItemKind.DIALOGUE, "oob"):
        if split_on_the_turn(labels):
            continue
        first, category = majority_first_oob(labels)
        dialogue = Dialogue.model_validate(item.payload)
        turns = []
        for index, turn in enumerate(dialogue.turns):
            judged = (
                None
                if turn.role != "system"
                else (index == first if first is None or index <= first else None)
            )
            turns.append(
                turn.model_copy(
                    update={
                        "out_of_bounds": judged,
                        "category": category if index == first else None,
                    }
                )
            )
        examples += examples_from_dialogue(dialogue.model_copy(update={"turns": turns}))
    return examples


def approved_pairs(db: Session, project_id: int) -> list[Pair]:
    return [
        Pair.model_validate(item.payload)
        for item, labels in _labelled(db, project_id, ItemKind.PAIR, "pair")
        if majority_yes(labels, "consistent") and majority_yes(labels, "offensive")
    ]


def pair_labels_csv(db: Session, project_id: int) -> str:
    """The annotators' pair labels as ``rolecall eval agreement --labels`` reads them
    (item_id, filter, label, annotator), in the filters' own label words, so that the
    filter-human agreement of a kda run can be computed."""
    from rolecall.judge.pair_filters import pair_id

    usernames = dict(db.execute(select(User.id, User.username)).all())
    rows = [["item_id", "filter", "label", "annotator"]]
    for item in db.scalars(
        select(Item)
        .where(Item.project_id == project_id, Item.kind == ItemKind.PAIR)
        .order_by(Item.id)
    ):
        item_id = pair_id(Pair.model_validate(item.payload))
        for annotation in db.scalars(
            select(Annotation)
            .where(Annotation.item_id == item.id, Annotation.kind == "pair")
            .order_by(Annotation.id)
        ):
            name = usernames[annotation.user_id]
            rows.append(
                [
                    item_id,
                    "consistency",
                    "maintained" if annotation.payload["consistent"] else "shifted",
                    name,
                ]
            )
            rows.append(
                [
                    item_id,
                    "implicit",
                    "implicit" if annotation.payload["offensive"] else "none",
                    name,
                ]
            )
    return csv_text(rows)


def raw_labels(db: Session, project_id: int) -> list[dict]:
    """Every label in the project as it was given, one record each: the item (its id here,
    its kind, the id of what it holds), the annotator, the label's kind and answer, the
    seconds spent, the queue share it was served from, and when it was made and last
    changed (ISO 8601, in the project's time zone, its offset written); in the order they
    were made. For a lead's own analysis."""
    from rolecall.judge.pair_filters import pair_id

    zone = time_zone(db.get(Project, project_id).settings)

    def source(item: Item) -> str | None:
        if item.kind == ItemKind.PAIR:
            return pair_id(Pair.model_validate(item.payload))
        return item.payload.get("id")

    rows = db.execute(
        select(Annotation, Item, User.username)
        .join(Item, Item.id == Annotation.item_id)
        .join(User, User.id == Annotation.user_id)
        .where(Item.project_id == project_id)
        .order_by(Annotation.created, Annotation.id)
    ).all()
    return [
        {
            "item": item.id,
            "item_kind": item.kind.value,
            "source_id": source(item),
            "annotator": username,
            "label_kind": label.kind,
            "answer": label.payload,
            "seconds": label.seconds_spent,
            "share": label.share,
            "created": label.created.astimezone(zone).isoformat(),
            "updated": label.updated.astimezone(zone).isoformat(),
        }
        for label, item, username in rows
    ]


LABEL_COLUMNS = (
    "item", "item_kind", "source_id", "annotator", "label_kind", "answer", "seconds",
    "share", "created", "updated",
)  # fmt: skip


def labels_jsonl(rows: list[dict]) -> str:
    import json

    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def labels_csv(rows: list[dict]) -> str:
    """``raw_labels`` for a spreadsheet: one row a label, the answer as JSON in one cell
    (neutralised like every CSV here)."""
    import json

    return csv_text(
        [
            LABEL_COLUMNS,
            *(
                [
                    json.dumps(row[c], ensure_ascii=False) if c == "answer" else row[c]
                    for c in LABEL_COLUMNS
                ]
                for row in rows
            ),
        ]
    )


def pairs_csv(pairs: list[Pair]) -> str:
    return csv_text([COLUMNS, *((p.neutral, p.toxic) for p in pairs)])


def project_examples(db: Session, project_id: int) -> list[Example]:
    return chat_examples(db, project_id) + dialogue_examples(db, project_id)


def examples_jsonl(examples: list[Example]) -> str:
    return "".join(e.model_dump_json() + "\n" for e in examples)


@router.get("/projects/{project_id}/export/examples.jsonl")
def export_examples(project_id: ID, _login: WebSession = Depends(admin), db: Session = DB):
    return project_download(
        db,
        project_id,
        "examples.jsonl",
        "application/x-ndjson",
        lambda pid: examples_jsonl(project_examples(db, pid)),
    )


@router.get("/projects/{project_id}/export/pairs.csv")
def export_pairs(project_id: ID, _login: WebSession = Depends(admin), db: Session = DB):
    return project_download(
        db, project_id, "pairs.csv", "text/csv", lambda pid: pairs_csv(approved_pairs(db, pid))
    )


@router.get("/projects/{project_id}/export/pair-labels.csv")
def export_pair_labels(project_id: ID, _login: WebSession = Depends(admin), db: Session = DB):
    return project_download(
        db, project_id, "pair-labels.csv", "text/csv", lambda pid: pair_labels_csv(db, pid)
    )


@router.get("/projects/{project_id}/export/labels.jsonl")
def export_labels(project_id: ID, _login: WebSession = Depends(admin), db: Session = DB):
    return project_download(
        db,
        project_id,
        "labels.jsonl",
        "application/x-ndjson",
        lambda pid: labels_jsonl(raw_labels(db, pid)),
    )


@router.get("/projects/{project_id}/export/labels.csv")
def export_labels_csv(project_id: ID, _login: WebSession = Depends(admin), db: Session = DB):
    return project_download(
        db, project_id, "labels.csv", "text/csv", lambda pid: labels_csv(raw_labels(db, pid))
    )
