"""The LLM call cache on a PostgreSQL server: one cache that every machine of a cluster shares.

Same interface, table and columns as the SQLite ``Cache`` (``llm/cache.py``); chosen by
``open_cache`` when ``--cache`` / ``ROLECALL_CACHE`` is a ``postgresql://`` URL. Each
finished call is committed at once, so a killed run keeps every call any machine finished,
and a re-run on any machine asks the backend only for the rest.

Subtle: two Ray actors (or two machines) may finish the same call; the second insert is
``ON CONFLICT (key) DO NOTHING``, and both answers are valid samples of the same request.
"""

from __future__ import annotations

import time

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from rolecall.errors import ConfigError, RolecallError
from rolecall.llm.base import Completion, Request

CONNECT_TIMEOUT_S = 5
URL_FORMAT = "postgresql://user:password@host:5432/dbname"
# Calls run for seconds and a cache query for a millisecond: a few connections per client
# are plenty, and a cluster of many actors must stay under the server's max_connections.
POOL_SIZE, MAX_OVERFLOW = 2, 2
# Serialises the CREATE TABLE of many actors starting at once (IF NOT EXISTS alone races).
SCHEMA_LOCK = 0x726F6C6563616C6C  # "rolecall"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    sample_index INTEGER NOT NULL,
    request TEXT NOT NULL,
    completion TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL
)
"""
_COLUMNS = "key, backend, model, sample_index, request, completion, created"
_FIX = (
    f"start the PostgreSQL server, or correct host, port, user, password and database in "
    f"the cache URL ({URL_FORMAT}; --cache or ROLECALL_CACHE)"
)


def parse_url(raw: str) -> URL:
    """The URL with the psycopg 3 driver (a bare ``postgresql://`` means psycopg2 to
    SQLAlchemy, which rolecall does not depend on)."""
    try:
        url = make_url(raw)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise ConfigError(f"malformed cache URL {raw!r}", fix=f"use {URL_FORMAT}") from None
    url = url.set(drivername="postgresql+psycopg")
    if not url.database:
        raise ConfigError(
            f"cache URL {safe(url)!r} names no database",
            fix=f"end the URL with /dbname: {URL_FORMAT}",
        )
    return url


def safe(url: URL) -> str:
    """The URL with every secret masked, for messages (``store.safe_url``)."""
    from rolecall.store.db import safe_url

    return safe_url(url)


class PostgresCache:
    """A thread-safe handle on the ``calls`` table of one PostgreSQL database (a small
    connection pool; each ``get`` / ``put`` takes a connection for one statement)."""

    def __init__(self, url: str):
        parsed = parse_url(url)
        self.path = safe(parsed)  # what messages show, as Cache.path does
        try:
            self._engine = _engine(parsed)
        except (ImportError, NoSuchModuleError):
            raise RolecallError(
                f"cannot open the PostgreSQL cache {self.path}: psycopg is not installed",
                fix="pip install 'rolecall[postgres]' (or: pip install 'psycopg[binary]')",
            ) from None
        try:
            with self._engine.begin() as conn:
                conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": SCHEMA_LOCK})
                conn.execute(text(_SCHEMA))
        except DBAPIError as exc:
            self._engine.dispose()
            raise self._error("cannot open", exc) from None
        try:  # another program's table named calls
            with self._engine.connect() as conn:
                conn.execute(text(f"SELECT {_COLUMNS} FROM calls LIMIT 0"))
        except DBAPIError as exc:
            self._engine.dispose()
            raise ConfigError(
                f"{self.path} is not a rolecall LLM cache: {_reason(exc, self._engine.url)}",
                fix="point --cache (or ROLECALL_CACHE) at a database without a 'calls' table",
            ) from None

    def _error(self, doing: str, exc: DBAPIError) -> RolecallError:
        message = f"{doing} the PostgreSQL cache {self.path}: {_reason(exc, self._engine.url)}"
        return RolecallError(message, fix=_FIX)

    def get(self, key: str) -> Completion | None:
        try:
            with self._engine.connect() as conn:
                row = conn.execute(
                    text("SELECT completion FROM calls WHERE key = :key"), {"key": key}
                ).first()
        except DBAPIError as exc:
            raise self._error("cannot read", exc) from None
        return Completion.model_validate_json(row[0]) if row else None

    def put(
        self,
        key: str,
        scheme: str,
        model_id: str,
        request: Request,
        sample_index: int,
        completion: Completion,
    ) -> None:
        row = {
            "key": key,
            "backend": scheme,
            "model": model_id,
            "sample_index": sample_index,
            "request": request.model_dump_json(),
            "completion": completion.model_dump_json(),
            "created": time.time(),
        }
        try:
            with self._engine.begin() as conn:  # committed when the block ends
                conn.execute(
                    text(
                        f"INSERT INTO calls ({_COLUMNS}) VALUES (:key, :backend, :model, "
                        ":sample_index, :request, :completion, :created) "
                        "ON CONFLICT (key) DO NOTHING"
                    ),
                    row,
                )
        except DBAPIError as exc:
            raise self._error("cannot write to", exc) from None

    def __len__(self) -> int:
        try:
            with self._engine.connect() as conn:
                return conn.execute(text("SELECT COUNT(*) FROM calls")).scalar_one()
        except DBAPIError as exc:
            raise self._error("cannot read", exc) from None

    def close(self) -> None:
        self._engine.dispose()


def _reason(exc: DBAPIError, url: URL) -> str:
    """The driver's own first line, without SQLAlchemy's wrapping."""
    return _first(getattr(exc, "orig", None) or exc, url)


def _engine(url: URL) -> Engine:
    connect_args = {}
    if "connect_timeout" not in url.query:
        # Without it an unroutable host hangs for minutes (the OS TCP timeout).
        connect_args["connect_timeout"] = CONNECT_TIMEOUT_S
    return create_engine(
        url,
        connect_args=connect_args,
        pool_size=POOL_SIZE,
        max_overflow=MAX_OVERFLOW,
        pool_pre_ping=True,  # a restarted server costs one reconnect, not a failed call
    )


def connect_readonly(raw: str):
    """A read-only psycopg connection to the cache (for ``rolecall logs``): its ``execute``
    takes ``%s`` placeholders, otherwise it reads rows as ``sqlite3`` does."""
    url = parse_url(raw)
    try:
        import psycopg
    except ImportError:
        raise RolecallError(
            f"cannot read the PostgreSQL cache {safe(url)}: psycopg is not installed",
            fix="pip install 'rolecall[postgres]' (or: pip install 'psycopg[binary]')",
        ) from None
    conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
    try:
        db = psycopg.connect(
            conninfo,
            connect_timeout=CONNECT_TIMEOUT_S,
            autocommit=True,
            options="-c default_transaction_read_only=on",
        )
    except psycopg.Error as exc:
        message = f"cannot read the PostgreSQL cache {safe(url)}: {_first(exc, url)}"
        raise RolecallError(message, fix=_FIX) from None
    try:
        db.execute(f"SELECT {_COLUMNS} FROM calls LIMIT 0")
    except psycopg.errors.UndefinedTable:
        db.close()
        raise ConfigError(
            f"{safe(url)} holds no LLM cache",
            fix="pass --cache URL (or set ROLECALL_CACHE) to the database your runs used; "
            "the cache is made by the first command that calls a model",
        ) from None
    except psycopg.Error as exc:
        db.close()
        raise ConfigError(
            f"{safe(url)} is not a rolecall LLM cache: {_first(exc, url)}",
            fix="point --cache (or ROLECALL_CACHE) at the database your runs used",
        ) from None
    return db


def _first(exc: BaseException, url: URL) -> str:
    """An error's first line (psycopg adds hints and the server's detail below it), with
    ``url``'s password masked: the driver may quote it decoded ('unexpected spaces found
    in "my pw"'), where it looks like no password."""
    from rolecall.secrets import masked

    lines = str(exc).strip().splitlines()
    return masked(lines[0], url.password) if lines else type(exc).__name__
