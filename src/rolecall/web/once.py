"""A form sent twice has one effect: one-time form tokens (issue 34).

Every state-changing form that has no natural key (a chat message, Fix, "ask again",
Save, a new chat, a project, an upload, SSA items, undo, the language and the mask)
carries a hidden ``once`` field, a
fresh random token per rendered form. The route claims the token first, in its own
transaction (:func:`repeat_of`); a second submit of the same rendered form (a double
click, a browser or proxy retrying) finds it claimed and gets the first submit's
redirect: N identical submits, N redirects, one effect, and for a chat message never a
second bot call. Forms with a natural key are upserts instead (labels, users, members).

Subtle: the claim must be the route's first write and come before it reads what it
changes. A repeat then waits for the first submit's commit (on the token row in
PostgreSQL, on the write lock in SQLite) and reads what it left. A first submit refused
before it changed anything (bad input) rolled its claim back, so correcting the input
and sending the form again works; a chat form commits the claim with the person's act
before the bot is asked, and records its answer even when the bot fails.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Annotated

from fastapi import Form
from fastapi.responses import RedirectResponse
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from rolecall.store import FormSubmission, WebSession
from rolecall.store.models import utcnow
from rolecall.web.deps import Refused, dialect_insert

KEEP = timedelta(days=7)  # a form resubmitted later than this acts again
WAIT_S = 120.0  # a repeat waits this long for the first submit's answer (a bot's reply)
POLL_S = 0.1
# the form field ``once`` of every claiming route: the token the page rendered with the
# templates' ``once()`` (``deps.templates``)
Once = Annotated[str, Form(min_length=16, max_length=64, pattern=r"^[\w-]+$")]


def repeat_of(db: Session, login: WebSession, token: str, fallback: str) -> RedirectResponse | None:
    """``None`` when this is the form's first submit: the token is now claimed in this
    request's transaction, and the route ends with :func:`answered`. For a repeat, the
    first submit's redirect once it has one (a chat's repeat waits for the bot's reply,
    up to :data:`WAIT_S`, then goes to ``fallback``, at once when the claim is older than
    that: its first submit died); the repeat's transaction is rolled back (it changes
    nothing, and on SQLite it must not hold the write lock while it waits), and it holds
    no pooled connection while it sleeps."""
    # read once: after a rollback the ORM reloads an expired attribute, and that query
    # would hold a pooled connection through every sleep below (40 waiters: the pool gone)
    user_id = login.user_id
    claim = dialect_insert(db, FormSubmission).values(
        token=token, user_id=user_id, created=utcnow()
    )
    claim = claim.on_conflict_do_nothing(index_elements=["token"]).returning(FormSubmission.token)
    if db.scalar(claim) is not None:  # (an ORM insert's rowcount is -1 on PostgreSQL)
        db.execute(
            delete(FormSubmission).where(
                FormSubmission.user_id == user_id, FormSubmission.created < utcnow() - KEEP
            )
        )
        return None
    db.rollback()
    deadline = time.monotonic() + WAIT_S
    while True:
        first = db.execute(
            select(FormSubmission.user_id, FormSubmission.location, FormSubmission.created).where(
                FormSubmission.token == token
            )
        ).one()
        db.rollback()  # the next look sees the first submit's later commits
        if first.user_id != user_id:
            raise Refused(409, "this form was sent by another login: reload the page")
        # a claim older than the wait has no first submit left to answer it (a server killed
        # during a bot call): its repeats go to the fallback at once, not after WAIT_S each
        orphan = first.created < utcnow() - timedelta(seconds=WAIT_S)
        if first.location is not None or orphan or time.monotonic() >= deadline:
            return RedirectResponse(first.location or fallback, status_code=303)
        time.sleep(POLL_S)


def answered(db: Session, token: str, location: str) -> RedirectResponse:
    """The first submit's redirect to ``location``, recorded for its repeats."""
    db.execute(
        update(FormSubmission).where(FormSubmission.token == token).values(location=location)
    )
    return RedirectResponse(location, status_code=303)
