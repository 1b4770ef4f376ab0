"""A web app on a fresh database with an admin, two annotators and a project whose bot is
the fake LLM prompted with the CareCall role spec.

``site`` runs a test twice, on SQLite and on the session's PostgreSQL server: for what the
two databases may do differently (the store, concurrent writes, throttling, security).
``page_site`` is SQLite only: for pages and flows that only render what the store gives.
"""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("multipart")

from rolecall.store import ProjectMember, Role, connect, session, upgrade  # noqa: E402
from rolecall.web.auth import add_user  # noqa: E402
from tests.web.site import PASSWORD, make_project  # noqa: E402


def _open_site(url: str):
    """(engine, project id): users admin, ann1, ann2 (members), ann3 (not a member)."""
    engine = connect(url)
    upgrade(engine)
    project_id = make_project(engine)
    with session(engine) as db:
        add_user(db, "admin", PASSWORD, Role.ADMIN)
        for name in ("ann1", "ann2", "ann3"):
            user = add_user(db, name, PASSWORD)
            if name != "ann3":
                db.add(ProjectMember(project_id=project_id, user_id=user.id))
    return engine, project_id


@pytest.fixture
def site(db_url):
    """(engine, project id) on SQLite, then on PostgreSQL."""
    engine, project_id = _open_site(db_url)
    yield engine, project_id
    engine.dispose()


@pytest.fixture
def page_site(tmp_path):
    """(engine, project id) on SQLite only."""
    engine, project_id = _open_site(f"sqlite:///{tmp_path / 'rolecall.sqlite'}")
    yield engine, project_id
    engine.dispose()
