"""``create_app(engine)``: the FastAPI app of ``rolecall serve``.

Parts (one router each): ``login.py`` (log in / out, home), ``chat.py`` (chat with Fix and
Save), ``annotate.py`` (labelling queues: dialogues, K/DA pairs, SSA; uploads and SSA items
in ``items.py``; progress and keys in ``pace.py``), ``preferences.py`` (a person's
language and mask; the keys' script), ``admin.py`` (accounts, projects, members),
``dashboard.py`` (error rates, SSA, throughput, agreement; CSV, SVG), ``export.py``
(feedback and labels -> training data). Shared dependencies (database session, login,
CSRF) are in ``deps.py``; the accounts and sessions themselves in ``auth.py``; the bots
behind the chat in ``bots.py``; the pages' two languages in ``i18n.py``.

Every response carries security headers (no framing, no sniffing, a same-origin content
policy), the 413 and 500 ones included; request bodies over ``max_body`` bytes are refused
with 413 before the app sees them, whether declared (``Content-Length``) or chunked. An
error the app did not expect is a bare 500 page that shows nothing internal (the traceback
goes to the server's log); an error of the bot or a server behind it shows annotators a
fixed message and a reference, its full text going to the log under that reference; bot
versions shown to them lose internal URLs and paths (``deps.public``).
"""

from __future__ import annotations

import logging
import secrets
from http.cookies import CookieError, SimpleCookie
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from starlette.exceptions import HTTPException as StarletteHTTPException

from rolecall.errors import RolecallError
from rolecall.secrets import masked
from rolecall.web.auth import dummy_hash, server_secret
from rolecall.web.deps import NotLoggedIn, Refused, error_page
from rolecall.web.i18n import COOKIE, N_, chosen, tr, translate
from rolecall.web.throttle import LoginLimits, LoginThrottle

MAX_BODY = 1_000_000  # bytes of one request body
HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (
        b"content-security-policy",
        b"default-src 'self'; style-src 'self' 'unsafe-inline'; form-action 'self'; "
        b"frame-ancestors 'none'",
    ),
]


class Guard:
    """ASGI middleware: refuse oversized bodies (413), add the security headers, answer an
    unexpected exception with a plain 500 (the exception still reaches the server log)."""

    def __init__(self, app, max_body: int):
        self.app, self.max_body = app, max_body

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def send_with_headers(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)

        language = _cookie_language(scope)
        too_large = PlainTextResponse(
            translate(language, TOO_LARGE, {"limit": f"{self.max_body:,}"}), 413
        )
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            return await too_large(scope, receive, send_with_headers)
        # chunked, or no body: read it all here, up to the limit (a declared length is
        # held to by the server itself)
        body = receive if declared is not None else await self._buffered(receive)
        if body is None:
            return await too_large(scope, receive, send_with_headers)
        try:
            await self.app(scope, body, send_with_headers)
        except Exception:
            if not started:
                await PlainTextResponse(translate(language, CRASHED), 500)(
                    scope, receive, send_with_headers
                )
            raise

    async def _buffered(self, receive):
        """A ``receive`` replaying the whole body, or None when it is over the limit."""
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if size > self.max_body:
                return None
            if message["type"] != "http.request" or not message.get("more_body"):
                break

        async def replay():
            return messages.pop(0) if messages else await receive()

        return replay


def _cookie_language(scope) -> str:
    """The language of an answer made before the app sees the request (no login yet)."""
    cookies = SimpleCookie()
    try:
        cookies.load(dict(scope["headers"]).get(b"cookie", b"").decode("latin-1"))
    except CookieError:
        return chosen(None)
    morsel = cookies.get(COOKIE)
    return chosen(morsel.value if morsel else None)


LOG = logging.getLogger("rolecall.web")
TOO_LARGE = N_("413: the request body is over {limit} bytes")
CRASHED = N_("500: something went wrong on the server; it is logged there")
CLASH = N_(
    "someone changed this at the same moment (another tab or window?): nothing of this "
    "form was saved; reload the page and submit again"
)
UPSTREAM = N_(
    "the bot or a server behind it failed; nothing you entered was lost. Try again later, "
    "or give an admin this reference: {reference} (the details are in the server log)"
)


def routers() -> list:
    from rolecall.web import (
        admin,
        annotate,
        chat,
        dashboard,
        export,
        login,
        preferences,
        review,
        worklist,
    )

    return [
        login.router,
        preferences.router,
        chat.router,
        annotate.router,
        admin.router,
        dashboard.router,
        export.router,
        review.router,
        worklist.router,
    ]


def create_app(
    engine: Engine,
    max_body: int = MAX_BODY,
    *,
    secure_cookies: bool = False,
    secret: bytes | None = None,
    secret_file: Path | None = None,
    login_limits: LoginLimits | None = None,
    throttle: LoginThrottle | None = None,
) -> FastAPI:
    """The app. ``secure_cookies``: cookies only over HTTPS (set it behind TLS);
    ``secret`` / ``secret_file``: the signing key (``auth.server_secret``; default: a new
    random one); ``login_limits`` or a ready ``throttle``: login throttling."""
    app = FastAPI(title="rolecall", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.engine = engine
    app.state.secure_cookies = secure_cookies
    app.state.secret = secret or server_secret(secret_file)
    app.state.throttle = throttle or LoginThrottle(login_limits or LoginLimits())
    dummy_hash()  # made now, so that the first unknown user costs what the others do
    for router in routers():
        app.include_router(router)

    @app.exception_handler(NotLoggedIn)
    async def _not_logged_in(request: Request, _exc: NotLoggedIn):
        if request.method == "GET":
            return RedirectResponse(f"/login?next={request.url.path}", status_code=303)
        return PlainTextResponse(tr(request, "log in first"), status_code=401)

    @app.exception_handler(Refused)
    async def _refused(request: Request, exc: Refused):
        return error_page(request, exc.status, message=tr(request, exc.message, **exc.values))

    @app.exception_handler(RolecallError)
    async def _failed(request: Request, exc: RolecallError):
        # the full text (a model server's answer, a traceback, paths) goes to the server
        # log under a reference; an annotator sees a fixed message with that reference
        reference, details = secrets.token_hex(4), masked(exc)
        LOG.error("reference %s: %s", reference, details)
        viewer = getattr(request.state, "viewer", None)
        admin = viewer is not None and viewer.role == "admin"
        if admin:
            message = tr(
                request, "{details} (reference {reference})", details=details, reference=reference
            )
        else:
            message = tr(request, UPSTREAM, reference=reference)
        return error_page(request, 400, message=message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:])}: {e['msg']}" for e in exc.errors()
        )
        if any(e["loc"][-1] == "once" for e in exc.errors()):
            problems += tr(
                request, " (the form's one-time token: reload the page and submit again)"
            )
        message = tr(request, "invalid input: {problems}", problems=problems)
        return error_page(request, 422, message=message)

    @app.exception_handler(IntegrityError)
    async def _clash(request: Request, exc: IntegrityError):
        # two different forms changing one thing at once (two tabs): the later one lost
        LOG.warning("write refused by a database constraint: %s", masked(exc.orig or exc))
        return error_page(request, 409, message=tr(request, CLASH))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        text = tr(request, "{status}: not here", status=exc.status_code)
        return HTMLResponse(f"<p>{text}</p>", status_code=exc.status_code)

    app.add_middleware(Guard, max_body=max_body)
    return app
