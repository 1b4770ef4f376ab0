"""A person's settings, kept with their account: the pages' language and the mask that
blurs offensive text (``users.language``, ``users.mask``; Korean and on by default).

Each is a small form in the page header or on an item page that claims a one-time token
(``web/once.py``) and returns to the page it was sent from. The language is also kept in
a cookie, for the pages before the next login (``i18n.remember``). The keyboard script of
the item pages is served here too, to logged-in people only (``keys.js``: the pages'
content policy allows scripts from this server, never inline ones).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from rolecall.store import WebSession
from rolecall.web.deps import DB, Refused, logged_in, writer
from rolecall.web.i18n import LANGUAGES, remember
from rolecall.web.login import safe_next
from rolecall.web.once import Once, answered, repeat_of

router = APIRouter()
KEYS_JS = Path(__file__).with_name("static") / "keys.js"


@router.post("/settings/language")
def set_language(
    request: Request,
    once: Once,
    language: str = Form(..., max_length=8),
    next: str = Form("/", max_length=512),  # the page the form was sent from
    login: WebSession = Depends(writer),
    db: Session = DB,
):
    back = safe_next(next)
    if repeat := repeat_of(db, login, once, back):
        return repeat
    if language not in LANGUAGES:
        raise Refused(
            422,
            "no pages in {language}: pick one of {languages}",
            language=repr(language),
            languages=", ".join(LANGUAGES),
        )
    login.user.language = language
    response = answered(db, once, back)
    remember(response, language, request.app.state.secure_cookies)
    return response


@router.post("/settings/mask")
def set_mask(
    once: Once,
    mask: str = Form(..., pattern="^(on|off)$"),
    next: str = Form("/", max_length=512),  # the page the form was sent from
    login: WebSession = Depends(writer),
    db: Session = DB,
):
    back = safe_next(next)
    if repeat := repeat_of(db, login, once, back):
        return repeat
    login.user.mask = mask == "on"
    return answered(db, once, back)


def _script(path: Path) -> Response:
    """One of the app's own scripts, cached by the browser for an hour."""
    return Response(
        path.read_bytes(),
        media_type="text/javascript",
        headers={"cache-control": "private, max-age=3600"},
    )


@router.get("/keys.js")
def keys_script(_login: WebSession = Depends(logged_in)):
    return _script(KEYS_JS)
