"""Persistent SQLite cache of LLM calls (``open_cache`` also opens the PostgreSQL form).

Key = SHA-256 of the canonical JSON of (backend scheme, model id, request, sample index);
the request holds the prompt or messages, the scored text and every sampling parameter.
Each completed call is committed at once (WAL journal), so a run killed at any point keeps
every finished call and a re-run asks the backend only for the rest. Failures are never
cached: a re-run tries them again. A ``postgresql://`` URL in place of the file names the
shared form (``cache_postgres.py``): one cache for every machine of a cluster.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rolecall.errors import ConfigError, InputFileError
from rolecall.llm.base import Completion, Request

if TYPE_CHECKING:
    from rolecall.llm.cache_postgres import PostgresCache

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    sample_index INTEGER NOT NULL,
    request TEXT NOT NULL,
    completion TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(scheme: str, model_id: str, request: Request, sample_index: int) -> str:
    payload = {
        "backend": scheme,
        "model": model_id,
        "request": request.model_dump(mode="json"),
        "sample": sample_index,
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


def is_postgres_url(where: object) -> bool:
    """Whether ``where`` (a ``--cache`` value) names a PostgreSQL cache, not a file."""
    return isinstance(where, str) and where.split("://", 1)[0].lower() in POSTGRES_SCHEMES


def shown(where: str | Path) -> str:
    """``where`` as it may be printed: every secret masked (``rolecall.secrets``)."""
    from rolecall.secrets import masked

    return masked(where)


def open_cache(where: str | Path) -> Cache | PostgresCache:
    """The cache ``where`` names: a SQLite file (or ``":memory:"``), or, for a
    ``postgresql://`` / ``postgresql+psycopg://`` URL, a table on that PostgreSQL server
    (``PostgresCache``, the same interface)."""
    if is_postgres_url(where):
        from rolecall.llm.cache_postgres import PostgresCache  # SQLAlchemy: only when used

        return PostgresCache(str(where))
    refuse_other_url(where)
    return Cache(where)


def refuse_other_url(where: str | Path) -> None:
    """A ``ConfigError`` for a ``--cache`` that is a URL but not a PostgreSQL one (another
    driver's, mysql://...): read as a file path it would keep the URL, password and all."""
    if isinstance(where, str) and "://" in where and not is_postgres_url(where):
        raise ConfigError(
            f"the LLM cache {where.split('://')[0]}:// is not a file or a PostgreSQL URL",
            fix="give --cache (or ROLECALL_CACHE) a file path (a SQLite cache) or "
            "postgresql://user:password@host:5432/dbname (a cache a cluster shares)",
        )


def _write_ahead_log(db: sqlite3.Connection, tries: int = 100) -> None:
    """WAL mode, so that many processes (Ray workers) read and write one cache file.
    subtle: switching a new file to WAL takes an exclusive lock and SQLite answers "database
    is locked" at once, without waiting the connection's timeout, when another process
    opens the same new file at that moment; so a busy switch is tried again, and a file
    already in WAL mode is left as it is."""
    for attempt in range(tries):
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == tries - 1:
                raise
            time.sleep(0.05)


class Cache:
    """A thread-safe handle on one cache file (``":memory:"`` for a throwaway cache)."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            _write_ahead_log(self._db)
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
            self._db.commit()
        except sqlite3.DatabaseError as exc:
            raise InputFileError(
                self.path,
                f"is not a usable rolecall cache ({exc})",
                fix="point --cache (or ROLECALL_CACHE) at another file, or delete this one",
            ) from None

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute("SELECT completion FROM calls WHERE key = ?", (key,)).fetchone()
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
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    scheme,
                    model_id,
                    sample_index,
                    request.model_dump_json(),
                    completion.model_dump_json(),
                    time.time(),
                ),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
