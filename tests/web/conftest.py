"""A web app on a fresh database (SQLite, and PostgreSQL started by the tests), with an
admin, two annotators and a project whose bot is the fake LLM prompted with the CareCall
role spec."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("multipart")

from fastapi.testclient import TestClient  # noqa: E402

from rolecall.store import Project, ProjectMember, Role, connect, session, upgrade  # noqa: E402
from rolecall.web import create_app  # noqa: E402
from rolecall.web.auth import add_user  # noqa: E402
from rolecall.web.settings import BotConfig, ProjectSettings  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SPEC_YAML = (REPO / "examples" / "carecall" / "spec.yaml").read_text(encoding="utf-8")
PASSWORD = "correct horse battery"
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    return _CSRF.search(html).group(1)


def make_project(engine, name: str = "carecall", bot: BotConfig | None = None) -> int:
    import yaml

    settings = ProjectSettings(
        spec=yaml.safe_load(SPEC_YAML), bot=bot or BotConfig(model="fake:web")
    )
    with session(engine) as db:
        project = Project(name=name, settings=settings.model_dump(mode="json"))
        db.add(project)
        db.flush()
        return project.id


@pytest.fixture
def site(db_url):
    """(engine, project id): users admin, ann1, ann2 (members), ann3 (not a member)."""
    engine = connect(db_url)
    upgrade(engine)
    project_id = make_project(engine)
    with session(engine) as db:
        add_user(db, "admin", PASSWORD, Role.ADMIN)
        for name in ("ann1", "ann2", "ann3"):
            user = add_user(db, name, PASSWORD)
            if name != "ann3":
                db.add(ProjectMember(project_id=project_id, user_id=user.id))
    yield engine, project_id
    engine.dispose()


def client_for(engine, username: str | None = None) -> TestClient:
    client = TestClient(create_app(engine), follow_redirects=False)
    if username:
        page = client.get("/login")
        response = client.post(
            "/login", data={"username": username, "password": PASSWORD, "csrf": csrf_of(page.text)}
        )
        assert response.status_code == 303, response.text
    return client
