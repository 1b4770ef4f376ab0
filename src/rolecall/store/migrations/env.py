"""Alembic environment for rolecall's store; run it through ``rolecall.store.db.upgrade``.

``db.alembic_config`` hands the connection over in ``config.attributes["connection"]``
so that the migration runs inside the caller's transaction and on the caller's engine
(the only way for an in-memory SQLite database). Without one, the URL comes from the
``sqlalchemy.url`` option or the usual rolecall default (``db.database_url``).
"""

from __future__ import annotations

from alembic import context

from rolecall.store.db import VERSION_TABLE, connect, database_url
from rolecall.store.models import Base

config = context.config


def _configure(**kwargs) -> None:
    context.configure(
        target_metadata=Base.metadata,
        version_table=VERSION_TABLE,
        compare_type=True,
        **kwargs,
    )


def _run_on(connection) -> None:
    # SQLite cannot ALTER most things; batch mode makes autogenerate write table copies.
    _configure(connection=connection, render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run_on(connection)
        return
    engine = connect(config.get_main_option("sqlalchemy.url"))
    try:
        with engine.begin() as conn:
            _run_on(conn)
    finally:
        engine.dispose()


def run_offline() -> None:
    """Write the SQL instead of running it (``alembic upgrade --sql``), for a DBA to apply."""
    _configure(
        url=database_url(config.get_main_option("sqlalchemy.url")),
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
