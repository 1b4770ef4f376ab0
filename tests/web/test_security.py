"""Every route refuses strangers; annotators cannot reach each other's work; writes need
the CSRF token; oversized or malformed input is a 4xx that changes nothing."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select

from rolecall.store import ChatSession, ChatTurn, Project, ProjectMember, User, session
from rolecall.web.app import routers
from rolecall.web.auth import hash_password, verify_password
from tests.web.site import PASSWORD, client_for, csrf_of, once, post, start_chat

PUBLIC = {("GET", "/login"), ("POST", "/login")}


def all_routes() -> list[tuple[str, str]]:
    return sorted(
        (method, route.path)
        for router in routers()
        for route in router.routes
        for method in route.methods
    )


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "1", path)


def counts(engine) -> tuple[int, ...]:
    with session(engine) as db:
        return tuple(
            db.scalar(select(func.count()).select_from(table))
            for table in (User, Project, ChatSession, ChatTurn)
        )


def test_passwords_are_salted_scrypt_hashes():
    stored = hash_password(PASSWORD)
    assert stored.startswith("scrypt$") and PASSWORD not in stored
    assert stored != hash_password(PASSWORD)  # a fresh salt each time
    assert verify_password(PASSWORD, stored) and not verify_password("wrong password", stored)
    assert not verify_password(PASSWORD, "plain$text")


def test_every_route_refuses_a_request_without_login(site):
    engine, _ = site
    client = client_for(engine)
    before = counts(engine)
    routes = all_routes()
    assert len(routes) >= 12
    for method, path in routes:
        if (method, path) in PUBLIC:
            continue
        response = client.request(method, concrete(path), data={"csrf": "x", "text": "x"})
        if method == "GET":
            assert response.status_code == 303, path
            assert response.headers["location"].startswith("/login"), path
        else:
            assert response.status_code == 401, (method, path)
    client.cookies.set("rolecall_session", "forged-token")
    assert client.get("/").status_code == 303
    assert counts(engine) == before


def test_a_wrong_password_and_a_login_without_its_token_are_refused(site):
    engine, _ = site
    client = client_for(engine)
    token = csrf_of(client.get("/login").text)
    response = client.post(
        "/login", data={"username": "ann1", "password": "nope-nope", "csrf": token}
    )
    assert response.status_code == 401 and "사용자 이름이나 비밀번호가 틀렸습니다" in response.text
    response = client.post(
        "/login", data={"username": "ann1", "password": PASSWORD, "csrf": "guess"}
    )
    assert response.status_code == 403 and "rolecall_session" not in response.cookies
    response = client.post(
        "/login",
        data={
            "username": "ann1",
            "password": PASSWORD,
            "csrf": csrf_of(client.get("/login").text),
            "next": "//evil.example/",
        },
    )
    assert response.status_code == 303 and response.headers["location"] == "/"


def test_writes_without_a_valid_csrf_token_are_refused(site):
    engine, project_id = site
    client = client_for(engine, "ann1")
    chat = start_chat(client, project_id)
    before = counts(engine)
    for data in ({"text": "안녕"}, {"text": "안녕", "csrf": "forged"}):
        response = client.post(f"{chat}/message", data=data)
        assert response.status_code == 403 and "보안 토큰" in response.text
    assert client.post(f"/projects/{project_id}/chats", data={}).status_code == 403
    assert counts(engine) == before
    # a token of another login does not work either
    other = client_for(engine, "ann2")
    foreign = csrf_of(other.get(f"/projects/{project_id}/chat").text)
    assert client.post(f"{chat}/message", data={"csrf": foreign, "text": "x"}).status_code == 403


def test_annotators_cannot_see_or_change_each_others_chats(site):
    engine, project_id = site
    owner = client_for(engine, "ann1")
    chat = start_chat(owner, project_id)
    assert post(owner, f"{chat}/message", chat, text="제 이야기예요").status_code == 303
    before = counts(engine)
    intruder = client_for(engine, "ann2")
    token = csrf_of(intruder.get(f"/projects/{project_id}/chat").text)
    page = intruder.get(chat)
    assert page.status_code == 404 and "제 이야기예요" not in page.text
    for action in ("message", "save", "reply"):
        data = {"csrf": token, "once": once(), "text": "침입"}
        response = intruder.post(f"{chat}/{action}", data=data)
        assert response.status_code == 404, action
    with session(engine) as db:
        bot_turn = db.scalars(select(ChatTurn).where(ChatTurn.role == "bot")).first()
    response = intruder.post(
        f"{chat}/turns/{bot_turn.id}/fix",
        data={"csrf": token, "once": once(), "category": "not safe"},
    )
    assert response.status_code == 404
    assert counts(engine) == before
    # not a member: the project is invisible; not an admin: no admin pages, no export
    outsider = client_for(engine, "ann3")
    assert outsider.get(f"/projects/{project_id}/chat").status_code == 404
    assert outsider.get("/admin").status_code == 403
    assert outsider.get(f"/projects/{project_id}/export/examples.jsonl").status_code == 403


def test_oversized_and_malformed_input_is_refused_and_changes_nothing(site):
    engine, project_id = site
    client = client_for(engine, "ann1")
    chat = start_chat(client, project_id)
    token = csrf_of(client.get(chat).text)
    before = counts(engine)
    response = client.post(
        f"{chat}/message", data={"csrf": token, "once": once(), "text": "가" * 2001}
    )
    assert response.status_code == 422 and "text" in response.text
    response = client.post(f"{chat}/message", data={"csrf": token, "once": once(), "text": "   "})
    assert response.status_code == 422 and "비어 있습니다" in response.text
    response = client.post(f"{chat}/message", data={"csrf": token, "text": "안녕"})
    assert response.status_code == 422 and "일회용 토큰" in response.text
    response = client.post(
        f"{chat}/message",
        content=b"x" * 1_100_000,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 413
    response = client.post(
        f"{chat}/turns/999999/fix", data={"csrf": token, "once": once(), "category": "not safe"}
    )
    assert response.status_code == 404
    assert client.get("/chats/not-a-number").status_code == 422
    assert counts(engine) == before
    admin = client_for(engine, "admin")
    token = csrf_of(admin.get("/admin").text)
    for spec in ("name: [unclosed", "name: x\noutline: y\ncategories: []"):
        data = {"csrf": token, "once": once(), "name": "bad", "spec": spec}
        response = admin.post("/admin/projects", data=data)
        assert response.status_code == 422 and "역할 명세" in response.text  # "the role spec"
    response = admin.post(
        "/admin/users", data={"csrf": token, "username": "short", "password": "1234"}
    )
    assert response.status_code == 400 and "too short" in response.text
    assert counts(engine) == before


@pytest.mark.parametrize("path", ["/login", "/"])
def test_pages_carry_security_headers(site, path):
    engine, _ = site
    response = client_for(engine, "ann1").get(path)
    assert response.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


def test_ids_past_the_id_columns_are_invalid_input_not_a_crash(site):
    """Before: /items/2^63 was an OverflowError (SQLite) or DataError (PostgreSQL): 500."""
    engine, _ = site
    client = client_for(engine, "ann1")
    token = csrf_of(client.get("/").text)
    for number in (2**31, 2**63, 10**30):
        for path in (f"/items/{number}", f"/chats/{number}"):
            response = client.get(path)
            assert response.status_code == 422 and "less than or equal" in response.text
        response = client.post(f"/items/{number}/label", data={"csrf": token, "shown_at": "1.x"})
        assert response.status_code == 422
    for path in (f"/items/{2**31 - 1}", f"/chats/{2**31 - 1}"):
        assert client.get(path).status_code == 404  # the largest id is merely missing
    assert client.get("/items/０１").status_code == 422  # not ASCII digits


def test_a_chunked_body_over_the_limit_gets_413_with_the_security_headers(site):
    engine, project_id = site
    client = client_for(engine, "ann1")
    chat = start_chat(client, project_id)
    token = csrf_of(client.get(chat).text)
    before = counts(engine)

    def chunks(total: int):
        yield f"csrf={token}&once={once()}&text=".encode()
        for _ in range(total // 65536):
            yield b"x" * 65536

    response = client.post(
        f"{chat}/message",
        content=chunks(1_100_000),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 413
    assert response.headers["x-frame-options"] == "DENY"
    declared = client.post(
        f"{chat}/message",
        content=b"x" * 1_100_000,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert declared.status_code == 413 and declared.headers["x-content-type-options"] == "nosniff"
    # a small chunked body still reaches the route
    small = client.post(
        f"{chat}/message",
        content=iter([f"csrf={token}&once={once()}&text=".encode(), "안녕".encode()]),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert small.status_code == 303
    assert counts(engine)[3] == before[3] + 2  # the message and the bot's answer


def test_an_unexpected_error_is_a_plain_500_with_the_security_headers(site):
    from fastapi.testclient import TestClient

    from rolecall.web import create_app

    engine, _ = site
    app = create_app(engine)

    def broken():
        raise RuntimeError("secret detail at /srv/rolecall/app.py")

    app.add_api_route("/broken", broken)
    response = TestClient(app, raise_server_exceptions=False).get("/broken")
    assert response.status_code == 500
    assert response.headers["x-frame-options"] == "DENY"
    assert "content-security-policy" in response.headers
    assert "secret detail" not in response.text and "/srv/" not in response.text


def test_messages_for_annotators_leave_out_internal_addresses_and_paths():
    from rolecall.web.deps import public

    message = (
        "OpenAI-compatible server http://127.0.0.1:42695/v1 (model m): cannot "
        "connect; see /tmp/tmpab12/upload.csv or examples/carecall/spec.yaml, K/DA"
    )
    shown = public(message)
    assert "127.0.0.1" not in shown and "/tmp/" not in shown
    assert "examples/carecall/spec.yaml" in shown and "K/DA" in shown
    assert (
        public("llm:openai:http://127.0.0.1:42695/v1#qwen:0123abcd")
        == "llm:openai:[internal]#qwen:0123abcd"
    )


def test_a_failing_bot_shows_annotators_a_reference_and_the_log_the_details(site, caplog):
    """Before: the model server's error text reached the annotator, scrubbed of URLs and
    paths only (a traceback, a Windows path, host:port came through). Now a fixed message
    and a reference; the full text is in the server log under that reference."""
    import logging

    from rolecall.web.settings import BotConfig
    from tests.web.site import make_project

    engine, _ = site
    project_id = make_project(engine, "dead bot", BotConfig(model="fake:web?permanent=true"))
    with session(engine) as db:  # ann1 may open the new project
        user = db.scalars(select(User).where(User.username == "ann1")).one()
        db.add(ProjectMember(project_id=project_id, user_id=user.id))
    client = client_for(engine, "ann1")
    chat = start_chat(client, project_id)
    with caplog.at_level(logging.ERROR, logger="rolecall.web"):
        response = post(client, f"{chat}/message", chat, text="안녕하세요")
    assert response.status_code == 400
    assert "fake failure" not in response.text and "입력한 내용은 잃지 않았습니다" in response.text
    reference = re.search(r"참조 번호를 알려 주세요: ([0-9a-f]{8})", response.text).group(1)
    logged = [r.getMessage() for r in caplog.records if reference in r.getMessage()]
    assert logged and "fake failure" in logged[0]
    with session(engine) as db:  # the user's message was kept
        assert db.scalars(select(ChatTurn).where(ChatTurn.text == "안녕하세요")).first()
