"""What the web app's tests share: the CareCall role spec, the users' password, a project
on a database (``make_project``), a client logged in as a user (``client_for``) and the
forms they post: labels, uploads, chats (with their CSRF token), and the dialogues and K/DA
pairs they upload."""

from __future__ import annotations

import re
import secrets

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("multipart")

from fastapi.testclient import TestClient  # noqa: E402

from rolecall.store import Project, session  # noqa: E402
from rolecall.web import create_app  # noqa: E402
from rolecall.web.settings import BotConfig, ProjectSettings  # noqa: E402
from tests.paths import REPO  # noqa: E402

SPEC_YAML = (REPO / "examples" / "carecall" / "spec.yaml").read_text(encoding="utf-8")
PASSWORD = "correct horse battery"
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')
_FORM = re.compile(r'<form [^>]*action="([^"]+)"[^>]*>(.*?)</form>', re.S)
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')

DIALOGUES = [
    {
        "id": f"d{n}",
        "turns": [
            {"role": "system", "text": "안녕하세요, 식사는 하셨어요?"},
            {"role": "user", "text": "네, 먹었어요."},
            {
                "role": "system",
                "text": "주소 좀 알려 주시겠어요?",
                "out_of_bounds": True,
                "category": "policy violation",
            },
        ],
    }
    for n in range(2)
]
PAIRS_CSV = "neutral,implicit\n회의가 취소됐어요.,회의 취소라니 윗분들 또 땡땡이네\n"


def csrf_of(html: str) -> str:
    return _CSRF.search(html).group(1)


def once() -> str:
    """A one-time form token as a page renders it (web/once.py), for hand-made posts."""
    return secrets.token_urlsafe(18)


def hidden_fields(html: str, action: str) -> dict[str, str]:
    """The hidden inputs of the page's form that posts to ``action`` (its CSRF token and
    its one-time token): what a browser sends with that form."""
    for target, body in _FORM.findall(html):
        if target == action:
            return dict(_HIDDEN.findall(body))
    raise AssertionError(f"no form posts to {action}")


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


def client_for(engine, username: str | None = None) -> TestClient:
    client = TestClient(create_app(engine), follow_redirects=False)
    if username:
        page = client.get("/login")
        response = client.post(
            "/login", data={"username": username, "password": PASSWORD, "csrf": csrf_of(page.text)}
        )
        assert response.status_code == 303, response.text
    return client


def upload(client, project_id: int, kind: str, name: str, body: str, per_item: int):
    action = f"/admin/projects/{project_id}/items"
    return client.post(
        action,
        data={
            **hidden_fields(client.get("/admin").text, action),
            "kind": kind,
            "per_item": str(per_item),
        },  # fmt: skip
        files={"file": (name, body.encode("utf-8"))},
    )


def item_ids(engine, kind: str) -> list[int]:
    """The ids of the items of ``kind``, in upload order."""
    from sqlalchemy import select

    from rolecall.store import Item

    with session(engine) as db:
        return list(db.scalars(select(Item.id).where(Item.kind == kind).order_by(Item.id)))


def dialogue_and_pair(engine, project_id: int, per_item: int = 1) -> tuple[int, int]:
    """``DIALOGUES[0]`` and the pair of ``PAIRS_CSV``, uploaded by the admin for
    ``per_item`` annotators each; their item ids."""
    import json

    admin = client_for(engine, "admin")
    jsonl = json.dumps(DIALOGUES[0], ensure_ascii=False) + "\n"
    assert upload(admin, project_id, "dialogue", "gen.jsonl", jsonl, per_item).status_code == 303
    assert upload(admin, project_id, "pair", "kda.csv", PAIRS_CSV, per_item).status_code == 303
    (dialogue,), (pair,) = item_ids(engine, "dialogue"), item_ids(engine, "pair")
    return dialogue, pair


def label(client, item_id: int, **answer):
    page = client.get(f"/items/{item_id}")
    assert page.status_code == 200
    shown_at = page.text.split('name="shown_at" value="')[1].split('"')[0]
    return client.post(
        f"/items/{item_id}/label", data={"csrf": csrf_of(page.text), "shown_at": shown_at, **answer}
    )


def start_chat(client, project_id: int) -> str:
    page = client.get(f"/projects/{project_id}/chat")
    assert page.status_code == 200
    action = f"/projects/{project_id}/chats"
    response = client.post(action, data=hidden_fields(page.text, action))
    assert response.status_code == 303
    return response.headers["location"]


def post(client, url: str, page_url: str, **data) -> object:
    """``data`` posted with the form of the page at ``page_url`` that posts to ``url``."""
    return client.post(url, data={**hidden_fields(client.get(page_url).text, url), **data})
