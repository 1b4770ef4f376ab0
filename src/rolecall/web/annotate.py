"""Labelling: dialogues (first out-of-bounds turn), K/DA pairs, SSA of bot turns: the
uploads, the item pages and their labels (what a person has to label and where they go
next is ``worklist.py``).

An annotator sees only the items assigned to them and only their own labels; the time
from showing an item to its label is recorded (``seconds_spent``); re-labelling updates
the one row (item, annotator, kind), in one upsert statement, so that a double click or
the same form sent 30 times at once is one row and 30 redirects. Offensive text (a pair's
rewrite, a red-team attack turn) is blurred while the annotator's mask is on
(``preferences.py``). The LLM judge's verdict on a dialogue is shown only when the
project's ``show_judge`` setting says so. Every item page shows the annotator's progress
and time per label, and answers to keys (``pace.py``); ``u`` posts to :func:`undo`, which
takes back the annotator's last label in the project. A label may carry a note to the
lead (unsure, a comment), which is no part of its answer.
"""

from __future__ import annotations

import hmac
import time
from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Depends, File, Form, Request, UploadFile
from fastapi.responses import RedirectResponse
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from rolecall.store import (
    Annotation,
    Item,
    ItemKind,
    Project,
    QueueEntry,
    Role,
    WebSession,
)
from rolecall.store.models import utcnow
from rolecall.web.auth import sign
from rolecall.web.chat import project_of
from rolecall.web.deps import (
    DB,
    ID,
    Refused,
    admin_writer,
    dialect_insert,
    logged_in,
    page,
    writer,
)
from rolecall.web.guidelines import guidelines
from rolecall.web.i18n import language_of, tr
from rolecall.web.items import (
    LABEL_KIND,
    SETTLED,
    UPLOADED,
    add_items,
    parse_upload,
    ssa_rows,
)
from rolecall.web.once import Once, answered, repeat_of
from rolecall.web.pace import category_keys, latest_label, pace
from rolecall.web.queue import labels_since_ranking, refit
from rolecall.web.settings import parse_settings
from rolecall.web.worklist import assigned_item, following_item

router = APIRouter()
MAX_UPLOAD = 900_000  # bytes (the app refuses bodies over 1 MB anyway)
MAX_SECONDS = 3600.0
MAX_COMMENT = 500  # characters of a label's comment for the lead


@router.post("/admin/projects/{project_id}/items")
def upload(
    request: Request,
    background: BackgroundTasks,
    project_id: ID,
    once: Once,
    kind: ItemKind = Form(...),
    per_item: int = Form(1, ge=1, le=10),
    file: UploadFile = File(...),
    login: WebSession = Depends(admin_writer),
    db: Session = DB,
):
    if repeat := repeat_of(db, login, once, "/admin"):
        return repeat
    project = project_of(db, login, project_id)
    if kind not in UPLOADED:
        raise Refused(
            422,
            "items of kind {kind} are not uploaded: they are made from the project's saved "
            "chats (the admin page's 'SSA items from saved chats'); upload dialogues (JSONL) "
            "or K/DA pairs (CSV)",
            kind=kind.value,
        )
    # a plain route (the thread pool): the claim above may wait on a lock, which must
    # not stop the event loop; FastAPI has already spooled the upload to a file
    data = file.file.read(MAX_UPLOAD + 1)
    if len(data) > MAX_UPLOAD:
        raise Refused(
            413, "the file is over {limit} bytes: split it", limit=format(MAX_UPLOAD, ",")
        )
    rows = parse_upload(kind, file.filename or "upload", data)
    queue_settings = parse_settings(project.settings).queue
    add_items(db, project_id, kind, rows, per_item, queue_settings.double_share_of(kind.value))
    background.add_task(refit, _sessions(request), project_id, queue_settings)
    return answered(db, once, "/admin")


@router.post("/admin/projects/{project_id}/ssa-items")
def make_ssa_items(
    request: Request,
    background: BackgroundTasks,
    project_id: ID,
    once: Once,
    per_item: int = Form(1, ge=1, le=10),
    login: WebSession = Depends(admin_writer),
    db: Session = DB,
):
    """SSA items from the bot turns of the project's saved chats (new ones only)."""
    if repeat := repeat_of(db, login, once, "/admin"):
        return repeat
    project = project_of(db, login, project_id)
    # one maker at a time per project: on PostgreSQL two tabs' forms (two tokens) would
    # otherwise both read the same bot turns as new and make each an item twice (SQLite's
    # write lock, taken by the claim above, already serialises them)
    db.execute(select(Project.id).where(Project.id == project.id).with_for_update())
    rows = ssa_rows(db, project_id)
    if not rows:
        raise Refused(409, "no new bot turns in saved chats to label")
    queue_settings = parse_settings(project.settings).queue
    double = queue_settings.double_share_of(ItemKind.BOT_TURN.value)
    add_items(db, project_id, ItemKind.BOT_TURN, rows, per_item, double)
    background.add_task(refit, _sessions(request), project_id, queue_settings)
    return answered(db, once, "/admin")


@router.get("/items/{item_id}")
def show_item(
    request: Request, item_id: ID, login: WebSession = Depends(logged_in), db: Session = DB
):
    item = assigned_item(db, login, item_id)
    mine = db.scalar(
        select(Annotation).where(Annotation.item_id == item.id, Annotation.user_id == login.user_id)
    )
    shown_at = _shown_again(request, login, item.id) or shown_token(
        request.app.state.secret, login, item.id, time.time()
    )
    return item_page(request, login, db, item, mine.payload if mine else None, shown_at)


def item_page(
    request: Request,
    login: WebSession,
    db: Session,
    item: Item,
    mine: dict | None,
    shown_at: str,
    error: str | None = None,
):
    """An item's page with ``mine`` (the answer to show chosen) and, after a label that
    could not be saved, its ``error`` in place (status 422), the answers given kept."""
    settings = parse_settings(item.project.settings)
    language, masked = language_of(request), masked_turns(item)
    return page(
        request,
        f"label_{item.kind.value}.html",
        422 if error else 200,
        item=item,
        payload=item.payload,
        mine=mine,
        error=error,
        shown_at=shown_at,
        category_keys=category_keys(settings.spec, language),
        guidelines=guidelines(settings.spec, language),
        names=settings.names(language),
        show_judge=settings.show_judge,
        pace=pace(db, login.user_id, item.project_id, item.kind),
        masked=masked,
        offensive=item.kind == ItemKind.PAIR or bool(masked),
        # a lead reviewing a disagreement: their label settles the item
        settling=request.query_params.get("settle") == "yes" and login.user.role == Role.ADMIN,
    )


def masked_turns(item: Item) -> set[int]:
    """The turns of a dialogue shown blurred while the person's mask is on: the attack
    turn of a red-team conversation (``web/redteam.py``), unless the attack was neutral.
    (A pair's rewrite is always masked.)"""
    redteam = (item.payload.get("metadata") or {}).get("redteam") or {}
    turn = (redteam.get("attack") or {}).get("turn")
    return {turn} if isinstance(turn, int) and redteam.get("kind") != "neutral" else set()


@router.post("/projects/{project_id}/undo")
def undo(
    project_id: ID,
    once: Once,
    label: Annotated[int | None, Form()] = None,
    login: WebSession = Depends(writer),
    db: Session = DB,
):
    """The person's last label in the project (the latest saved) is taken back; its item
    opens again, in the queue once more. ``label`` is the one the page showed as the last:
    when it no longer is (undone or followed by another in a second tab), nothing is
    deleted, so undo never takes an answer the person did not just give."""
    if repeat := repeat_of(db, login, once, f"/projects/{project_id}/queue"):
        return repeat
    project = project_of(db, login, project_id)
    last = latest_label(db, login.user_id, project.id)
    if last is None:
        raise Refused(409, "nothing to undo: you have no labels in this project")
    # a Core delete: a second tab's undo that waited on this row deletes 0 rows (the ORM's
    # would raise StaleDataError, a 500) and is refused like a changed label
    changed = label is not None and last.id != label
    if changed or db.execute(delete(Annotation).where(Annotation.id == last.id)).rowcount != 1:
        raise Refused(
            409,
            "your last label changed in another tab or window since this page was shown: "
            "reload the page",
        )
    return answered(db, once, f"/items/{last.item_id}")


def _sessions(request: Request):
    """A maker of database sessions of the app's engine, for work after the response."""
    engine = request.app.state.engine
    return lambda: Session(engine, expire_on_commit=False)


def shown_token(secret: bytes, login: WebSession, item_id: int, at: float) -> str:
    """When the form was shown, signed with the server's secret (which no page shows: the
    CSRF token, which every page shows, would let anyone sign a made-up start): the time
    spent on an item is measured by the server's clock, and a made-up start is refused."""
    stamp = f"{at:.3f}"
    return f"{stamp}.{sign(secret, f'shown:{login.user_id}:{item_id}:{stamp}')}"


def _signed_start(secret: bytes, login: WebSession, item_id: int, token: str) -> float | None:
    """When the form was shown, from ``token``, if the server signed it for this person and
    item (``shown_token``); None for a missing or altered one."""
    try:
        at = float(token.rpartition(".")[0])
    except ValueError:
        return None
    return at if hmac.compare_digest(shown_token(secret, login, item_id, at), token) else None


def _shown_again(request: Request, login: WebSession, item_id: int) -> str | None:
    """The ``shown`` token the page was reloaded with (the mask switched with ``m``): the
    item's clock goes on from when it was first shown, if the token is this person's for
    this item and not older than ``MAX_SECONDS``."""
    token = request.query_params.get("shown", "")
    at = _signed_start(request.app.state.secret, login, item_id, token)
    return token if at is not None and 0 <= time.time() - at <= MAX_SECONDS else None


def _seconds(secret: bytes, login: WebSession, item_id: int, token: str) -> float | None:
    at = _signed_start(secret, login, item_id, token)
    if at is None:
        raise Refused(422, "the form's start time is missing or altered: reload the item")
    spent = time.time() - at
    return round(spent, 2) if 0 <= spent <= MAX_SECONDS else None


def _dialogue_label(
    item: Item, first_oob: str, category: str, categories: list[str], names: dict[str, str]
) -> dict:
    """The label of a dialogue item; ``names``: the categories' names in the page's
    language, for the message that asks for one."""
    if first_oob == "none":
        return {"first_oob": None, "category": None}
    turns = item.payload["turns"]
    # ASCII digits only: str.isdigit() takes '²' and int() reads '٠' as 0
    if (
        not (first_oob.isascii() and first_oob.isdigit())
        or int(first_oob) >= len(turns)
        or turns[int(first_oob)]["role"] != "system"
    ):
        raise Refused(422, "pick a system turn of this dialogue, or none")
    if category not in categories:
        shown = ", ".join(names.get(c, c) for c in categories)
        raise Refused(422, "pick the error category ({categories})", categories=shown)
    return {"first_oob": int(first_oob), "category": category}


def _given(first_oob: str, category: str) -> dict:
    """A dialogue answer as sent, to show again chosen: the turn when it is one."""
    turn = int(first_oob) if first_oob.isascii() and first_oob.isdigit() else first_oob
    return {"first_oob": None if first_oob == "none" else turn, "category": category}


def _yes_no(**answers: str) -> dict:
    if any(a not in ("yes", "no") for a in answers.values()):
        raise Refused(422, "answer every question with yes or no")
    return {name: answer == "yes" for name, answer in answers.items()}


def save_label(
    db: Session,
    item_id: int,
    user_id: int,
    kind: str,
    payload: dict,
    seconds: float | None,
    share: str | None = None,
) -> None:
    """Insert or update the one (item, annotator, kind) row in one statement: a
    check-then-insert lets two identical submits both insert, and the second one fails on
    the unique constraint (a 500 for a double click)."""
    now = utcnow()
    statement = dialect_insert(db, Annotation).values(
        item_id=item_id,
        user_id=user_id,
        kind=kind,
        payload=payload,
        seconds_spent=seconds,
        share=share,
        created=now,
        updated=now,
    )
    db.execute(
        statement.on_conflict_do_update(
            index_elements=["item_id", "user_id", "kind"],
            set_={
                "payload": statement.excluded.payload,
                "seconds_spent": statement.excluded.seconds_spent,
                "share": statement.excluded.share,
                "updated": now,
            },
        )
    )


@router.post("/items/{item_id}/label")
def label(
    request: Request,
    background: BackgroundTasks,
    item_id: ID,
    shown_at: str = Form(..., max_length=64),
    first_oob: str = Form("", max_length=8),
    category: str = Form("", max_length=64),
    consistent: str = Form("", max_length=3),
    offensive: str = Form("", max_length=3),
    sensible: str = Form("", max_length=3),
    specific: str = Form("", max_length=3),
    unsure: str = Form("", max_length=3),
    settle: str = Form("", max_length=3),
    comment: str = Form("", max_length=MAX_COMMENT),
    login: WebSession = Depends(writer),
    db: Session = DB,
):
    item = assigned_item(db, login, item_id)
    seconds = _seconds(request.app.state.secret, login, item.id, shown_at)
    settings = parse_settings(item.project.settings)
    answers = {"consistent": consistent, "offensive": offensive}
    if item.kind == ItemKind.BOT_TURN:
        answers = {"sensible": sensible, "specific": specific}
    try:
        if item.kind == ItemKind.DIALOGUE:
            names = settings.names(language_of(request))
            payload = _dialogue_label(item, first_oob, category, settings.error_categories, names)
        else:
            payload = _yes_no(**answers)
    except Refused as refused:  # said on the item itself, the answers given kept
        given = (
            _given(first_oob, category)
            if item.kind == ItemKind.DIALOGUE
            else {k: {"yes": True, "no": False}.get(v) for k, v in answers.items()}
        )
        message = tr(request, refused.message, **refused.values)
        return item_page(request, login, db, item, given, shown_at, message)
    if unsure or comment.strip():  # said to the lead; no part of the answer itself
        payload["note"] = {"unsure": bool(unsure), "comment": comment.strip()}
    if settle == "yes" and login.user.role == Role.ADMIN:  # a lead's review (review.py)
        payload[SETTLED] = True
    share = db.scalar(select(QueueEntry.share).where(QueueEntry.item_id == item.id))
    save_label(db, item.id, login.user_id, LABEL_KIND[item.kind], payload, seconds, share)
    if labels_since_ranking(db, item.project_id) >= settings.queue.refit_every:
        background.add_task(refit, _sessions(request), item.project_id, settings.queue)
    following = following_item(db, login, item)
    target = f"/items/{following}" if following else f"/projects/{item.project_id}/queue"
    return RedirectResponse(target, status_code=303)
