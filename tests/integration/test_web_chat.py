"""Chat with Fix on the real embedded model (Gemma 3 270M through llama.cpp), prompted with
the CareCall role spec: replies are real text, a fixed reply is replaced by a different one,
and the export carries both."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")

from sqlalchemy import select  # noqa: E402

from rolecall.store import ChatTurn, Role, connect, session, upgrade  # noqa: E402
from rolecall.web.auth import add_user  # noqa: E402
from rolecall.web.settings import BotConfig  # noqa: E402
from tests.web.site import PASSWORD, client_for, make_project, post, start_chat  # noqa: E402

pytestmark = [pytest.mark.embedded, pytest.mark.timeout(3600)]


def test_chat_and_fix_with_the_embedded_model(tmp_path):
    engine = connect(f"sqlite:///{tmp_path / 'web.sqlite'}")
    upgrade(engine)
    with session(engine) as db:
        add_user(db, "admin", PASSWORD, Role.ADMIN)
    project_id = make_project(
        engine, "embedded", BotConfig(model="llamacpp:embedded", max_tokens=40)
    )
    admin = client_for(engine, "admin")  # admins see every project
    chat = start_chat(admin, project_id)
    greeting = "안녕하세요, 오늘 날씨가 좋네요."
    assert post(admin, f"{chat}/message", chat, text=greeting).status_code == 303
    with session(engine) as db:
        first = db.scalars(select(ChatTurn).where(ChatTurn.role == "bot")).one()
    assert first.text.strip() and first.bot_version.startswith("llm:")
    assert post(admin, f"{chat}/turns/{first.id}/fix", chat, category="style").status_code == 303
    assert post(admin, f"{chat}/save", chat).status_code == 303
    with session(engine) as db:
        live = db.scalars(
            select(ChatTurn).where(ChatTurn.role == "bot", ChatTurn.status == "saved")
        ).one()
    assert live.text.strip() and live.text != first.text
    rows = [
        json.loads(line)
        for line in admin.get(f"/projects/{project_id}/export/examples.jsonl").text.splitlines()
    ]
    assert [(r["label"], r["response"]) for r in rows] == [
        ("negative", first.text),
        ("positive", live.text),
    ]
