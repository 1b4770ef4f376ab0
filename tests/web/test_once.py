"""web/once.py's waiting repeats (issue 50, D1), on SQLite and PostgreSQL: a repeat that
waits for the first submit's answer holds no pooled connection while it sleeps, and a
claim no first submit will ever answer (its server killed) sends its repeats on at once."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from rolecall.store import FormSubmission, User, WebSession, session
from rolecall.store.models import utcnow
from rolecall.web import once

TOKEN = "t" * 24


def _login_with_a_claim(engine, claimed_ago: timedelta) -> None:
    """ann1's login, and a first submit of TOKEN claimed ``claimed_ago``, not answered."""
    with session(engine) as db:
        user = db.scalar(select(User).where(User.username == "ann1"))
        expires = utcnow() + timedelta(hours=1)
        db.add(
            WebSession(token_hash="h" * 64, csrf_token="c" * 32, user_id=user.id, expires=expires)
        )
        db.add(FormSubmission(token=TOKEN, user_id=user.id, created=utcnow() - claimed_ago))


def test_a_waiting_repeat_holds_no_connection_while_it_sleeps(site, monkeypatch):
    engine, _ = site
    _login_with_a_claim(engine, timedelta(0))
    held = []

    def sleep(_seconds):
        held.append(engine.pool.checkedout())
        if len(held) == 3:  # the first submit answers
            with session(engine) as other:
                other.execute(update(FormSubmission).values(location="/chat/7"))

    monkeypatch.setattr(once.time, "sleep", sleep)
    with Session(engine, expire_on_commit=False) as db:
        login = db.scalar(select(WebSession))
        answer = once.repeat_of(db, login, TOKEN, "/fallback")
    assert answer.status_code == 303 and answer.headers["location"] == "/chat/7"
    assert held == [0, 0, 0]  # before the fix: 1 each, the login re-read after a rollback


def test_a_claim_no_first_submit_will_answer_sends_its_repeats_on_at_once(site, monkeypatch):
    engine, _ = site
    _login_with_a_claim(engine, timedelta(seconds=once.WAIT_S + 5))
    monkeypatch.setattr(once.time, "sleep", lambda _s: (_ for _ in ()).throw(AssertionError))
    with Session(engine, expire_on_commit=False) as db:
        login = db.scalar(select(WebSession))
        answer = once.repeat_of(db, login, TOKEN, "/fallback")
    assert answer.headers["location"] == "/fallback"
