"""Agreement a lead can act on: the items whose annotators disagree (unsettled ties
first), each annotator's agreement with the others, and review: an admin takes a
disagreeing item into their own queue and labels it there, a label that settles the item:
the exports and rates use it alone instead of the annotators' majority (``items.decided``),
while agreement stays the annotators' own.

An item's answer is its label's payload (a dialogue's first out-of-bounds turn and
category, a pair's two yes/no answers, a bot turn's two); two labels agree when their
answers are equal. A tie is an item whose most common answer is shared by two or more
answers: the dialogue export leaves a tied dialogue out of training until it is settled
(``web/export.py``); a tied pair or bot turn counts as "no" until then.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from statistics import mean, median

from fastapi import APIRouter, Depends
from sqlalchemy import select
from sqlalchemy.orm import Session

from rolecall.judge.voting import most_common
from rolecall.store import Annotation, Assignment, Item, User, WebSession
from rolecall.web.deps import DB, ID, Refused, admin_writer, dialect_insert, project_or_404
from rolecall.web.items import SETTLED
from rolecall.web.once import Once, answered, repeat_of

router = APIRouter()


def _key(answer: dict) -> tuple:
    """An answer as something to count (its questions in a fixed order; a note to the
    lead, unsure or a comment, is no part of it)."""
    return tuple(sorted((k, v) for k, v in answer.items() if k not in ("note", SETTLED)))


def system_turn(payload: dict, answer: dict) -> int | None:
    """A dialogue answer's first out-of-bounds turn as people count it: the how-manyth
    system turn it is (its key on the item page); None for any other answer."""
    first = answer.get("first_oob")
    if first is None or "turns" not in payload:
        return None
    return sum(turn.get("role") == "system" for turn in payload["turns"][: first + 1])


def tied(answers: list[dict]) -> bool:
    """No answer was given more often than every other (two or more labels)."""
    return len(answers) >= 2 and len(most_common(_key(a) for a in answers)) > 1


def _labels(db: Session, project_id: int) -> list:
    """(item id, annotator, label kind, answer, seconds) of every label in the project, in
    labelling order."""
    return db.execute(
        select(
            Annotation.item_id,
            User.username,
            Annotation.kind,
            Annotation.payload,
            Annotation.seconds_spent,
        )
        .join(Item, Item.id == Annotation.item_id)
        .join(User, User.id == Annotation.user_id)
        .where(Item.project_id == project_id)
        .order_by(Annotation.id)
    ).all()


def _answers(labels: list) -> dict[int, list[tuple[str, dict]]]:
    """item id -> (annotator, answer) of ``labels`` (``_labels``), in labelling order."""
    found: dict[int, list[tuple[str, dict]]] = defaultdict(list)
    for item_id, username, _kind, payload, _seconds in labels:
        found[item_id].append((username, payload))
    return found


def disagreements(db: Session, project_id: int) -> list[dict]:
    """Every item whose annotators gave different answers: ties first, then by how split
    the answers are, then by item."""
    items = {
        item_id: (kind, payload)
        for item_id, kind, payload in db.execute(
            select(Item.id, Item.kind, Item.payload).where(Item.project_id == project_id)
        )
    }
    rows = []
    for item_id, everyone in _answers(_labels(db, project_id)).items():
        given = [(name, answer) for name, answer in everyone if not answer.get(SETTLED)]
        if len({_key(answer) for _, answer in given}) < 2:
            continue
        counts = Counter(_key(answer) for _, answer in given)
        settled = [(name, answer) for name, answer in everyone if answer.get(SETTLED)][-1:]
        rows.append(
            {
                "item": item_id,
                "kind": items[item_id][0].value,
                "labels": len(given),
                "tie": tied([answer for _, answer in given]),
                "settled_by": settled[0][0] if settled else None,
                "agreeing": max(counts.values()) / len(given),
                "answers": [
                    {
                        "annotator": name,
                        "answer": answer,
                        "system_turn": system_turn(items[item_id][1], answer),
                    }
                    for name, answer in [*given, *settled]
                ],
            }
        )
    # what still needs a lead first: unsettled ties, then the most split
    return sorted(
        rows, key=lambda r: (r["settled_by"] is not None, not r["tie"], r["agreeing"], r["item"])
    )


# an answer that says something is wrong, per label kind: the answer mix a lead compares
FLAGS = {
    "oob": lambda a: a.get("first_oob") is not None,  # a turn out of bounds
    "pair": lambda a: not (a.get("consistent") and a.get("offensive")),  # a pair refused
    "ssa": lambda a: not (a.get("sensible") and a.get("specific")),  # a reply faulted
}


def annotator_agreement(db: Session, project_id: int) -> list[dict]:
    """Per annotator: over the items someone else labelled too, how often their answer is
    one the others gave most often (the others' majority; any of them on a tie); over all
    their labels, the median seconds and the share of answers that flag something wrong
    (the answer mix: one who flags far more or less than the rest reads the guidelines
    otherwise)."""
    labels = _labels(db, project_id)
    shared: dict[str, list[bool]] = defaultdict(list)
    for everyone in _answers(labels).values():
        given = [(name, answer) for name, answer in everyone if not answer.get(SETTLED)]
        for index, (name, answer) in enumerate(given):
            others = [_key(a) for i, (_, a) in enumerate(given) if i != index]
            if others:
                shared[name].append(_key(answer) in most_common(others))
    seconds: dict[str, list[float]] = defaultdict(list)
    flagged: dict[str, list[bool]] = defaultdict(list)
    for _item_id, name, kind, answer, spent in labels:
        if answer.get(SETTLED):
            continue
        if spent is not None:
            seconds[name].append(spent)
        if kind in FLAGS:
            flagged[name].append(FLAGS[kind](answer))
    return [
        {
            "annotator": name,
            "shared_items": len(shared[name]),
            "agrees_with_others": mean(shared[name]) if shared[name] else None,
            "median_seconds": median(seconds[name]) if seconds[name] else None,
            "flagged_share": mean(flagged[name]) if flagged[name] else None,
        }
        for name in sorted(set(shared) | set(flagged))
    ]


@router.post("/projects/{project_id}/review/{item_id}")
def review(
    project_id: ID,
    item_id: ID,
    once: Once,
    login: WebSession = Depends(admin_writer),
    db: Session = DB,
):
    """The item joins the admin's own queue and opens to settle: their label there decides
    it (``items.decided``)."""
    if repeat := repeat_of(db, login, once, f"/items/{item_id}"):
        return repeat
    project = project_or_404(db, project_id)
    item = db.get(Item, item_id)
    if item is None or item.project_id != project.id:
        raise Refused(404, "no such item in this project")
    statement = dialect_insert(db, Assignment).values(item_id=item.id, user_id=login.user_id)
    db.execute(statement.on_conflict_do_nothing(index_elements=["item_id", "user_id"]))
    return answered(db, once, f"/items/{item.id}?settle=yes")
