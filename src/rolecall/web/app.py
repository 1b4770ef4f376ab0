"""``create_app(engine)``: the FastAPI app of ``rolecall serve``.

Parts (one router each): ``login.py`` (log in / out, home), ``chat.py`` (chat with Fix and
Save), ``annotate.py`` (labelling queues: dialogues, K/DA pairs, SSA; uploads and SSA items
in ``items.py``), ``admin.py`` (accounts, projects, members), ``dashboard.py`` (error
rates, SSA, throughput, agreement; CSV, SVG), ``export.py`` (feedback and labels ->
training data). Shared dependencies (database session, login, CSRF) are in ``deps.py``;
the accounts and sessions themselves in ``auth.py``; the bots behind the chat in
``bots.py``.

Every response carries security headers (no framing, no sniffing, a same-origin content
policy); request bodies over ``max_body`` bytes are refused with 413 before they are read.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse
from sqlalchemy.engine import Engine
from starlette.exceptions import HTTPException as StarletteHTTPException

from rolecall.errors import RolecallError
from rolecall.web.deps import NotLoggedIn, Refused, page

MAX_BODY = 1_000_000  # bytes of one request body
HEADERS = [(b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"same-origin"),
           (b"content-security-policy",
            b"default-src 'self'; style-src 'self' 'unsafe-inline'; form-action 'self'; "
            b"frame-ancestors 'none'")]


class Guard:
    """ASGI middleware: refuse oversized bodies (413), add the security headers."""

    def __init__(self, app, max_body: int):
        self.app, self.max_body = app, max_body

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            return await PlainTextResponse("request body too large", 413)(scope, receive, send)
        seen = 0

        async def limited_receive():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_body:
                raise Refused(413, "request body too large")
            return message

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)

        await self.app(scope, limited_receive, send_with_headers)


def routers() -> list:
    from rolecall.web import admin, annotate, chat, dashboard, export, login

    return [login.router, chat.router, annotate.router, admin.router, dashboard.router,
            export.router]


def create_app(engine: Engine, max_body: int = MAX_BODY) -> FastAPI:
    app = FastAPI(title="rolecall", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.engine = engine
    for router in routers():
        app.include_router(router)

    @app.exception_handler(NotLoggedIn)
    async def _not_logged_in(request: Request, _exc: NotLoggedIn):
        if request.method == "GET":
            return RedirectResponse(f"/login?next={request.url.path}", status_code=303)
        return PlainTextResponse("log in first", status_code=401)

    @app.exception_handler(Refused)
    async def _refused(request: Request, exc: Refused):
        return page(request, "error.html", exc.status, message=exc.message)

    @app.exception_handler(RolecallError)
    async def _bad_input(request: Request, exc: RolecallError):
        return page(request, "error.html", 400, message=str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:])}: {e['msg']}"
                             for e in exc.errors())
        return page(request, "error.html", 422, message=f"invalid input: {problems}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        return HTMLResponse(f"<p>{exc.status_code}: not here</p>", status_code=exc.status_code)

    app.add_middleware(Guard, max_body=max_body)
    return app
