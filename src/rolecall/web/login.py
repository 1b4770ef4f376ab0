"""Log in, log out, and the home page (the projects the person works on)."""

from __future__ import annotations

import secrets

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse
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

router = APIRouter()


def _safe_next(target: str) -> str:
    """Only a local path: never redirect a login to another site."""
    return target if target.startswith("/") and not target.startswith("//") else "/"


@router.get("/login")
def login_form(request: Request, next: str = "/"):
    token = secrets.token_urlsafe(24)
    response = page(request, "login.html", login_csrf=token, next=_safe_next(next))
    response.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict", max_age=3600)
    return response


@router.post("/login")
def login(request: Request, username: str = Form(..., max_length=64),
          password: str = Form(..., max_length=256), csrf: str = Form("", max_length=128),
          next: str = Form("/", max_length=512), db: Session = DB):
    if not csrf_matches(request.cookies.get(LOGIN_COOKIE), csrf):
        raise Refused(403, "the login form expired: reload the page and log in again")
    user = authenticate(db, username, password)
    if user is None:
        token = secrets.token_urlsafe(24)
        response = page(request, "login.html", 401, login_csrf=token, next=_safe_next(next),
                        error="wrong user name or password")
        response.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict",
                            max_age=3600)
        return response
    response = RedirectResponse(_safe_next(next), status_code=303)
    response.set_cookie(SESSION_COOKIE, open_session(db, user), httponly=True, samesite="lax",
                        max_age=SESSION_HOURS * 3600)
    response.delete_cookie(LOGIN_COOKIE)
    return response


@router.post("/logout")
def logout(request: Request, _login: WebSession = Depends(writer),
           db: Session = DB):
    close_session(db, request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response


def visible_projects(db: Session, login: WebSession) -> list[Project]:
    """All projects for an admin; the ones an annotator is a member of otherwise."""
    query = select(Project).order_by(Project.name)
    if login.user.role != Role.ADMIN:
        query = query.join(ProjectMember, ProjectMember.project_id == Project.id).where(
            ProjectMember.user_id == login.user_id)
    return list(db.scalars(query))


@router.get("/")
def home(request: Request, login: WebSession = Depends(logged_in),
         db: Session = DB):
    return page(request, "home.html", projects=visible_projects(db, login))
