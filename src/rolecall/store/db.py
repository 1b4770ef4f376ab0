"""Open the rolecall database and bring its schema up to date.

One URL names the database: the ``url`` argument, else ``ROLECALL_DATABASE_URL``, else a
SQLite file in ``ROLECALL_HOME``. SQLite suits one machine and a few annotators;
PostgreSQL (``postgresql+psycopg://user:password@host:5432/dbname``) suits many annotators
at once. Every problem a user can fix -- a malformed URL, a missing driver, a server that
does not answer -- becomes a :class:`~rolecall.errors.ConfigError` that says how.

Migrations ship inside the package (``migrations/``) and run programmatically: no
``alembic.ini`` is needed at run time. A developer adds a revision with::

    from alembic import command
    from rolecall.store.db import alembic_config
    command.revision(alembic_config(), message="...", rev_id="0002")

(autogenerate needs a connection: pass one to ``alembic_config`` and ``autogenerate=True``).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.orm import Session

from rolecall.config import home
from rolecall.errors import ConfigError

ENV_VAR = "ROLECALL_DATABASE_URL"
URL_FORMAT = (
    "sqlite:////absolute/path/rolecall.sqlite or "
    "postgresql+psycopg://user:password@host:5432/dbname"
)
CONNECT_TIMEOUT_S = 5
MIGRATIONS = Path(__file__).with_name("migrations")
# Not Alembic's default "alembic_version": a PostgreSQL database may be shared with
# another Alembic-managed application, and the two must not read each other's revision.
VERSION_TABLE = "rolecall_alembic_version"


def database_url(url: str | None = None) -> str:
    """The URL to use: ``url``, else ``$ROLECALL_DATABASE_URL``, else SQLite in home()."""
    raw = url or os.environ.get(ENV_VAR) or f"sqlite:///{home() / 'rolecall.sqlite'}"
    return _parse(raw).render_as_string(hide_password=False)


def _parse(raw: str) -> URL:
    """Validate a URL early, so a typo fails here and not deep inside a request."""
    try:
        parsed = make_url(raw)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise ConfigError(
            f"malformed database URL {raw!r}",
            fix=f"use {URL_FORMAT} (argument --db or ${ENV_VAR})",
        ) from None
    # A bare postgresql:// means psycopg2 to SQLAlchemy, which rolecall does not depend on.
    if parsed.drivername in ("postgres", "postgresql"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise ConfigError(
            f"database URL {safe_url(parsed)!r} names {backend!r}; rolecall supports "
            "SQLite and PostgreSQL",
            fix=f"use {URL_FORMAT}",
        )
    if backend == "postgresql" and not parsed.database:
        raise ConfigError(
            f"database URL {safe_url(parsed)!r} names no database",
            fix="end the URL with /dbname, e.g. postgresql+psycopg://user@host:5432/rolecall",
        )
    return parsed


def sqlite_file(url: str | None = None) -> Path | None:
    """The file of a SQLite database URL (:func:`database_url`); None for another
    database or one in memory."""
    parsed = _parse(database_url(url))
    path = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or not path or path == ":memory:":
        return None
    return None if path.startswith("file:") else Path(path).expanduser()


def safe_url(url: str | URL) -> str:
    """The URL with every secret masked (``rolecall.secrets``), for messages and logs; a
    parsed URL is shown with its backend's scheme (``postgresql://``, whatever driver
    was added), as the user would write it."""
    from rolecall.secrets import masked

    if not isinstance(url, str):
        # hidden here, not after: the rendered password is decoded ("my pass"), and a
        # decoded password need not look like one
        url = url.set(drivername=url.get_backend_name()).render_as_string(hide_password=True)
    return masked(url)


def _dumps(value: object) -> str:
    # Korean stays readable in the SQLite file and in psql instead of \uXXXX escapes.
    return json.dumps(value, ensure_ascii=False)


def connect(url: str | None = None) -> Engine:
    """An Engine for ``url`` (see :func:`database_url`), checked to answer before return.

    Connecting once here turns "server down", "wrong password" or "no driver" into one
    clear ConfigError at start-up, instead of an error on the first web request.
    """
    parsed = _parse(database_url(url))
    try:
        if parsed.get_backend_name() == "sqlite":
            engine = _sqlite_engine(parsed)
        else:
            engine = _postgres_engine(parsed)
    except (ImportError, NoSuchModuleError) as err:
        raise ConfigError(
            f"no database driver for {parsed.drivername!r}: {err}",
            fix="pip install 'psycopg[binary]' (or: pip install 'rolecall[postgres]') "
            "and use postgresql+psycopg://user:password@host:5432/dbname",
        ) from None
    _check_reachable(engine)
    return engine


SQLITE_BUSY_MS = 30_000


def _sqlite_engine(url: URL) -> Engine:
    path = url.database or ""
    named = path and path != ":memory:" and not path.startswith("file:")
    if named and not Path(path).is_absolute():
        # sqlite:///x.db (three slashes) names a file under the working directory; said,
        # since sqlite:////x.db (four) was likely meant
        logging.getLogger(__name__).warning(
            "the SQLite database is %s: sqlite:/// with three slashes is relative to the "
            "working directory (four for an absolute path: sqlite:////abs/path.sqlite)",
            Path(path).resolve(),
        )
    if named:
        try:
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(
                f"cannot create the folder for SQLite database {path}: {err}",
                fix=f"choose a writable path: sqlite:////absolute/path/rolecall.sqlite "
                f"(argument --db or ${ENV_VAR}), or set ROLECALL_HOME",
            ) from None
    engine = create_engine(url, json_serializer=_dumps)
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    """Per-connection SQLite settings.

    Foreign keys are OFF by default in SQLite (per connection!), so without this a
    dangling item_id would be accepted on SQLite and refused on PostgreSQL. WAL lets the
    web app read while an import writes. Subtle: ``foreign_keys`` is silently ignored
    inside a transaction; the driver opens none before the first DML, so it holds here.
    """
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA journal_mode = WAL")  # an in-memory database answers "memory"
    # concurrent writers (the web app under load) wait for the write lock instead of
    # failing with "database is locked" after the driver's 5 s
    cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_MS}")
    cursor.close()


def _postgres_engine(url: URL) -> Engine:
    connect_args = {}
    if "connect_timeout" not in url.query:
        # Without it an unroutable host hangs for minutes (the OS TCP timeout).
        connect_args["connect_timeout"] = CONNECT_TIMEOUT_S
    return create_engine(url, json_serializer=_dumps, connect_args=connect_args, pool_pre_ping=True)


def _check_reachable(engine: Engine) -> None:
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except DBAPIError as err:
        engine.dispose()
        reason = str(getattr(err, "orig", err) or err).strip().splitlines()
        from rolecall.secrets import masked

        # the driver may quote the password decoded ('unexpected spaces found in "my pw"')
        reason_text = masked(reason[0], engine.url.password) if reason else type(err).__name__
        if engine.dialect.name == "sqlite":
            fix = f"check that the path is writable, or set ${ENV_VAR} / ROLECALL_HOME"
        else:
            fix = (
                "start the PostgreSQL server, or correct host, port, user, password and "
                "database in the URL: postgresql+psycopg://user:password@host:5432/dbname"
            )
        raise ConfigError(
            f"cannot open database {safe_url(engine.url)}: {reason_text}", fix=fix
        ) from None


@contextmanager
def session(engine: Engine) -> Iterator[Session]:
    """One unit of work: commits when the block ends, rolls back if it raises.

    ``expire_on_commit=False`` keeps loaded objects readable after the block, which is
    what a web handler that commits and then renders needs.
    """
    with Session(engine, expire_on_commit=False) as s, s.begin():
        yield s


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic Config for the packaged migrations, built in code (no alembic.ini)."""
    cfg = Config()
    # Subtle: Config values go through configparser interpolation, so "%" must double.
    cfg.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str | None:
    """The newest migration shipped with this version of rolecall."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The migration the database is at; None for an empty database."""
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return context.get_current_revision()


def upgrade(target: str | Engine | None = None, revision: str = "head") -> str | None:
    """Run migrations up to ``revision``; safe to call on every start (a no-op at head).

    ``target`` is a URL (see :func:`database_url`) or an existing Engine -- the latter is
    the only way to migrate an in-memory SQLite database that the caller keeps using.
    Returns the revision the database is at afterwards.
    """
    engine = target if isinstance(target, Engine) else connect(target)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), revision)
        return current_revision(engine)
    finally:
        if engine is not target:
            engine.dispose()


def db_upgrade_command(url: str | None) -> str:
    """``rolecall db upgrade``: migrate to head and say what changed, in one line."""
    engine = connect(url)
    try:
        before = current_revision(engine)
        after = upgrade(engine)
    finally:
        engine.dispose()
    where = safe_url(engine.url)
    if before == after:
        return f"{where}: already at revision {after} (head)"
    return f"{where}: upgraded from {before or 'an empty database'} to revision {after} (head)"
