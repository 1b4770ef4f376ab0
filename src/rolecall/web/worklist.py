"""What a person has to label in a project, and where they go next: their queue (the
project's order, one kind at a time, what they skipped last), the queue page with each
kind's counts, the next item after a label or a skip, their own labels to change, and
the project's guidelines page. An annotator reaches only the items assigned to them.
"""

from __future__ import annotations

from datetime import UTC, tzinfo

from fastapi import APIRouter, Depends, Form, Request
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from rolecall.store import (
    Annotation,
    Assignment,
    Item,
    ItemKind,
    QueueEntry,
    User,
    WebSession,
)
from rolecall.store.models import utcnow
from rolecall.web.chat import project_of
from rolecall.web.deps import DB, ID, Refused, logged_in, page, writer
from rolecall.web.guidelines import guidelines
from rolecall.web.i18n import language_of
from rolecall.web.items import LABEL_KIND
from rolecall.web.once import Once, answered, repeat_of
from rolecall.web.review import system_turn
from rolecall.web.settings import local_minutes, parse_settings

router = APIRouter()


def _queue_query(login: WebSession, project_id: int, what):
    """The person's assigned, unlabelled items in the queue's order (``web/queue.py``);
    items not ranked yet (just uploaded) after the ranked ones, in upload order; the items
    they skipped last, in the order they skipped them."""
    labelled = select(Annotation.item_id).where(Annotation.user_id == login.user_id)
    return (
        select(what)
        .join(Assignment, Assignment.item_id == Item.id)
        .outerjoin(QueueEntry, QueueEntry.item_id == Item.id)
        .where(
            Assignment.user_id == login.user_id,
            Item.project_id == project_id,
            Item.id.not_in(labelled),
        )
        .order_by(
            Assignment.skipped.is_not(None),  # skipped ones last, the earliest skip first
            Assignment.skipped,
            QueueEntry.position.is_(None),
            QueueEntry.position,
            Item.id,
        )
    )


def queue(db: Session, login: WebSession, project_id: int) -> list[Item]:
    """The person's assigned items in the project that they have not labelled yet."""
    return list(db.scalars(_queue_query(login, project_id, Item)))


def next_item(
    db: Session, login: WebSession, project_id: int, kind: ItemKind | None = None
) -> int | None:
    """The first item of the queue, of ``kind`` when given (one id: this runs while a
    label's write is open)."""
    query = _queue_query(login, project_id, Item.id)
    if kind is not None:
        query = query.where(Item.kind == kind)
    return db.scalar(query.limit(1))


def following_item(db: Session, login: WebSession, item: Item) -> int | None:
    """Where the person goes after ``item``: the next of its kind first, so that the keys
    keep their meaning; then whatever is left."""
    return next_item(db, login, item.project_id, item.kind) or next_item(db, login, item.project_id)


def _assignment(db: Session, login: WebSession, item_id: int) -> Assignment | None:
    return db.scalar(
        select(Assignment).where(Assignment.item_id == item_id, Assignment.user_id == login.user_id)
    )


def assigned_item(db: Session, login: WebSession, item_id: int) -> Item:
    item = db.get(Item, item_id)
    if item is None or item.kind not in LABEL_KIND or not _assignment(db, login, item.id):
        raise Refused(404, "no such item in your queue")
    return item


@router.get("/projects/{project_id}/queue")
def show_queue(
    request: Request, project_id: ID, login: WebSession = Depends(logged_in), db: Session = DB
):
    project = project_of(db, login, project_id)
    items = queue(db, login, project.id)
    kinds: dict[str, list[Item]] = {}
    for item in items:  # the queue's order within each kind
        kinds.setdefault(item.kind.value, []).append(item)
    done = {kind.value: n for kind, n in _labelled_per_kind(db, login, project.id)}
    return page(request, "queue.html", project=project, items=items, kinds=kinds, done=done)


def _labelled_per_kind(db: Session, login: WebSession, project_id: int):
    """(kind, how many of the person's items of that kind they have labelled)."""
    labelled = select(Annotation.item_id).where(Annotation.user_id == login.user_id)
    return db.execute(
        select(Item.kind, func.count())
        .join(Assignment, Assignment.item_id == Item.id)
        .where(
            Assignment.user_id == login.user_id,
            Item.project_id == project_id,
            Item.id.in_(labelled),
        )
        .group_by(Item.kind)
    ).all()


@router.get("/projects/{project_id}/guidelines")
def project_guidelines(
    request: Request, project_id: ID, login: WebSession = Depends(logged_in), db: Session = DB
):
    """Every kind of item's guidelines on one page, to read before labelling."""
    project = project_of(db, login, project_id)
    spec = parse_settings(project.settings).spec
    rules = guidelines(spec, language_of(request))
    return page(request, "project_guidelines.html", project=project, guidelines=rules)


@router.get("/projects/{project_id}/labels")
def my_labels(
    request: Request, project_id: ID, login: WebSession = Depends(logged_in), db: Session = DB
):
    """The person's own labels in the project, the latest first, each a link to its item
    (its answer shown there, to change)."""
    project = project_of(db, login, project_id)
    rows = db.execute(
        select(Annotation, Item)
        .join(Item, Item.id == Annotation.item_id)
        .where(Annotation.user_id == login.user_id, Item.project_id == project.id)
        .order_by(Annotation.updated.desc(), Annotation.id.desc())
    ).all()
    names = parse_settings(project.settings).names(language_of(request))
    rows = [(label, item, system_turn(item.payload, label.payload)) for label, item in rows]
    return page(request, "my_labels.html", project=project, rows=rows, names=names)


@router.post("/items/{item_id}/skip")
def skip(
    item_id: ID,
    once: Once,
    reason: str = Form("", max_length=200),
    login: WebSession = Depends(writer),
    db: Session = DB,
):
    """The item goes to the end of the person's queue (unlabelled: no answer is made up);
    the next item of its kind opens, or the next of any kind."""
    item = assigned_item(db, login, item_id)
    back = f"/projects/{item.project_id}/queue"
    if repeat := repeat_of(db, login, once, back):
        return repeat
    assignment = _assignment(db, login, item.id)
    assignment.skipped, assignment.skip_reason = utcnow(), reason.strip() or None
    db.flush()
    following = following_item(db, login, item)
    return answered(db, once, f"/items/{following}" if following else back)


def skipped_items(db: Session, project_id: int, zone: tzinfo = UTC) -> list[dict]:
    """The items people skipped and have not labelled since, with why (for the lead: an
    item skipped by many is unclear, or its guidelines are); when, in the project's time
    ``zone``."""
    rows = db.execute(
        select(Item.id, Item.kind, User.username, Assignment.skipped, Assignment.skip_reason)
        .join(Assignment, Assignment.item_id == Item.id)
        .join(User, User.id == Assignment.user_id)
        .where(
            Item.project_id == project_id,
            Assignment.skipped.is_not(None),
            ~select(Annotation.id)
            .where(Annotation.item_id == Item.id, Annotation.user_id == Assignment.user_id)
            .exists(),
        )
        .order_by(Assignment.skipped.desc())
    ).all()
    return [
        {
            "item": i,
            "kind": k.value,
            "annotator": u,
            "when": local_minutes(w, zone),
            "reason": r or "",
        }
        for i, k, u, w, r in rows
    ]
