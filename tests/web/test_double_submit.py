"""The same form submitted 20 times at once to a real server (a double click, a retrying
proxy): every answer a redirect, never a server error, and one effect, on SQLite and
PostgreSQL (issue 34 finding 1). Forms with a natural key are upserts (users, members;
the label form's is in test_annotate.py); the others claim a one-time token
(web/once.py), and a chat form's repeats wait for the one bot reply."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
from sqlalchemy import func, select

from rolecall.store import (
    Annotation,
    ChatSession,
    ChatTurn,
    Item,
    Project,
    ProjectMember,
    Speaker,
    TurnStatus,
    User,
    session,
)
from rolecall.web import create_app
from rolecall.web.settings import BotConfig
from tests.paths import REPO
from tests.web.browser import serving
from tests.web.site import (
    DIALOGUES,
    PAIRS_CSV,
    PASSWORD,
    csrf_of,
    hidden_fields,
    make_project,
)

BURST = 20


def logged_in(url: str, username: str) -> httpx.Client:
    client = httpx.Client(base_url=url, follow_redirects=False, timeout=60)
    token = csrf_of(client.get("/login").text)
    response = client.post(
        "/login", data={"username": username, "password": PASSWORD, "csrf": token}
    )
    assert response.status_code == 303, response.text[:300]
    return client


def burst(client: httpx.Client, path: str, data: dict, files: dict | None = None) -> list[int]:
    """``data`` posted ``BURST`` times at once; the status codes."""
    return [status for status, _ in answers(client, path, data, files)]


def answers(client: httpx.Client, path: str, data: dict, files: dict | None = None) -> list:
    """(status, location) of ``BURST`` identical posts sent at once."""
    start = threading.Barrier(BURST)

    def send(_: int) -> tuple[int, str | None]:
        start.wait()
        response = client.post(path, data=data, files=files)
        return response.status_code, response.headers.get("location")

    with ThreadPoolExecutor(BURST) as pool:
        return list(pool.map(send, range(BURST)))


def form_burst(client: httpx.Client, page: str, action: str, **data) -> str:
    """The form of ``page`` that posts to ``action``, sent ``BURST`` times at once: every
    answer is the same redirect, which is returned."""
    fields = {**hidden_fields(client.get(page).text, action), **data}
    got = answers(client, action, fields)
    assert {status for status, _ in got} == {303}, got
    assert len({location for _, location in got}) == 1, got
    return got[0][1]


def test_adding_a_user_or_a_member_twice_at_once_does_it_once(site):
    engine, project_id = site
    with serving(create_app(engine)) as url:
        admin = logged_in(url, "admin")
        token = csrf_of(admin.get("/admin").text)
        form = {"csrf": token, "username": "newbie", "password": PASSWORD, "role": "annotator"}
        codes = burst(admin, "/admin/users", form)
        assert codes == [303] * BURST, codes
        codes = burst(
            admin, f"/admin/projects/{project_id}/members", {**form, "username": "newbie"}
        )
        assert codes == [303] * BURST, codes
        # a taken name with another password is still refused: not the same form
        taken = admin.post("/admin/users", data={**form, "password": PASSWORD + "!"})
        assert taken.status_code == 400 and "taken" in taken.text
        admin.close()
    with session(engine) as db:
        user = db.scalars(select(User).where(User.username == "newbie")).one()
        members = db.scalar(
            select(func.count()).select_from(ProjectMember).where(ProjectMember.user_id == user.id)
        )
        assert members == 1


def calls(path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_every_chat_form_sent_twice_at_once_acts_once_and_asks_the_bot_once(site, tmp_path):
    engine, _ = site
    log = tmp_path / "calls"
    # a bot that takes a moment: the repeats arrive while the first submit waits for it
    project_id = make_project(
        engine, "slow bot", BotConfig(model=f"fake:web?delay=0.3&calls_file={log}")
    )
    with session(engine) as db:
        user = db.scalars(select(User).where(User.username == "ann1")).one()
        db.add(ProjectMember(project_id=project_id, user_id=user.id))
    with serving(create_app(engine)) as url:
        ann1 = logged_in(url, "ann1")
        chats = f"/projects/{project_id}/chat"
        chat = form_burst(ann1, chats, f"/projects/{project_id}/chats")
        form_burst(ann1, chat, f"{chat}/message", text="안녕하세요")
        per_reply = calls(log)
        assert per_reply >= 1
        turns = lambda: [(t.role, t.status, t.text) for t in turns_of(engine)]  # noqa: E731
        assert [(r, s) for r, s, _ in turns()] == [
            (Speaker.USER, TurnStatus.SHOWN),
            (Speaker.BOT, TurnStatus.SHOWN),
        ]
        bot_turn = turns_of(engine)[-1]
        form_burst(ann1, chat, f"{chat}/turns/{bot_turn.id}/fix", category="not sensible")
        assert calls(log) == 2 * per_reply
        assert [s for _, s, _ in turns()] == [TurnStatus.SHOWN, TurnStatus.FIXED, TurnStatus.SHOWN]
        with session(engine) as db:  # a message the bot has not answered (it failed)
            db.add(ChatTurn(session_id=chat_id(chat), index=2, role=Speaker.USER, text="여보세요?"))
        form_burst(ann1, chat, f"{chat}/reply")
        assert calls(log) == 3 * per_reply
        assert [r for r, _, _ in turns()] == [
            Speaker.USER,
            Speaker.BOT,
            Speaker.BOT,
            Speaker.USER,
            Speaker.BOT,
        ]
        form_burst(ann1, chat, f"{chat}/save")
        ann1.close()
        admin = logged_in(url, "admin")  # SSA items from the saved chat's 3 bot turns
        action = f"/admin/projects/{project_id}/ssa-items"
        form_burst(admin, "/admin", action, per_item="1")
        admin.close()
        # the same button in five tabs (five tokens) at once, on another saved chat's turns:
        # each bot turn still one item (issue 50 D2)
        ann1 = logged_in(url, "ann1")
        second = form_burst(ann1, chats, f"/projects/{project_id}/chats")
        form_burst(ann1, second, f"{second}/message", text="오늘 날씨가 좋네요")
        form_burst(ann1, second, f"{second}/save")
        ann1.close()
        admin = logged_in(url, "admin")
        tabs = [
            {**hidden_fields(admin.get("/admin").text, action), "per_item": "1"} for _ in range(5)
        ]
        start = threading.Barrier(len(tabs))

        def press(fields: dict) -> int:
            start.wait()
            return admin.post(action, data=fields).status_code

        with ThreadPoolExecutor(len(tabs)) as pool:
            statuses = sorted(pool.map(press, tabs))
        assert statuses[0] == 303 and set(statuses) <= {303, 409}, statuses
        admin.close()
    with session(engine) as db:
        assert (
            db.scalar(
                select(func.count())
                .select_from(ChatSession)
                .where(ChatSession.project_id == project_id)
            )
            == 2
        )
        assert db.get(ChatSession, chat_id(chat)).saved is not None
    assert [s for _, s, _ in turns()].count(TurnStatus.SAVED) == 4 + 2
    with session(engine) as db:
        made = db.scalars(select(Item.payload).where(Item.project_id == project_id)).all()
    bot_turns = {t.id for t in turns_of(engine) if t.role == Speaker.BOT}
    assert sorted(p["chat_turn_id"] for p in made) == sorted(bot_turns) and len(bot_turns) == 4


def test_every_admin_form_sent_twice_at_once_acts_once(site):
    engine, project_id = site
    with serving(create_app(engine)) as url:
        admin = logged_in(url, "admin")
        spec = (REPO / "examples" / "carecall" / "spec.yaml").read_text(encoding="utf-8")
        form_burst(
            admin, "/admin", "/admin/projects", name="twice", spec=spec, bot_model="fake:web"
        )
        action = f"/admin/projects/{project_id}/items"
        fields = {
            **hidden_fields(admin.get("/admin").text, action),
            "kind": "dialogue",
            "per_item": "1",
        }
        jsonl = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DIALOGUES)
        codes = burst(admin, action, fields, files={"file": ("gen.jsonl", jsonl.encode())})
        assert codes == [303] * BURST, codes
        admin.close()
    with session(engine) as db:
        assert (
            db.scalar(select(func.count()).select_from(Project).where(Project.name == "twice")) == 1
        )
        assert db.scalar(select(func.count()).select_from(Item)) == len(DIALOGUES)


def test_every_settings_form_and_undo_sent_twice_at_once_act_once(site):
    """The language switch, the mask and undo (issue 35) claim one-time tokens too: 20
    undos at once take back one label, not 20."""
    engine, project_id = site
    with serving(create_app(engine)) as url:
        admin = logged_in(url, "admin")
        action = f"/admin/projects/{project_id}/items"
        fields = {**hidden_fields(admin.get("/admin").text, action), "kind": "dialogue"}
        jsonl = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DIALOGUES)
        fields["per_item"] = "2"
        files = {"file": ("gen.jsonl", jsonl.encode())}
        assert admin.post(action, data=fields, files=files).status_code == 303
        fields = {**hidden_fields(admin.get("/admin").text, action), "kind": "pair"}
        fields["per_item"] = "2"
        files = {"file": ("kda.csv", PAIRS_CSV.encode())}
        assert admin.post(action, data=fields, files=files).status_code == 303
        admin.close()
        ann1 = logged_in(url, "ann1")
        with session(engine) as db:
            items = db.scalars(select(Item.id).order_by(Item.id)).all()
        answers = [{"first_oob": "none"}] * len(DIALOGUES) + [
            {"consistent": "yes", "offensive": "no"}
        ]
        for item, answer in zip(items, answers, strict=True):
            form = hidden_fields(ann1.get(f"/items/{item}").text, f"/items/{item}/label")
            assert ann1.post(f"/items/{item}/label", data={**form, **answer}).status_code == 303
        page = f"/items/{items[-1]}"  # the pair: its page has the mask
        assert form_burst(ann1, page, "/settings/language", language="en", next=page) == page
        assert form_burst(ann1, page, "/settings/mask", mask="off", next=page) == page
        assert form_burst(ann1, page, f"/projects/{project_id}/undo") == page
        ann1.close()
    with session(engine) as db:
        user = db.scalars(select(User).where(User.username == "ann1")).one()
        assert (user.language, user.mask) == ("en", False)
        kept = db.scalars(select(Annotation.item_id).where(Annotation.user_id == user.id)).all()
        assert kept == items[:-1]  # one undo: the last label only


def turns_of(engine) -> list[ChatTurn]:
    with session(engine) as db:
        return list(db.scalars(select(ChatTurn).order_by(ChatTurn.index, ChatTurn.id)))


def chat_id(location: str) -> int:
    return int(location.rsplit("/", 1)[1])


def test_two_different_forms_clashing_get_409_and_save_nothing(site, monkeypatch, caplog):
    """Two tabs creating one project name at the same moment: both passed the name check,
    the later insert breaks the unique constraint (simulated by skipping the check)."""
    import logging

    from fastapi.testclient import TestClient

    from rolecall.web import admin as admin_routes

    engine, _ = site

    def unchecked(db, name, settings):
        db.add(Project(name=name, settings=settings.model_dump(mode="json")))
        db.flush()

    monkeypatch.setattr(admin_routes, "add_project", unchecked)
    client = TestClient(create_app(engine), follow_redirects=False)
    page = client.get("/login")
    form = {"username": "admin", "password": PASSWORD, "csrf": csrf_of(page.text)}
    assert client.post("/login", data=form).status_code == 303
    spec = (REPO / "examples" / "carecall" / "spec.yaml").read_text(encoding="utf-8")
    fields = hidden_fields(client.get("/admin").text, "/admin/projects")
    with caplog.at_level(logging.WARNING, logger="rolecall.web"):
        response = client.post("/admin/projects", data={**fields, "name": "carecall", "spec": spec})
    assert response.status_code == 409 and "페이지를 새로 고치고" in response.text
    assert any("constraint" in r.getMessage() for r in caplog.records)
    with session(engine) as db:
        assert db.scalar(select(func.count()).select_from(Project)) == 1
    # nothing of it was kept, its token included: the same form with another name works
    response = client.post("/admin/projects", data={**fields, "name": "another", "spec": spec})
    assert response.status_code == 303
