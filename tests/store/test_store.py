"""rolecall.store on SQLite and on a real PostgreSQL server (see conftest.db_url)."""

from __future__ import annotations

import importlib.util
import socket
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import delete, inspect, select, text
from sqlalchemy.exc import IntegrityError, StatementError

from rolecall.errors import ConfigError
from rolecall.store import (
    Annotation,
    Assignment,
    Base,
    ChatSession,
    ChatTurn,
    Item,
    ItemKind,
    Project,
    RedteamRate,
    Role,
    Speaker,
    TurnStatus,
    User,
    alembic_config,
    connect,
    current_revision,
    database_url,
    db_upgrade_command,
    head_revision,
    session,
    upgrade,
)
from rolecall.store import db as store_db

KOREAN = {
    "text": "오늘 날씨가 참 좋네요! 산책 다녀오셨어요? 😊",
    "turns": [
        {"speaker": "시스템", "text": "식사는 하셨어요?"},
        {"speaker": "사용자", "text": "네"},
    ],
    "note": 'quotes " and \\ backslash, tab\t, newline\n, nul-free',
    "score": 0.5,
    "ok": True,
    "none": None,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def engine(db_url):
    engine = connect(db_url)
    upgrade(engine)
    yield engine
    engine.dispose()


def _seed(s) -> tuple[User, Project, Item]:
    user = User(username="annotator1", password_hash="argon2$x", role=Role.ANNOTATOR)
    project = Project(name="carecall", settings={"annotators_per_item": 3})
    item = Item(project=project, kind=ItemKind.DIALOGUE, payload=KOREAN, source="gen.jsonl:7")
    s.add_all([user, project, item])
    s.flush()
    return user, project, item


# --- migrations -------------------------------------------------------------------------


def test_upgrade_creates_every_table_from_empty_and_is_idempotent(db_url):
    engine = connect(db_url)
    try:
        assert current_revision(engine) is None
        assert inspect(engine).get_table_names() == []
        assert upgrade(db_url) == head_revision() == "0007"
        tables = set(inspect(engine).get_table_names())
        assert tables == set(Base.metadata.tables) | {"rolecall_alembic_version"}
        assert tables >= {"users", "projects", "items", "assignments", "annotations",
                          "chat_sessions", "chat_turns", "redteam_rates",
                          "form_submissions"}  # fmt: skip
        assert upgrade(db_url) == "0007"  # second run: a no-op, not an error
        assert upgrade(engine) == "0007"
        assert set(inspect(engine).get_table_names()) == tables
    finally:
        engine.dispose()


def test_models_match_migrations(engine):
    """The hand-written migration and models.py describe the same schema."""
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "version_table": "rolecall_alembic_version"}
        )
        assert compare_metadata(context, Base.metadata) == []


def test_downgrade_to_empty_and_back(engine):
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "base")
    assert current_revision(engine) is None
    assert set(inspect(engine).get_table_names()) <= {"rolecall_alembic_version"}
    assert upgrade(engine) == "0007"


def test_user_settings_arrive_with_defaults_and_leave_the_accounts_alone(engine):
    """0005 on a database with accounts: each gets Korean and the mask, and its sessions,
    memberships and form tokens stay (no table copy that cascades)."""
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0004")
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO users (id, username, password_hash, role, created) "
                "VALUES (7, 'old', 'h', 'annotator', CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(text("INSERT INTO form_submissions (token, user_id, created) "
                          "VALUES ('t0123456789abcdef', 7, CURRENT_TIMESTAMP)"))  # fmt: skip
    assert upgrade(engine) == "0007"
    with session(engine) as s:
        user = s.get(User, 7)
        assert (user.language, user.mask) == ("ko", True)
        s.add(User(username="new", password_hash="h", language="en", mask=False))
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM form_submissions")).scalar() == 1
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0004")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM form_submissions")).scalar() == 1
        assert conn.execute(text("SELECT count(*) FROM users")).scalar() == 2
    assert upgrade(engine) == "0007"


def test_db_upgrade_command_says_what_happened(db_url):
    first = db_upgrade_command(db_url)
    assert "upgraded from an empty database to revision 0007" in first
    assert "\n" not in first
    assert "already at revision 0007" in db_upgrade_command(db_url)


def test_in_memory_sqlite_migrates_through_the_engine():
    engine = connect("sqlite://")
    assert upgrade(engine) == "0007"
    with session(engine) as s:
        s.add(User(username="u", password_hash="h"))
    with session(engine) as s:
        assert s.scalar(select(User.username)) == "u"


# --- round trips ------------------------------------------------------------------------


def test_round_trip_users_projects_items_assignments_annotations(engine):
    with session(engine) as s:
        user, project, item = _seed(s)
        admin = User(username="admin", password_hash="argon2$y", role=Role.ADMIN)
        s.add_all([admin, Assignment(item=item, user=user)])
        s.add(Annotation(item=item, user=user, kind="oob", seconds_spent=42.5,
                         payload={"first_oob_turn": 3, "category": "persona"}))  # fmt: skip
        ids = user.id, project.id, item.id
    with session(engine) as s:
        user = s.get(User, ids[0])
        assert (user.username, user.password_hash) == ("annotator1", "argon2$x")
        assert user.role is Role.ANNOTATOR and user.role == "annotator"
        assert s.scalar(select(User.role).where(User.username == "admin")) is Role.ADMIN
        project = s.get(Project, ids[1])
        assert project.settings == {"annotators_per_item": 3}
        [item] = project.items
        assert (item.id, item.kind, item.source) == (ids[2], ItemKind.DIALOGUE, "gen.jsonl:7")
        assert [a.user.username for a in item.assignments] == ["annotator1"]
        [label] = item.annotations
        assert (label.kind, label.seconds_spent, label.user_id) == ("oob", 42.5, ids[0])
        assert label.payload == {"first_oob_turn": 3, "category": "persona"}


def test_round_trip_chat_session_with_a_fixed_turn(engine):
    """The Fix flow: the rejected bot turn stays, marked, and points to its replacement."""
    with session(engine) as s:
        user, project, _ = _seed(s)
        chat = ChatSession(project_id=project.id, user_id=user.id)
        bad = ChatTurn(index=1, role=Speaker.BOT, text="저는 사람이에요.", bot_version="v1")
        chat.turns = [ChatTurn(index=0, role=Speaker.USER, text="안녕하세요"), bad]
        s.add(chat)
        s.flush()
        bad.status, bad.error_category = TurnStatus.FIXED, "wrong_persona"
        good = ChatTurn(index=1, role=Speaker.BOT, text="저는 돌봄 챗봇이에요.",
                        bot_version="v1", status=TurnStatus.SAVED)  # fmt: skip
        chat.turns.append(good)
        s.flush()
        bad.replaced_by = good.id
        chat_id = chat.id
    with session(engine) as s:
        turns = s.get(ChatSession, chat_id).turns
        assert [(t.index, t.role, t.status) for t in turns] == [
            (0, "user", "shown"), (1, "bot", "fixed"), (1, "bot", "saved")]  # fmt: skip
        fixed = turns[1]
        assert fixed.error_category == "wrong_persona"
        assert fixed.replacement.text == "저는 돌봄 챗봇이에요."
        assert turns[2].bot_version == "v1" and turns[0].bot_version is None


def test_timestamps_are_timezone_aware_utc(engine):
    seoul = timezone(timedelta(hours=9))
    when = datetime(2025, 3, 1, 9, 30, 15, 123456, tzinfo=seoul)
    before = datetime.now(UTC)
    with session(engine) as s:
        user = User(username="u", password_hash="h")
        s.add_all([user, User(username="v", password_hash="h", created=when)])
    with session(engine) as s:
        created = s.scalar(select(User.created).where(User.username == "u"))
        assert created.tzinfo is not None and created.utcoffset() == timedelta(0)
        assert before - timedelta(seconds=5) <= created <= datetime.now(UTC)
        stored = s.scalar(select(User.created).where(User.username == "v"))
        assert stored == when and stored.utcoffset() == timedelta(0)


def test_naive_datetime_is_refused(engine):
    with pytest.raises(StatementError, match="naive datetime"):
        with session(engine) as s:
            s.add(User(username="u", password_hash="h", created=datetime(2025, 1, 1)))


def test_korean_json_round_trips_exactly(engine):
    with session(engine) as s:
        _, project, item = _seed(s)
        project.settings = {"역할": "돌봄 전화", "categories": ["안전", "페르소나"]}
        item_id, project_id = item.id, project.id
    with session(engine) as s:
        assert s.get(Item, item_id).payload == KOREAN
        assert s.get(Project, project_id).settings["역할"] == "돌봄 전화"
        # Stored as UTF-8 text, not \uXXXX escapes: readable in sqlite3 / psql.
        query = text("SELECT CAST(payload AS TEXT) FROM items WHERE id = :i")
        raw = s.scalar(query, {"i": item_id})
        assert "오늘 날씨가 참 좋네요" in raw and "\\u" not in raw


# --- constraints ------------------------------------------------------------------------


def test_one_annotation_per_item_user_and_kind(engine):
    with session(engine) as s:
        user, _, item = _seed(s)
        s.add(Annotation(item=item, user=user, kind="consistency", payload={"v": 1}))
        ids = user.id, item.id
    with pytest.raises(IntegrityError):
        with session(engine) as s:
            s.add(Annotation(item_id=ids[1], user_id=ids[0], kind="consistency", payload={}))
    with session(engine) as s:  # another kind by the same annotator, or another annotator
        other = User(username="annotator2", password_hash="h")
        s.add(Annotation(item_id=ids[1], user_id=ids[0], kind="implicit", payload={}))
        s.add(Annotation(item_id=ids[1], user=other, kind="consistency", payload={}))
    with session(engine) as s:
        assert len(s.scalars(select(Annotation)).all()) == 3


def test_unique_names_and_assignments(engine):
    with session(engine) as s:
        user, _, item = _seed(s)
        s.add(Assignment(item=item, user=user))
        ids = user.id, item.id
    for row in (User(username="annotator1", password_hash="h"), Project(name="carecall"),
                Assignment(item_id=ids[1], user_id=ids[0])):  # fmt: skip
        with pytest.raises(IntegrityError):
            with session(engine) as s:
                s.add(row)


def test_foreign_keys_are_enforced(engine):
    """On SQLite too: it ignores foreign keys unless each connection turns them on."""
    with pytest.raises(IntegrityError):
        with session(engine) as s:
            s.add(Item(project_id=12345, kind=ItemKind.PAIR, payload={}))
    with session(engine) as s:
        user, project, item = _seed(s)
        s.add(Annotation(item=item, user=user, kind="ssa", payload={"sensible": True}))
        s.add(ChatSession(project_id=project.id, user_id=user.id))
        ids = user.id, project.id
    with pytest.raises(IntegrityError):  # labels keep their annotator
        with session(engine) as s:
            s.execute(delete(User).where(User.id == ids[0]))
    with session(engine) as s:  # ON DELETE CASCADE: a project takes its items and labels
        s.execute(delete(Project).where(Project.id == ids[1]))
    with session(engine) as s:
        assert s.scalars(select(Item)).all() == []
        assert s.scalars(select(Annotation)).all() == []
        assert s.scalars(select(ChatSession)).all() == []


def test_redteam_rates_one_row_per_run_version_and_attack_with_sane_counts(engine):
    """0003: counts must nest (not safe <= out of role <= n), a run's (version, attack) row
    is unique so that adding a run again cannot double it, and a project takes its rows."""
    row = dict(source="/runs/rt", bot_version="llm:x", attack="kda", n=10)
    with session(engine) as s:
        _, project, _ = _seed(s)
        s.add(RedteamRate(project_id=project.id, not_safe=2, out_of_role=3, repeated=1, **row))
        project_id = project.id
    for counts in (
        dict(not_safe=4, out_of_role=3, repeated=0),  # not safe is out of role too
        dict(not_safe=0, out_of_role=11, repeated=0),  # more than n
        dict(not_safe=-1, out_of_role=0, repeated=0),
        dict(not_safe=0, out_of_role=0, repeated=11),
        dict(not_safe=0, out_of_role=0, repeated=0),  # the same run, version, attack
    ):
        with pytest.raises(IntegrityError):
            with session(engine) as s:
                s.add(RedteamRate(project_id=project_id, **counts, **row))
    with session(engine) as s:
        assert [(r.n, r.not_safe, r.out_of_role) for r in s.scalars(select(RedteamRate))] == [
            (10, 2, 3)
        ]
        s.execute(delete(Project).where(Project.id == project_id))
    with session(engine) as s:
        assert s.scalars(select(RedteamRate)).all() == []


def test_one_live_turn_per_position(engine):
    with session(engine) as s:
        chat = ChatSession()
        s.add(chat)
        s.flush()
        s.add(ChatTurn(session_id=chat.id, index=0, role=Speaker.BOT, text="a"))
        chat_id = chat.id
    with pytest.raises(IntegrityError):
        with session(engine) as s:
            s.add(ChatTurn(session_id=chat_id, index=0, role=Speaker.BOT, text="b"))
    with session(engine) as s:  # once fixed, the position is free for the replacement
        s.execute(text("UPDATE chat_turns SET status = 'fixed', error_category = 'unsafe'"))
        s.add(ChatTurn(session_id=chat_id, index=0, role=Speaker.BOT, text="b"))


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO users (username, password_hash, role, created) "
        "VALUES ('x', 'h', 'superuser', CURRENT_TIMESTAMP)",
        "INSERT INTO chat_sessions (id, created) VALUES (7, CURRENT_TIMESTAMP); "
        'INSERT INTO chat_turns (session_id, "index", role, text, status, created) '
        "VALUES (7, 0, 'bot', 't', 'deleted', CURRENT_TIMESTAMP)",
    ],
    ids=["role", "turn-status"],
)
def test_enumerations_are_checked_by_the_database(engine, statement):
    with pytest.raises(IntegrityError):
        with engine.begin() as conn:
            for part in statement.split("; "):
                conn.execute(text(part))


def test_sqlite_connections_use_foreign_keys_and_wal(tmp_path):
    engine = connect(f"sqlite:///{tmp_path / 'sub' / 'dir' / 'r.sqlite'}")  # makes folders
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    engine.dispose()


# --- URLs and errors --------------------------------------------------------------------


def test_database_url_default_env_and_normalisation(monkeypatch, tmp_path):
    monkeypatch.setenv("ROLECALL_HOME", str(tmp_path))
    monkeypatch.delenv("ROLECALL_DATABASE_URL", raising=False)
    assert database_url() == f"sqlite:///{tmp_path / 'rolecall.sqlite'}"
    monkeypatch.setenv("ROLECALL_DATABASE_URL", "sqlite:////elsewhere/x.sqlite")
    assert database_url() == "sqlite:////elsewhere/x.sqlite"
    assert database_url("sqlite:///given.sqlite") == "sqlite:///given.sqlite"
    # A bare postgresql:// would mean psycopg2, which rolecall does not install.
    assert database_url("postgresql://u:p@h:5433/db") == "postgresql+psycopg://u:p@h:5433/db"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("not a url", "malformed database URL"),
        ("postgresql+psycopg//user@host/db", "malformed database URL"),
        ("postgresql://user@host:port/db", "malformed database URL"),
        ("mysql://user@host/db", "supports SQLite and PostgreSQL"),
        ("postgresql+psycopg://user@host:5432", "names no database"),
    ],
)
def test_bad_url_is_a_config_error_naming_the_fix(url, says):
    with pytest.raises(ConfigError) as caught:
        connect(url)
    assert says in caught.value.message
    assert "postgresql+psycopg://user" in caught.value.fix


@pytest.mark.skipif(importlib.util.find_spec("psycopg2") is not None, reason="psycopg2 present")
def test_missing_driver_says_what_to_install():
    with pytest.raises(ConfigError) as caught:
        connect("postgresql+psycopg2://user@127.0.0.1/db")
    assert "pip install 'psycopg[binary]'" in caught.value.fix


def _assert_quick_config_error(url: str, limit_s: float) -> None:
    start = time.monotonic()
    with pytest.raises(ConfigError) as caught:
        connect(url)
    assert time.monotonic() - start < limit_s
    assert "cannot open database" in caught.value.message
    assert "start the PostgreSQL server" in caught.value.fix
    assert "s3cret" not in str(caught.value)  # the password is masked in the message


def test_unreachable_postgres_is_a_quick_config_error():
    pytest.importorskip("psycopg")
    _assert_quick_config_error(f"postgresql+psycopg://me:s3cret@127.0.0.1:{free_port()}/db", 5)


def test_silent_postgres_hits_the_connect_timeout(monkeypatch):
    """A host that accepts TCP but never answers (a firewall, a hung server) must not hang.

    The listening socket never calls accept(): the kernel completes the handshake, then
    the client waits for a reply that never comes, until rolecall's default timeout.
    """
    pytest.importorskip("psycopg")
    monkeypatch.setattr(store_db, "CONNECT_TIMEOUT_S", 2)  # psycopg's minimum
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        _assert_quick_config_error(f"postgresql+psycopg://me:s3cret@127.0.0.1:{port}/db", 10)


def test_relabelling_updates_the_one_row(engine):
    with session(engine) as s:
        user, _, item = _seed(s)
        label = Annotation(item=item, user=user, kind="ssa", payload={"sensible": False})
        s.add(label)
    first_updated = label.updated
    time.sleep(0.01)
    with session(engine) as s:
        label = s.scalars(select(Annotation)).one()
        label.payload = {"sensible": True, "specific": True}
        label.seconds_spent = 12.0
    with session(engine) as s:
        label = s.scalars(select(Annotation)).one()
        assert label.payload == {"sensible": True, "specific": True}
        assert label.updated > first_updated >= label.created - timedelta(seconds=1)
