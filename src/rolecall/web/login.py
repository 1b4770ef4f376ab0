"""Log in, log out, and the home page (the projects the person works on).

Wrong passwords are throttled per account and per client address (``throttle.py``: 10 per
account, 40 per address within 15 minutes, then a 15-minute lock that ends by itself); a
locked login gets 429 and a message saying when to try again. Logging in ends the
browser's earlier session, if it had one.
"""

from __future__ import annotations

import math
import secrets
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from rolecall.store import Project, ProjectMember, Role, WebSession
from rolecall.web.auth import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    SESSION_HOURS,
    authenticate,
    close_session,
    csrf_matches,
    open_session,
)
from rolecall.web.deps import DB, Refused, logged_in, page, writer
from rolecall.web.i18n import chosen, remember, tr
from rolecall.web.settings import local_minutes, time_zone

router = APIRouter()


def safe_next(target: str) -> str:
    """Only a local path: never redirect a login to another site."""
    return target if target.startswith("/") and not target.startswith("//") else "/"


def _login_page(
    request: Request, next: str, status: int = 200, error: str | None = None
) -> Response:
    token = secrets.token_urlsafe(24)
    response = page(
        request, "login.html", status, login_csrf=token, next=safe_next(next), error=error
    )
    response.set_cookie(
        LOGIN_COOKIE,
        token,
        httponly=True,
        samesite="strict",
        max_age=3600,
        secure=request.app.state.secure_cookies,
    )
    return response


@router.get("/login")
def login_form(request: Request, next: str = "/", lang: str | None = Query(None, max_length=8)):
    if lang is not None:  # the page's language links: the choice is kept in a cookie
        target = "/login?" + urlencode({"next": safe_next(next)})
        response = RedirectResponse(target, status_code=303)
        remember(response, chosen(lang), request.app.state.secure_cookies)
        return response
    return _login_page(request, next)


def _wait_words(request: Request, wait: float) -> str:
    """'in 14 minutes' / 'in 40 seconds' for the refusal message."""
    seconds = max(1, round(wait))
    if seconds < 120:
        return tr(request, "in {n} seconds", n=seconds)
    return tr(request, "in {n} minutes", n=round(seconds / 60))


@router.post("/login")
def login(
    request: Request,
    username: str = Form(..., max_length=64),
    password: str = Form(..., max_length=256),
    csrf: str = Form("", max_length=128),
    next: str = Form("/", max_length=512),
    db: Session = DB,
):
    if not csrf_matches(request.cookies.get(LOGIN_COOKIE), csrf):
        raise Refused(403, "the login form expired: reload the page and log in again")
    throttle = request.app.state.throttle
    keys = throttle.keys(username, request.client.host if request.client else None)
    wait = throttle.begin(keys)  # counted before the password is checked
    if wait > 0:  # and refused before it: a locked guesser learns nothing
        until = datetime.now(UTC) + timedelta(seconds=wait)
        response = _login_page(
            request,
            next,
            429,
            error=tr(
                request,
                "too many wrong passwords for this user name or from this address: try again "
                "{wait} (at {until})",
                wait=_wait_words(request, wait),
                until=local_minutes(until, time_zone(None)),
            ),
        )
        response.headers["retry-after"] = str(math.ceil(wait))
        return response
    try:
        user = authenticate(db, username, password)
    except BaseException:
        throttle.end(keys, None)
        raise
    throttle.end(keys, user is not None)
    if user is None:
        return _login_page(request, next, 401, error=tr(request, "wrong user name or password"))
    close_session(db, request.cookies.get(SESSION_COOKIE))  # this browser's earlier login
    response = RedirectResponse(safe_next(next), status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        open_session(db, user),
        httponly=True,
        samesite="lax",
        max_age=SESSION_HOURS * 3600,
        secure=request.app.state.secure_cookies,
    )
    response.delete_cookie(
        LOGIN_COOKIE, secure=request.app.state.secure_cookies, httponly=True, samesite="strict"
    )
    # the pages before the next login (this one, after logging out) in the person's language
    remember(response, chosen(user.language), request.app.state.secure_cookies)
    return response


@router.post("/logout")
def logout(request: Request, _login: WebSession = Depends(writer), db: Session = DB):
    close_session(db, request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(
        SESSION_COOKIE, secure=request.app.state.secure_cookies, httponly=True, samesite="lax"
    )
    return response


def visible_projects(db: Session, login: WebSession) -> list[Project]:
    """All projects for an admin; the ones an annotator is a member of otherwise."""
    query = select(Project).order_by(Project.name)
    if login.user.role != Role.ADMIN:
        query = query.join(ProjectMember, ProjectMember.project_id == Project.id).where(
            ProjectMember.user_id == login.user_id
        )
    return list(db.scalars(query))


@router.get("/")
def home(request: Request, login: WebSession = Depends(logged_in), db: Session = DB):
    return page(request, "home.html", projects=visible_projects(db, login))
