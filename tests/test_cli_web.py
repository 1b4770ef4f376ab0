"""`rolecall web add-user / add-project / export` as a user runs them."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")

from sqlalchemy import select  # noqa: E402

from rolecall.store import ChatSession, ChatTurn, Project, User, connect, session  # noqa: E402
from tests.cli_runs import rolecall, run_to_end  # noqa: E402
from tests.web.conftest import REPO  # noqa: E402

SPEC = str(REPO / "examples" / "carecall" / "spec.yaml")


def add_user(url: str, name: str, password: str, *extra: str):
    process = rolecall(
        "web",
        "add-user",
        name,
        "--password-stdin",
        "--db",
        url,
        *extra,
        stdin=__import__("subprocess").PIPE,
    )
    stdout, stderr = process.communicate(password + "\n", timeout=120)
    return process.returncode, stdout, stderr


def test_accounts_projects_and_export_from_the_shell(tmp_path):
    url = f"sqlite:///{tmp_path / 'web.sqlite'}"
    code, stdout, stderr = add_user(url, "boss", "long enough password", "--admin")
    assert code == 0, stderr
    assert json.loads(stdout) == {"user": "boss", "role": "admin"}
    assert add_user(url, "ann", "long enough password")[0] == 0
    code, _, stderr = add_user(url, "ann", "another password")
    assert code == 2 and "taken" in stderr
    code, _, stderr = add_user(url, "bob", "short")
    assert code == 2 and "too short" in stderr and "Traceback" not in stderr

    made = run_to_end(
        "web",
        "add-project",
        "carecall",
        "--spec",
        SPEC,
        "-m",
        "fake:x",
        "--member",
        "ann",
        "--db",
        url,
    )
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["members"] == ["ann"]
    result = run_to_end("web", "add-project", "carecall", "--spec", SPEC, "--db", url)
    assert result.returncode == 2 and "exists" in result.stderr
    result = run_to_end(
        "web", "add-project", "other", "--spec", SPEC, "--member", "nobody", "--db", url
    )
    assert result.returncode == 2 and "no user 'nobody'" in result.stderr
    engine = connect(url)
    with session(engine) as db:
        assert db.scalar(select(Project).where(Project.name == "other")) is None  # rolled back
        project = db.scalar(select(Project).where(Project.name == "carecall"))
        user = db.scalar(select(User).where(User.username == "ann"))
        assert user.password_hash.startswith("scrypt$")
        chat = ChatSession(project_id=project.id, user_id=user.id)
        db.add(chat)
        db.flush()
        db.add_all(
            [
                ChatTurn(session_id=chat.id, index=0, role="user", text="안녕하세요"),
                ChatTurn(
                    session_id=chat.id,
                    index=1,
                    role="bot",
                    text="반가워요",
                    status="fixed",
                    error_category="style",
                ),
            ]
        )
    engine.dispose()
    exported = run_to_end(
        "web",
        "export",
        "carecall",
        "--out",
        str(tmp_path / "ex.jsonl"),
        "--pairs",
        str(tmp_path / "pairs.csv"),
        "--pair-labels",
        str(tmp_path / "labels.csv"),
        "--db",
        url,
    )
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["negatives"] == 1
    row = json.loads((tmp_path / "ex.jsonl").read_text(encoding="utf-8"))
    assert (row["label"], row["category"], row["response"]) == ("negative", "style", "반가워요")
    assert (tmp_path / "pairs.csv").read_text(encoding="utf-8") == "neutral,implicit\n"
    assert (
        (tmp_path / "labels.csv")
        .read_text(encoding="utf-8")
        .startswith("item_id,filter,label,annotator")
    )
    result = run_to_end("web", "export", "missing", "--out", str(tmp_path / "x"), "--db", url)
    assert result.returncode == 2 and "no project" in result.stderr


def test_rolecall_serve_answers_on_loopback(tmp_path):
    import socket
    import time

    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"sqlite:///{tmp_path / 'web.sqlite'}"
    server = rolecall(
        "serve",
        "--port",
        str(port),
        "--db",
        url,
        env_extra={"ROLECALL_HOME": str(tmp_path / "home")},
    )
    try:
        deadline, answer = time.monotonic() + 60, None
        while answer is None and time.monotonic() < deadline:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/", follow_redirects=False)
            except httpx.TransportError:
                assert server.poll() is None, server.communicate()[1]
                time.sleep(0.2)
        assert answer is not None, "rolecall serve did not answer within 60 s"
        assert answer.status_code == 303 and answer.headers["location"].startswith("/login")
        form = httpx.get(f"http://127.0.0.1:{port}/login")
        assert "log in" in form.text
        assert "secure" not in form.headers["set-cookie"].lower()  # loopback: plain HTTP
    finally:
        server.terminate()
        server.communicate(timeout=30)
    secret = tmp_path / "home" / "web-secret"  # made at start, kept for the next one
    assert secret.stat().st_mode & 0o777 == 0o600 and len(secret.read_text()) == 64


def test_secure_cookies_are_on_by_default_beyond_loopback(tmp_path, monkeypatch):
    from rolecall.web.auth import is_loopback, server_secret

    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "127.0.1.1"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.5", "example.org"))
    helped = rolecall("serve", "--help", env_extra={"COLUMNS": "200"})
    stdout, _ = helped.communicate(timeout=120)
    assert "--secure-cookies" in stdout and "--no-secure-cookies" in stdout
    monkeypatch.delenv("ROLECALL_WEB_SECRET", raising=False)
    path = tmp_path / "web-secret"
    first = server_secret(path)
    assert server_secret(path) == first and len(first) == 64  # kept across restarts
    assert server_secret(None) != server_secret(None)  # no file: fresh each process
    monkeypatch.setenv("ROLECALL_WEB_SECRET", "short")
    with pytest.raises(Exception, match="32"):
        server_secret(path)
