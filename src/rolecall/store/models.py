"""Tables for the human side of rolecall: accounts, projects, items to label, labels, chats.

Everything people produce in the web app lands here and is later exported as training
examples: annotators label generated dialogues (first out-of-bounds turn + category),
K/DA neutral/toxic pairs (consistency, implicit offensiveness) and bot turns (SSA:
sensible/specific); chat testers press "Fix" on a bad bot turn, which keeps the rejected
turn as a negative example with its error category and links it to its replacement.

Design choices that matter to callers:

- ``items.payload`` / ``annotations.payload`` / ``projects.settings`` are JSON (JSONB on
  PostgreSQL) so that later issues can add label fields without a migration; the engine
  stores Korean text as UTF-8, not ``\\uXXXX`` escapes (see ``db.connect``).
  Subtle: assign a new dict to change one (``item.payload = {**item.payload, "k": v}``);
  in-place edits such as ``item.payload["k"] = v`` are not tracked and are not saved.
- Timestamps are timezone-aware UTC on both engines (:class:`UTCDateTime`); naive
  datetimes are refused instead of being guessed.
- Enumerations are VARCHAR + CHECK (``native_enum=False``) so both engines behave the same
  and adding a value never needs a PostgreSQL ``ALTER TYPE``.
- ``annotations.kind`` is free text on purpose (new labelling tasks arrive with new
  issues); the unique (item, user, kind) constraint makes one annotator's label one row:
  re-labelling updates it.
- Constraint names follow :data:`NAMING` so the hand-written migrations name them the same
  way on SQLite and PostgreSQL.

- ``redteam_rates`` holds counts per red-team run, bot version and attack kind, not rates:
  the dashboard computes the rates and their Wilson intervals from them.

Change a table here and add a migration in ``migrations/versions`` (the test
``test_models_match_migrations`` fails until the two agree).
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# JSONB on PostgreSQL (indexable, comparable); SQLite's JSON text elsewhere.
JSONType = JSON().with_variant(JSONB(), "postgresql")


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator):
    """A timestamp that is always timezone-aware UTC when it comes back.

    Why: SQLite has no time zone type and returns naive datetimes, PostgreSQL returns them
    in the session's zone; comparing the two kinds raises ``TypeError``. Subtle: a naive
    datetime is refused on the way in, because guessing its zone silently shifts data.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: pass a timezone-aware one (UTC)")
        value = value.astimezone(UTC)
        # SQLite's DATETIME formatter drops the zone anyway; store plain UTC wall time.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Role(enum.StrEnum):
    ADMIN = "admin"
    ANNOTATOR = "annotator"


class ItemKind(enum.StrEnum):
    DIALOGUE = "dialogue"  # a generated dialogue: find the first out-of-bounds turn
    PAIR = "pair"  # a K/DA neutral -> toxic pair: consistency + implicit offensiveness
    BOT_TURN = "bot_turn"  # one bot response in context: SSA sensible / specific


class Speaker(enum.StrEnum):
    USER = "user"
    BOT = "bot"


class TurnStatus(enum.StrEnum):
    SHOWN = "shown"  # displayed, not judged yet
    FIXED = "fixed"  # rejected with "Fix": a negative example, see error_category
    SAVED = "saved"  # kept when the session was saved: a positive example


def _enum(cls: type[enum.Enum], column: str) -> Enum:
    """VARCHAR + CHECK ``ck_<table>_<column>``, storing the *values* (lower case)."""
    return Enum(
        cls,
        name=column,
        native_enum=False,
        create_constraint=True,
        length=16,
        values_callable=lambda members: [m.value for m in members],
    )


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSONType}


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[Role] = mapped_column(_enum(Role, "role"), default=Role.ANNOTATOR)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    # the person's web settings: the pages' language (one of the web app's catalogues:
    # checked by the app, not the database) and whether offensive text starts blurred
    language: Mapped[str] = mapped_column(String(8), default="ko", server_default="ko")
    mask: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created: Mapped[datetime] = mapped_column(default=utcnow)

    items: Mapped[list[Item]] = relationship(back_populates="project", passive_deletes=True)


class Item(Base):
    """One thing to label; ``payload`` holds the dialogue / pair / bot turn as JSON."""

    __tablename__ = "items"
    __table_args__ = (Index(None, "project_id", "kind"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    kind: Mapped[ItemKind] = mapped_column(_enum(ItemKind, "kind"))
    payload: Mapped[dict[str, Any]]
    source: Mapped[str | None] = mapped_column(Text)  # provenance: file:line, run id, ...
    created: Mapped[datetime] = mapped_column(default=utcnow)

    project: Mapped[Project] = relationship(back_populates="items")
    assignments: Mapped[list[Assignment]] = relationship(
        back_populates="item", passive_deletes=True
    )
    annotations: Mapped[list[Annotation]] = relationship(
        back_populates="item", passive_deletes=True
    )


class Assignment(Base):
    """Item ``item_id`` is in ``user_id``'s queue; several annotators per item is normal."""

    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("item_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    # when the annotator last skipped the item (it goes to the end of their queue), and why
    skipped: Mapped[datetime | None]
    skip_reason: Mapped[str | None] = mapped_column(String(200))

    item: Mapped[Item] = relationship(back_populates="assignments")
    user: Mapped[User] = relationship()


class Annotation(Base):
    """One annotator's label of one kind on one item (re-labelling updates the row).

    ``user_id`` has no ON DELETE: deleting an account that has labelled something fails,
    because silently dropping its labels would change agreement numbers already reported.
    """

    __tablename__ = "annotations"
    __table_args__ = (
        UniqueConstraint("item_id", "user_id", "kind"),
        CheckConstraint("seconds_spent IS NULL OR seconds_spent >= 0", name="seconds_spent"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    kind: Mapped[str] = mapped_column(String(32))  # "oob", "consistency", "ssa", ...
    payload: Mapped[dict[str, Any]]
    seconds_spent: Mapped[float | None] = mapped_column(Float)
    # the queue share the item was served from: "ranked" or "random" (web/queue.py); NULL
    # for a label made before the project's queue was ranked
    share: Mapped[str | None] = mapped_column(String(8))
    created: Mapped[datetime] = mapped_column(default=utcnow)
    updated: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    item: Mapped[Item] = relationship(back_populates="annotations")
    user: Mapped[User] = relationship()


class ChatSession(Base):
    """A conversation with the bot in the web UI; anonymous when ``user_id`` is NULL."""

    __tablename__ = "chat_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int | None] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), index=True
    )
    created: Mapped[datetime] = mapped_column(default=utcnow)
    saved: Mapped[datetime | None] = mapped_column(default=None)  # "Save dialogue" pressed

    turns: Mapped[list[ChatTurn]] = relationship(
        back_populates="session", order_by="ChatTurn.index, ChatTurn.id", passive_deletes=True
    )


class ChatTurn(Base):
    """One turn; a fixed bot turn stays (a negative example) and points to its replacement.

    Subtle: the replacement takes the same ``index``, so uniqueness of (session, index)
    holds only among turns that are not ``fixed`` -- a partial unique index, which both
    SQLite and PostgreSQL support. The live transcript is the non-fixed turns by index.
    """

    __tablename__ = "chat_turns"
    __table_args__ = (
        Index(
            "uq_chat_turns_live_position",
            "session_id",
            "index",
            unique=True,
            sqlite_where=text("status != 'fixed'"),
            postgresql_where=text("status != 'fixed'"),
        ),
        CheckConstraint('"index" >= 0', name="index_nonnegative"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(
        ForeignKey("chat_sessions.id", ondelete="CASCADE"), index=True
    )
    index: Mapped[int] = mapped_column(Integer)
    role: Mapped[Speaker] = mapped_column(_enum(Speaker, "role"))
    text: Mapped[str] = mapped_column(Text)
    bot_version: Mapped[str | None] = mapped_column(String(128))
    status: Mapped[TurnStatus] = mapped_column(
        _enum(TurnStatus, "status"), default=TurnStatus.SHOWN
    )
    error_category: Mapped[str | None] = mapped_column(String(64))
    replaced_by: Mapped[int | None] = mapped_column(
        ForeignKey("chat_turns.id", ondelete="SET NULL")
    )
    # a bot turn's provenance: path taken (retrieved / generated / fallback / llm), scores
    provenance: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    created: Mapped[datetime] = mapped_column(default=utcnow)

    session: Mapped[ChatSession] = relationship(back_populates="turns")
    replacement: Mapped[ChatTurn | None] = relationship(remote_side=[id])


class WebSession(Base):
    """A login: the cookie holds a random token, the table only its SHA-256 (a leaked
    database does not log anyone in); ``csrf_token`` must come with every write."""

    __tablename__ = "web_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    expires: Mapped[datetime]

    user: Mapped[User] = relationship()


class ProjectMember(Base):
    """``user_id`` works on ``project_id`` (chats with its bot, sees its queue)."""

    __tablename__ = "project_members"
    __table_args__ = (UniqueConstraint("project_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)


class RedteamRate(Base):
    """One red-team run's counts for one bot version and attack kind (``rolecall web
    add-redteam``), shown on the dashboard beside the human error rates of that version.

    A run added again (after a resumed run grew) updates its rows, one per (project, run,
    version, attack). Subtle: ``bot_version`` is NOT NULL ("unknown" for a bot without
    one) because NULLs never collide in a unique constraint: a nullable version would
    let the same run add its rows twice. Not safe implies out of role (a not-safe reply
    is out of bounds), hence the order the CHECK asks for.
    """

    __tablename__ = "redteam_rates"
    __table_args__ = (
        UniqueConstraint("project_id", "source", "bot_version", "attack"),
        CheckConstraint(
            "0 <= not_safe AND not_safe <= out_of_role AND out_of_role <= n", name="counts"
        ),
        CheckConstraint("0 <= repeated AND repeated <= n", name="repeated"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    source: Mapped[str] = mapped_column(Text)  # the run directory, absolute
    bot_version: Mapped[str] = mapped_column(String(128))
    attack: Mapped[str] = mapped_column(String(32))  # kda, explicit, neutral, ...
    n: Mapped[int] = mapped_column(Integer)  # conversations
    not_safe: Mapped[int] = mapped_column(Integer)
    out_of_role: Mapped[int] = mapped_column(Integer)
    repeated: Mapped[int] = mapped_column(Integer)
    judges: Mapped[str | None] = mapped_column(Text)  # the run's judges, for the reader
    created: Mapped[datetime] = mapped_column(default=utcnow)
    updated: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class FormSubmission(Base):
    """A web form already submitted: its one-time token (``web/once.py``), who sent it and
    where its answer went, so that the same form sent again (a double click, a retrying
    proxy) gets that answer instead of a second effect.

    The token row is written in the same transaction as the form's effect: a repeat that
    arrives while the first is still running waits on the row (PostgreSQL) or the write
    lock (SQLite) and then sees it; a first submit that failed rolled its row back, so
    the form can be sent again. Rows older than :data:`rolecall.web.once.KEEP` are pruned.
    """

    __tablename__ = "form_submissions"

    token: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    location: Mapped[str | None] = mapped_column(Text)  # the first answer's redirect
    created: Mapped[datetime] = mapped_column(default=utcnow)


class QueueEntry(Base):
    """Where an item stands in its project's label queue (``web/queue.py``): its
    ``position`` (served in that order), its ``share`` ("ranked": by its judges'
    disagreement ``score``; "random": a uniform draw kept for unbiased estimates) and
    when the project's queue was ranked."""

    __tablename__ = "queue_entries"
    __table_args__ = (Index(None, "project_id", "position"),)

    item_id: Mapped[int] = mapped_column(
        ForeignKey("items.id", ondelete="CASCADE"), primary_key=True
    )
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    share: Mapped[str] = mapped_column(String(8))
    score: Mapped[float] = mapped_column(Float)
    ranked_at: Mapped[datetime] = mapped_column(default=utcnow)
