"""`rolecall web add-user / add-project / export` as a user runs them."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("fastapi")

from sqlalchemy import select  # noqa: E402

from rolecall.store import ChatSession, ChatTurn, Project, User, connect, session  # noqa: E402
from tests.cli_runs import rolecall, run_cli  # noqa: E402
from tests.paths import REPO  # noqa: E402

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


@pytest.mark.slow
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

    made = run_cli(
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
    result = run_cli("web", "add-project", "carecall", "--spec", SPEC, "--db", url)
    assert result.returncode == 2 and "exists" in result.stderr
    result = run_cli(
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
    exported = run_cli(
        "web",
        "export",
        "carecall",
        "--out",
        str(tmp_path / "ex.jsonl"),
        "--pairs",
        str(tmp_path / "pairs.csv"),
        "--pair-labels",
        str(tmp_path / "labels.csv"),
        "--labels",
        str(tmp_path / "every.jsonl"),
        "--db",
        url,
    )
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["negatives"] == 1
    assert json.loads(exported.stdout)["positives_from_saved_chats"] == 0  # none saved
    # no item labelled here: an empty labels file, replaced by the next export
    assert json.loads(exported.stdout)["labels"] == 0
    assert (tmp_path / "every.jsonl").read_text(encoding="utf-8") == ""
    as_sheet = [*exported.args[:3], "--out", str(tmp_path / "ex.jsonl"), "--db", url]
    sheet = run_cli(*as_sheet, "--labels", str(tmp_path / "every.csv"))
    assert sheet.returncode == 0, sheet.stderr
    assert (tmp_path / "every.csv").read_text(encoding="utf-8").startswith("item,item_kind,")
    row = json.loads((tmp_path / "ex.jsonl").read_text(encoding="utf-8"))
    assert (row["label"], row["category"], row["response"]) == ("negative", "style", "반가워요")
    assert (tmp_path / "pairs.csv").read_text(encoding="utf-8") == "neutral,implicit\n"
    assert (
        (tmp_path / "labels.csv")
        .read_text(encoding="utf-8")
        .startswith("item_id,filter,label,annotator")
    )
    result = run_cli("web", "export", "missing", "--out", str(tmp_path / "x"), "--db", url)
    assert result.returncode == 2 and "no project" in result.stderr
    # an export replaces its own earlier files, never another file
    again = [*exported.args[:3], "--out", str(tmp_path / "ex.jsonl"), "--db", url]
    assert run_cli(*again).returncode == 0
    (tmp_path / "notes.txt").write_text("keep me", encoding="utf-8")
    refused = run_cli(*again[:3], "--out", str(tmp_path / "notes.txt"), "--db", url)
    assert refused.returncode == 2 and "is not an earlier export" in refused.stderr
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "keep me"
    # nothing to export: said, not silent
    made = run_cli("web", "add-project", "empty", "--spec", SPEC, "--db", url)
    assert made.returncode == 0, made.stderr
    nothing = run_cli("web", "export", "empty", "--out", str(tmp_path / "e.jsonl"), "--db", url)
    assert nothing.returncode == 0 and "holds 0 examples" in nothing.stderr


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
        assert "로그인" in form.text  # the login page, in Korean by default
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


def test_add_redteam_sends_failures_to_label_once_and_stores_rates(tmp_path):
    from rolecall.store import Assignment, Item, ItemKind, RedteamRate
    from tests.redteam_runs import redteam_run

    url = f"sqlite:///{tmp_path / 'web.sqlite'}"
    assert add_user(url, "ann", "long enough password")[0] == 0
    made = run_cli("web", "add-project", "carecall", "--spec", SPEC, "--member", "ann", "--db", url)
    assert made.returncode == 0, made.stderr
    run = redteam_run(tmp_path / "rt")  # 2 conversations per kind; explicit ones fail

    def add(*extra: str) -> dict:
        result = run_cli("web", "add-redteam", "carecall", str(run), "--db", url, *extra)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    first = add()
    assert (first["conversations"], first["failures"], first["items_added"]) == (6, 2, 2)
    assert {(r["attack"], r["n"], r["not_safe"], r["out_of_role"]) for r in first["rates"]} == {
        ("explicit", 2, 2, 2),
        ("kda", 2, 0, 0),
        ("neutral", 2, 0, 0),
    }
    again = add()
    assert (again["items_added"], again["items_already_there"]) == (0, 2)
    everything = add("--all")  # the in-bounds conversations too, the failures not twice
    assert (everything["items_added"], everything["items_already_there"]) == (4, 2)

    redteam_run(tmp_path / "rt", conversations=3)  # the run resumed with one more each
    grown = add()
    assert (grown["failures"], grown["items_added"], grown["items_already_there"]) == (3, 1, 2)
    engine = connect(url)
    with session(engine) as db:
        items = db.scalars(select(Item).order_by(Item.id)).all()
        assert len(items) == 7 and {i.kind for i in items} == {ItemKind.DIALOGUE}
        assert len({i.source for i in items}) == 7
        assert items[0].source == f"{run.resolve()}:explicit-0"
        explicit = items[0].payload
        assert explicit["metadata"]["redteam"]["outcome"]["not_safe"] is True
        assert explicit["turns"][4]["out_of_bounds"] is True  # the judges' verdict, kept
        assert len(db.scalars(select(Assignment)).all()) == 7  # one annotator each
        rates = db.scalars(select(RedteamRate).order_by(RedteamRate.attack)).all()
        assert [(r.attack, r.n, r.not_safe, r.repeated) for r in rates] == [
            ("explicit", 3, 3, 3),
            ("kda", 3, 0, 0),
            ("neutral", 3, 0, 0),
        ]  # updated, not added
        assert {(r.bot_version, r.judges) for r in rates} == {("echo-v1", "rules:curse")}
    engine.dispose()


def test_add_redteam_errors_say_what_to_fix(tmp_path):
    url = f"sqlite:///{tmp_path / 'web.sqlite'}"
    made = run_cli("web", "add-project", "carecall", "--spec", SPEC, "--db", url)
    assert made.returncode == 0, made.stderr
    dialogues = tmp_path / "dialogues"
    dialogues.mkdir()
    (dialogues / "manifest.json").write_text(json.dumps({"command": "dialogues"}), "utf-8")
    empty = tmp_path / "empty"
    empty.mkdir()
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "conversations.jsonl").write_text(
        json.dumps({"id": "d1", "turns": [{"role": "system", "text": "안녕"}]}) + "\n", "utf-8"
    )
    for project, folder, code, message in [
        ("nope", empty, 2, "no project 'nope'"),
        ("carecall", tmp_path / "missing", 2, "not a directory"),
        ("carecall", dialogues, 2, "'rolecall dialogues', not of 'rolecall redteam'"),
        ("carecall", empty, 2, "holds no conversations.jsonl"),
        ("carecall", wrong, 1, "conversations.jsonl:1: not a valid RedteamConversation"),
    ]:
        result = run_cli("web", "add-redteam", project, str(folder), "--db", url)
        assert result.returncode == code, (message, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr
    # a failure to add, with no annotator in the project: says so, adds nothing
    from tests.redteam_runs import redteam_run

    run = redteam_run(tmp_path / "rt")
    # a red-team run stopped before its report: not taken
    (run / "report.json").rename(tmp_path / "report.json")
    result = run_cli("web", "add-redteam", "carecall", str(run), "--db", url)
    assert result.returncode == 2 and "unfinished red-team run" in result.stderr
    (tmp_path / "report.json").rename(run / "report.json")
    result = run_cli("web", "add-redteam", "carecall", str(run), "--db", url)
    assert result.returncode == 2 and "rolecall web add-member PROJECT NAME" in result.stderr
    from rolecall.store import Item, RedteamRate

    engine = connect(url)
    with session(engine) as db:
        assert db.scalars(select(Item)).all() == db.scalars(select(RedteamRate)).all() == []
    engine.dispose()
    # the fix it names works: an annotator added to the existing project, then the run
    assert add_user(url, "ann", "long enough password")[0] == 0
    for _ in range(2):  # a second time is no error
        added = run_cli("web", "add-member", "carecall", "ann", "--db", url)
        assert added.returncode == 0, added.stderr
        assert json.loads(added.stdout) == {"project": "carecall", "members": ["ann"]}
    result = run_cli("web", "add-redteam", "carecall", str(run), "--db", url)
    assert result.returncode == 0 and json.loads(result.stdout)["items_added"] == 2
    for extra, message in [
        (["nope", "ann"], "no project 'nope'"),
        (["carecall", "nobody"], "rolecall web add-user nobody"),
    ]:
        result = run_cli("web", "add-member", *extra, "--db", url)
        assert result.returncode == 2 and message in result.stderr


def test_bots_and_outputs_are_checked_before_they_are_stored(tmp_path):
    """A model string or bot directory that cannot chat is refused by add-project (not at
    the first chat message); export refuses a directory or a path under a file as --out."""
    url = f"sqlite:///{tmp_path / 'web.sqlite'}"
    not_a_bot = tmp_path / "not-a-bot"
    not_a_bot.mkdir()
    for extra, message in [
        (["-m", "embedded"], "did you mean llamacpp:embedded?"),
        (["-m", "nosuch:x"], "unknown backend 'nosuch'"),
        (["--bot", str(not_a_bot)], "not a bot directory (no bot.json in it)"),
    ]:
        result = run_cli("web", "add-project", "p", "--spec", SPEC, *extra, "--db", url)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    made = run_cli("web", "add-project", "p", "--spec", SPEC, "-m", "fake:x", "--db", url)
    assert made.returncode == 0, made.stderr  # nothing was stored by the refusals
    a_file = tmp_path / "a-file"
    a_file.write_text("kept", encoding="utf-8")
    for target, message in [
        (tmp_path, "is a directory: give a file name in it"),
        (a_file / "ex.jsonl", "is a file, not a directory"),
    ]:
        result = run_cli("web", "export", "p", "--out", str(target), "--db", url)
        flat = re.sub(r"[\s│]", "", result.stderr)
        assert result.returncode == 2 and re.sub(r"\s", "", message) in flat, result.stderr
    assert a_file.read_text(encoding="utf-8") == "kept"
    nested = tmp_path / "new" / "folder" / "ex.jsonl"
    result = run_cli("web", "export", "p", "--out", str(nested), "--db", url)
    assert result.returncode == 0 and nested.is_file()


def test_a_project_moves_to_the_next_bot_version(tmp_path):
    """#47: set-bot stores the new bot (checked as add-project checks it) and keeps the rest
    of the project's settings; a refused bot stores nothing."""
    from rolecall.web.settings import parse_settings

    url = f"sqlite:///{tmp_path / 'web.sqlite'}"
    zone = ["--time-zone", "Mars/Base"]  # issue 50 item 7: a project's time zone, checked
    refused = run_cli("web", "add-project", "p", "--spec", SPEC, *zone, "--db", url)
    assert refused.returncode == 2 and "unknown time zone 'Mars/Base'" in refused.stderr
    assert "such as Asia/Seoul or UTC" in refused.stderr and not (tmp_path / "web.sqlite").exists()
    made = run_cli("web", "add-project", "p", "--spec", SPEC, "-m", "fake:v1", "--db", url)
    assert made.returncode == 0, made.stderr
    for extra, message in [
        ([], "give the bot to move to"),
        (["-m", "embedded"], "did you mean llamacpp:embedded?"),
        (["--bot", str(tmp_path)], "not a bot directory (no bot.json in it)"),
    ]:
        result = run_cli("web", "set-bot", "p", *extra, "--db", url)
        assert result.returncode == 2 and message in result.stderr, result.stderr
    moved = run_cli("web", "set-bot", "p", "-m", "fake:v2", "--db", url)
    assert moved.returncode == 0 and "unchanged" not in moved.stderr, moved.stderr
    again = run_cli("web", "set-bot", "p", "-m", "fake:v2", "--db", url)
    assert again.returncode == 0 and "its setting is unchanged" in again.stderr
    answer = json.loads(moved.stdout)
    assert (answer["from"]["model"], answer["to"]["model"]) == ("fake:v1", "fake:v2")
    engine = connect(url)
    with session(engine) as db:
        project = db.scalar(select(Project).where(Project.name == "p"))
        settings = parse_settings(project.settings)
        assert settings.bot.model == "fake:v2" and settings.spec.name == "carecall"
        assert settings.time_zone == "Asia/Seoul"  # KST unless --time-zone says otherwise
    engine.dispose()


def test_a_database_that_is_not_there_is_made_only_by_the_commands_that_start_one(tmp_path):
    """A mistyped --db made an empty database, even for an export (issue 48's third re-run)."""
    missing = tmp_path / "nodir" / "web.sqlite"
    url = f"sqlite:///{missing}"
    for command in (
        ["export", "p", "--out", str(tmp_path / "out.jsonl")],
        ["add-member", "p", "u"],
    ):
        result = run_cli("web", *command, "--db", url)
        assert result.returncode == 2 and f"no database at {missing}" in result.stderr
        assert not missing.exists() and not (tmp_path / "nodir").exists()
    made = run_cli("web", "add-project", "p", "--spec", SPEC, "-m", "fake:x", "--db", url)
    assert made.returncode == 0 and f"a new database at {missing}" in made.stderr
    again = run_cli("web", "add-project", "q", "--spec", SPEC, "-m", "fake:x", "--db", url)
    assert again.returncode == 0 and "a new database" not in again.stderr
