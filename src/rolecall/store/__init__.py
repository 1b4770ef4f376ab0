"""Storage for people's work: accounts, projects, items to label, labels, chat sessions.

SQLite by default, PostgreSQL by URL; the schema is managed by the packaged Alembic
migrations (:func:`upgrade`). Typical use::

    from rolecall.store import connect, session, upgrade, Item
    engine = connect()          # ROLECALL_DATABASE_URL or SQLite in ROLECALL_HOME
    upgrade(engine)             # no-op when already at head
    with session(engine) as s:  # commits at the end of the block
        s.add(Item(...))
"""

from rolecall.store.db import (
    ENV_VAR,
    alembic_config,
    connect,
    current_revision,
    database_url,
    db_upgrade_command,
    head_revision,
    safe_url,
    session,
    sqlite_file,
    upgrade,
)
from rolecall.store.models import (
    Annotation,
    Assignment,
    Base,
    ChatSession,
    ChatTurn,
    FormSubmission,
    Item,
    ItemKind,
    Project,
    ProjectMember,
    QueueEntry,
    RedteamRate,
    Role,
    Speaker,
    TurnStatus,
    User,
    WebSession,
)

__all__ = [
    "ENV_VAR",
    "Annotation",
    "Assignment",
    "Base",
    "ChatSession",
    "ChatTurn",
    "FormSubmission",
    "Item",
    "ItemKind",
    "Project",
    "ProjectMember",
    "QueueEntry",
    "RedteamRate",
    "Role",
    "Speaker",
    "TurnStatus",
    "User",
    "WebSession",
    "alembic_config",
    "connect",
    "current_revision",
    "database_url",
    "db_upgrade_command",
    "head_revision",
    "safe_url",
    "session",
    "sqlite_file",
    "upgrade",
]
