"""What every route depends on: a database session, the login, the CSRF check, pages.

Routes declare ``login: WebSession = Depends(logged_in)`` to read and
``login: WebSession = Depends(writer)`` to write (login + CSRF token from the form); an
admin-only route uses ``admin`` / ``admin_writer``. Nothing is served to a request
without a valid login, except the login page itself.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Form, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment
from sqlalchemy.orm import Session

from rolecall.store import Project, Role, WebSession
from rolecall.web.auth import SESSION_COOKIE, csrf_matches, find_session
from rolecall.web.i18n import environment, language_of
from rolecall.web.settings import time_zone

_INTERNAL = re.compile(
    r"\b[a-z][a-z0-9+.-]*://[^\s'\")<>#]+|(?<![\w.~])/(?:[\w.-]+/)+[\w.@-]*", re.I
)


def public(text: str | None) -> str:
    """``text`` for an annotator's eyes: internal URLs (an LLM server's address) and
    server paths replaced by ``[internal]``."""
    return _INTERNAL.sub("[internal]", text or "")


def dialect_insert(db: Session, table: Any):
    """The database's own INSERT (PostgreSQL or SQLite), for ``ON CONFLICT`` upserts."""
    if db.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


@functools.cache
def templates(language: str) -> Environment:
    """The page templates in ``language`` (``i18n.environment``) with the app's filters."""
    env = environment(language)
    env.filters["public"] = public
    # a fresh one-time token for each rendered form that claims one (web/once.py)
    env.globals["once"] = lambda: secrets.token_urlsafe(18)
    return env


MAX_TEXT = 2000  # characters of one chat message or free-text field
# ids are INTEGER columns, 32-bit on PostgreSQL: a larger id (2^63 and past included) is
# invalid input (422), not a database error (500)
MAX_ID = 2**31 - 1
ID = Annotated[int, PathParam(ge=1, le=MAX_ID)]  # every id in a route's path


@dataclass(frozen=True)
class Viewer:
    username: str
    role: str
    csrf: str
    language: str  # the person's settings (users.language, users.mask)
    mask: bool


class NotLoggedIn(Exception):
    """No valid login: pages redirect to /login, other requests get 401."""


class Refused(Exception):
    """A request that must not change anything: status code and a message for the user,
    in the catalogue's words (``i18n``): ``message`` is translated when the page is shown,
    then its ``{name}`` fields are filled from ``values``."""

    def __init__(self, status: int, message: str, **values: Any):
        super().__init__(message.format(**values) if values else message)
        self.status, self.message, self.values = status, message, values


def database(request: Request) -> Iterator[Session]:
    """One session per request: committed when the route returns, rolled back on error."""
    with Session(request.app.state.engine, expire_on_commit=False) as db:
        try:
            yield db
            db.commit()
        except BaseException:
            db.rollback()
            raise


# committed when the route function returns, *before* the response is sent: a browser
# following the redirect of a write must see the write (FastAPI's default runs a yield
# dependency's exit after the response)
DB = Depends(database, scope="function")


def logged_in(request: Request, db: Session = DB) -> WebSession:
    login = find_session(db, request.cookies.get(SESSION_COOKIE))
    if login is None:
        raise NotLoggedIn()
    # plain values for the page header: error pages render after a rollback has expired
    # the ORM objects
    user = login.user
    request.state.viewer = Viewer(
        user.username, user.role.value, login.csrf_token, user.language, user.mask
    )
    return login


def writer(
    csrf: str = Form("", max_length=128), login: WebSession = Depends(logged_in)
) -> WebSession:
    if not csrf_matches(login.csrf_token, csrf):
        raise Refused(
            403, "the form's security token is missing or stale: reload the page and submit again"
        )
    return login


def admin(login: WebSession = Depends(logged_in)) -> WebSession:
    if login.user.role != Role.ADMIN:
        raise Refused(403, "only an admin may do this")
    return login


def admin_writer(login: WebSession = Depends(writer)) -> WebSession:
    return admin(login)


def project_or_404(db: Session, project_id: int) -> Project:
    """A project by id for an admin route (admins see every project)."""
    project = db.get(Project, project_id)
    if project is None:
        raise Refused(404, "no such project")
    return project


def page(request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
    """A rendered page in the request's language; the template sees the login (``me``),
    its CSRF token, the page's own path (``here``: where a settings form returns) and the
    time zone its times are written in (``zone``: the page's project's, else KST)."""
    viewer = getattr(request.state, "viewer", None)
    project = values.get("project")
    zone = time_zone(project.settings if isinstance(project, Project) else None)
    html = (
        templates(language_of(request))
        .get_template(template)
        .render(
            me=viewer,
            csrf=viewer.csrf if viewer else "",
            here=request.url.path,
            zone=zone,
            **values,
        )
    )
    return HTMLResponse(html, status_code=status)


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    """The error page, whose "back" link opens the page the form was on (this site's
    Referer; a script's ``history.back()`` is what the app's own CSP blocks), focused so
    that Enter follows it; home when there is no such page."""
    from urllib.parse import urlsplit

    referer = urlsplit(request.headers.get("referer", ""))
    here = request.url
    same_site = referer.netloc == here.netloc and referer.path.startswith("/")
    back = referer.path + (f"?{referer.query}" if referer.query else "") if same_site else "/"
    if request.method == "GET" and referer.path == here.path:  # it would open this error again
        back = "/"
    return page(request, "error.html", status, message=message, back=back)


def project_download(
    db: Session, project_id: int, name: str, media_type: str, body: Callable[[int], str]
) -> Response:
    """A project's file for the browser to save as ``project-ID-NAME``: ``body(project
    id)``, made once the project is known to exist (a 404 before any work otherwise)."""
    project = project_or_404(db, project_id)
    return Response(
        body(project.id),
        media_type=media_type,
        headers={"content-disposition": f'attachment; filename="project-{project.id}-{name}"'},
    )
