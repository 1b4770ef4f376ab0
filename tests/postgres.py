"""Fixtures for tests that run twice: on SQLite and on a real PostgreSQL server.

The PostgreSQL server is started once per test session in a temporary directory
(``initdb`` + ``pg_ctl``, trust authentication, 127.0.0.1 on a free port, fsync off) and
each test gets a fresh, empty database on it. Set ``ROLECALL_TEST_POSTGRES_URL`` to use a
server you already run instead (the URL must allow CREATE DATABASE). The PostgreSQL tests
are skipped, with the reason, only when the server binaries cannot be found; a server that
is found but fails to start is a test error, with its log.

Subtle: ``initdb`` and ``postgres`` refuse to run as root (a PostgreSQL safety rule), and
CI containers often run as root. Then the server runs as an unprivileged account -- the
``postgres`` account if the system has one, else ``nobody``, else a ``rolecall-pg`` system
account created with ``useradd`` -- through ``subprocess``'s ``user=``/``group=``; its
directory lives in /tmp (world-traversable, unlike pytest's 0700 tmp tree) and is chowned
to that account.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER_BINARIES = ("initdb", "pg_ctl", "postgres")
ACCOUNTS = ("postgres", "nobody", "rolecall-pg")
EXTERNAL_ENV = "ROLECALL_TEST_POSTGRES_URL"


def _version_key(bindir: Path) -> tuple[int, ...]:
    digits = "".join(c if c.isdigit() else " " for c in bindir.parent.name).split()
    return tuple(int(d) for d in digits)


def find_pg_bindir() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres; None if this machine has none."""
    candidates = []
    if os.environ.get("PG_BINDIR"):
        candidates.append(Path(os.environ["PG_BINDIR"]))
    if found := shutil.which("initdb"):
        # Debian links /usr/local/bin/initdb -> /usr/lib/postgresql/N/bin/initdb.
        candidates.append(Path(found).resolve().parent)
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key)[::-1]
    candidates += [Path("/usr/local/pgsql/bin"), Path("/usr/pgsql/bin")]
    for bindir in candidates:
        if all((bindir / name).is_file() for name in SERVER_BINARIES):
            return bindir
    return None


def _can_run_as(uid: int, gid: int) -> bool:
    try:
        subprocess.run(["true"], user=uid, group=gid, extra_groups=[], check=True)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def server_account() -> tuple[int, int] | None:
    """(uid, gid) to run the server as; None means "as this process" (not root)."""
    if os.geteuid() != 0:
        return None
    for name in ACCOUNTS:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            if name == "rolecall-pg" and shutil.which("useradd"):
                subprocess.run(
                    ["useradd", "--system", "--no-create-home", "--shell", "/bin/false", name],
                    capture_output=True,
                )
                try:
                    entry = pwd.getpwnam(name)
                except KeyError:
                    continue
            else:
                continue
        if entry.pw_uid != 0 and _can_run_as(entry.pw_uid, entry.pw_gid):
            return entry.pw_uid, entry.pw_gid
    pytest.fail(
        "running as root and no unprivileged account (postgres, nobody) can run the "
        "PostgreSQL server; create one (useradd --system postgres) or run as non-root"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TempPostgres:
    """A throw-away PostgreSQL server: initdb in a temp dir, start, stop, delete."""

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.account = server_account()
        self.root = Path(tempfile.mkdtemp(prefix="rcpg-", dir="/tmp" if self.account else None))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = 0

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        kwargs = {}
        if self.account:
            kwargs = {"user": self.account[0], "group": self.account[1], "extra_groups": []}
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
        env["HOME"] = str(self.root)  # the account's home may not exist (nobody's does not)
        return subprocess.run(
            args, capture_output=True, text=True, env=env, cwd=self.root, timeout=120, **kwargs
        )

    def start(self) -> str:
        if self.account:
            os.chown(self.root, *self.account)
        init = self._run(
            str(self.bindir / "initdb"), "-D", str(self.data), "-U", "rolecall",
            "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync",
        )  # fmt: skip
        if init.returncode != 0:
            pytest.fail(f"initdb failed:\n{init.stdout}\n{init.stderr}")
        for _attempt in range(3):  # another process may grab the free port first
            self.port = free_port()
            # A non-UTC server zone proves timestamps come back normalised to UTC.
            options = (
                f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c timezone=Asia/Seoul"
            )
            started = self._run(
                str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
                "-w", "-t", "60", "-o", options, "start",
            )  # fmt: skip
            if started.returncode == 0:
                return f"postgresql+psycopg://rolecall@127.0.0.1:{self.port}/postgres"
        log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
        pytest.fail(f"PostgreSQL did not start:\n{started.stderr}\n{log}")

    def stop(self) -> None:
        if self.data.exists():
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                      "-w", "stop")  # fmt: skip
        shutil.rmtree(self.root, ignore_errors=True)


def _with_database(url: str, name: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=name).render_as_string(hide_password=False)


def _admin(url: str, statement: str) -> None:
    """Run CREATE/DROP DATABASE, which cannot run inside a transaction."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(statement))
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of an empty database on a PostgreSQL server that lives for the test session."""
    pytest.importorskip("psycopg", reason="psycopg not installed: pip install 'psycopg[binary]'")
    if external := os.environ.get(EXTERNAL_ENV):
        yield external
        return
    bindir = find_pg_bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH or in "
            f"/usr/lib/postgresql/*/bin; install postgresql, set PG_BINDIR or {EXTERNAL_ENV}"
        )
    server = TempPostgres(bindir)
    try:
        admin_url = server.start()
        _admin(admin_url, "CREATE DATABASE rolecall")
        yield _with_database(admin_url, "rolecall")
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path) -> Iterator[str]:
    """A URL to a fresh, empty database: a SQLite file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'rolecall.sqlite'}"
        return
    server_url = request.getfixturevalue("postgres_url")
    name = f"t_{uuid.uuid4().hex[:12]}"
    _admin(server_url, f"CREATE DATABASE {name}")
    try:
        yield _with_database(server_url, name)
    finally:
        _admin(server_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
