"""What an item page shows about the annotator's work in its project: progress in the
item's kind (items labelled / items assigned, "12 / 40"), the median seconds per label
there, and the keys that
answer (``static/keys.js`` reads them from the page's ``data-keys``).

Keys (docs/web.md): number keys pick a dialogue's system turn (1 = the first) or answer a
pair's and a bot turn's questions (1 / 2 = yes / no to the first question, 3 / 4 to the
second); ``0`` or ``n``: every system turn in bounds; a letter per error category, in the
spec's order (:data:`LETTERS`: ``m``, ``n``, ``u`` and ``v`` are the page's own keys); Enter
saves and opens the next item; ``u`` undoes the last label; ``m`` switches the mask;
``?`` shows the keys.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from rolecall.records import RoleSpec
from rolecall.spec import display_name, error_categories_in_order
from rolecall.store import Annotation, Assignment, Item, ItemKind

LETTERS = "abcdefghijklopqrstwxyz"  # for error categories: m, n, u and v are taken


@dataclass(frozen=True)
class Pace:
    done: int  # the person's labelled items of the page's kind in the project
    total: int  # the items of that kind assigned to them there
    median_seconds: float | None  # over their labels of that kind with a measured time
    last_label: int | None = None  # the id of their latest label there: what undo takes
    last_item: int | None = None  # its item: where Backspace goes, the answer kept


def latest_label(db: Session, user_id: int, project_id: int) -> Annotation | None:
    """The person's label in the project saved last (what ``u`` takes back)."""
    return db.scalar(
        select(Annotation)
        .join(Item, Item.id == Annotation.item_id)
        .where(Annotation.user_id == user_id, Item.project_id == project_id)
        .order_by(Annotation.updated.desc(), Annotation.id.desc())
        .limit(1)
    )


def pace(db: Session, user_id: int, project_id: int, kind: ItemKind) -> Pace:
    """Progress and time per label in one kind's queue (a pair takes another time than a
    dialogue); the last label, for undo and Backspace, over the whole project."""
    assigned = (
        select(func.count())
        .select_from(Assignment)
        .join(Item, Item.id == Assignment.item_id)
        .where(Assignment.user_id == user_id, Item.project_id == project_id, Item.kind == kind)
    )
    labelled = select(Annotation.item_id).where(Annotation.user_id == user_id)
    seconds = db.scalars(
        select(Annotation.seconds_spent)
        .join(Item, Item.id == Annotation.item_id)
        .where(
            Annotation.user_id == user_id,
            Item.project_id == project_id,
            Item.kind == kind,
            Annotation.seconds_spent.is_not(None),
        )
    ).all()
    last = latest_label(db, user_id, project_id)
    return Pace(
        done=db.scalar(assigned.where(Item.id.in_(labelled))),
        total=db.scalar(assigned),
        median_seconds=statistics.median(seconds) if seconds else None,
        last_label=getattr(last, "id", None),
        last_item=getattr(last, "item_id", None),
    )


def category_keys(spec: RoleSpec, language: str) -> list[tuple[str, str, str]]:
    """(key, error category, its name in ``language``) in the spec's order; categories past
    the alphabet get no key (the mouse or Tab reaches them)."""
    return [
        (LETTERS[i] if i < len(LETTERS) else "", name, display_name(spec, name, language))
        for i, name in enumerate(error_categories_in_order(spec))
    ]
