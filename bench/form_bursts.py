"""Every state-changing web form sent many times at once, and a burst of wrong passwords
(issue 34): the part of ``bench/webapp_load.py`` that runs after its load window, on the
same server and database.

Forms: as a member, a new chat, a message, Fix on the bot's reply, "ask the bot again"
(for a message the bot did not answer, written straight into the database as a failed
reply leaves it), Save; as an admin, a new project, an upload of K/DA pairs (CSV), SSA
items from the saved chat, a new account and a project member. Each form is loaded once
and the same body sent ``submits`` times at once (a double click, exaggerated). Every
copy must be answered with a redirect (no server error), and the database must then hold
exactly the rows one submit makes (``expected`` per form). The project's bot is the test
suite's fake LLM (``tests/fakes.py``) with a delay, so that the copies of a chat form
arrive while the first waits for its reply; its calls are logged to a file and must be
those of one reply per chat form: a repeat never asks the bot again.

Throttle: ``attempts`` wrong passwords for one account sent at once; at most the
per-account limit may be checked (401), the rest refused (429), and the right password
afterwards too (the account is locked).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path

import httpx
from sqlalchemy import func, select

from rolecall.store import (
    ChatSession,
    ChatTurn,
    Item,
    ItemKind,
    Project,
    ProjectMember,
    Role,
    Speaker,
    TurnStatus,
    User,
    connect,
    session,
)
from rolecall.web.auth import add_user
from rolecall.web.throttle import LoginLimits

FORM = re.compile(r'<form [^>]*action="([^"]+)"[^>]*>(.*?)</form>', re.S)
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
ADMIN, LOCKED = "burst-admin", "burst-locked"
NEW_USER = "burst-new"
PROJECT = "burst-project"
UPLOAD = "burst.csv"
BOT_DELAY_S = 0.2


def bot_model(calls_file: Path) -> str:
    """The fake LLM the bursts' project chats with (the server must import tests.fakes)."""
    return f"fake:bench?delay={BOT_DELAY_S}&calls_file={calls_file}"


def add_accounts(url: str, password: str) -> None:
    engine = connect(url)
    try:
        with session(engine) as db:
            add_user(db, ADMIN, password, Role.ADMIN)
            add_user(db, LOCKED, password)
    finally:
        engine.dispose()


async def log_in(client: httpx.AsyncClient, username: str, password: str) -> httpx.Response:
    form = await client.get("/login")
    data = {"username": username, "password": password, "csrf": CSRF.search(form.text).group(1)}
    return await client.post("/login", data=data)


async def send_form(
    client: httpx.AsyncClient,
    page: str,
    action: str,
    submits: int,
    data: dict | None = None,
    files: dict | None = None,
) -> dict:
    """The form of ``page`` that posts to ``action``, sent ``submits`` times at once."""
    html = (await client.get(page)).text
    body = next((b for target, b in FORM.findall(html) if target == action), None)
    if body is None:
        raise SystemExit(f"no form posts to {action} on {page}: the page changed?")
    fields = {**dict(HIDDEN.findall(body)), **(data or {})}
    answers = await asyncio.gather(
        *(client.post(action, data=fields, files=files) for _ in range(submits)),
        return_exceptions=True,
    )
    statuses = Counter(
        type(a).__name__ if isinstance(a, Exception) else a.status_code for a in answers
    )
    locations = {a.headers.get("location") for a in answers if not isinstance(a, Exception)}
    return {
        "submits": submits,
        "redirects": statuses.get(303, 0),
        "server_errors": sum(n for s, n in statuses.items() if not isinstance(s, int) or s >= 500),
        "statuses": {str(s): n for s, n in statuses.items()},
        "location": sorted(str(x) for x in locations)[0] if len(locations) == 1 else None,
    }


def calls(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def user_turn(url: str, chat_id: int, text: str) -> None:
    """A message the bot did not answer (its call failed), as ``send`` leaves it."""
    engine = connect(url)
    try:
        with session(engine) as db:
            index = db.scalar(
                select(func.count())
                .select_from(ChatTurn)
                .where(ChatTurn.session_id == chat_id, ChatTurn.status != TurnStatus.FIXED)
            )
            db.add(ChatTurn(session_id=chat_id, index=index, role=Speaker.USER, text=text))
    finally:
        engine.dispose()


async def chat_forms(
    base: str, chatter: str, password: str, project_id: int, submits: int, timeout: float,
    calls_file: Path, category: str, url: str,
) -> tuple[dict, int | None, int]:  # fmt: skip
    """The member's forms; (per form, the chat's id, bot calls of one reply)."""
    results: dict[str, dict] = {}
    async with httpx.AsyncClient(base_url=base, timeout=timeout) as client:
        if (await log_in(client, chatter, password)).status_code != 303:
            raise SystemExit(f"{chatter} could not log in for the bursts")
        # one reply, sent once: what a reply costs in bot calls
        warm = await send_form(client, f"/projects/{project_id}/chat",
                               f"/projects/{project_id}/chats", 1)  # fmt: skip
        before = calls(calls_file)
        await send_form(client, warm["location"], f"{warm['location']}/message", 1,
                        {"text": "처음 뵙겠습니다"})  # fmt: skip
        per_reply = calls(calls_file) - before
        chats = f"/projects/{project_id}/chat"
        results["new chat"] = await send_form(client, chats, f"/projects/{project_id}/chats",
                                              submits)  # fmt: skip
        chat = results["new chat"]["location"]
        if chat is None or not chat.startswith("/chats/"):
            return results, None, per_reply
        results["message"] = await send_form(
            client, chat, f"{chat}/message", submits, {"text": "안녕하세요, 잘 지내셨어요?"}
        )
        html = (await client.get(chat)).text
        fix = next(t for t, _ in FORM.findall(html) if t.endswith("/fix"))
        results["fix"] = await send_form(client, chat, fix, submits, {"category": category})
        user_turn(url, int(chat.rsplit("/", 1)[1]), "여보세요? 제 말 들리세요?")
        results["ask again"] = await send_form(client, chat, f"{chat}/reply", submits)
        results["save"] = await send_form(client, chat, f"{chat}/save", submits)
    return results, int(chat.rsplit("/", 1)[1]), per_reply


async def admin_forms(
    base: str, password: str, project_id: int, submits: int, timeout: float, spec: str,
    pairs_csv: str,
) -> dict:  # fmt: skip
    results: dict[str, dict] = {}
    async with httpx.AsyncClient(base_url=base, timeout=timeout) as client:
        if (await log_in(client, ADMIN, password)).status_code != 303:
            raise SystemExit(f"{ADMIN} could not log in for the bursts")
        project = f"/admin/projects/{project_id}"
        results["new project"] = await send_form(
            client, "/admin", "/admin/projects", submits,
            {"name": PROJECT, "spec": spec, "bot_model": "fake:bench"},
        )  # fmt: skip
        results["upload"] = await send_form(
            client, "/admin", f"{project}/items", submits, {"kind": "pair", "per_item": "1"},
            files={"file": (UPLOAD, pairs_csv.encode("utf-8"))},
        )  # fmt: skip
        results["SSA items"] = await send_form(
            client, "/admin", f"{project}/ssa-items", submits, {"per_item": "1"}
        )
        results["new account"] = await send_form(
            client, "/admin", "/admin/users", submits,
            {"username": NEW_USER, "password": password, "role": "annotator"},
        )  # fmt: skip
        results["member"] = await send_form(
            client, "/admin", f"{project}/members", submits, {"username": NEW_USER}
        )
    return results


def effects(url: str, project_id: int, chat_id: int | None, uploaded: int) -> dict:
    """Per form: (rows found, rows one submit makes)."""
    engine = connect(url)
    try:
        with session(engine) as db:
            turns = db.scalars(select(ChatTurn).where(ChatTurn.session_id == chat_id)).all()
            bot_ids = {t.id for t in turns if t.role == Speaker.BOT}
            ssa = [
                p.get("chat_turn_id")
                for p in db.scalars(
                    select(Item.payload).where(
                        Item.project_id == project_id, Item.kind == ItemKind.BOT_TURN
                    )
                )
            ]
            new_user = db.scalar(select(User.id).where(User.username == NEW_USER))
            found = {
                "new chat": (
                    db.scalar(
                        select(func.count())
                        .select_from(ChatSession)
                        .where(ChatSession.project_id == project_id)
                    ),
                    2,
                ),  # the burst's chat and the one that measured a reply
                "message": (sum(t.text == "안녕하세요, 잘 지내셨어요?" for t in turns), 1),
                "fix": (sum(t.status == TurnStatus.FIXED for t in turns), 1),
                "ask again": (sum(t.role == Speaker.BOT and t.index == 3 for t in turns), 1),
                "save": (sum(t.status == TurnStatus.SAVED for t in turns), 4),
                "new project": (
                    db.scalar(
                        select(func.count()).select_from(Project).where(Project.name == PROJECT)
                    ),
                    1,
                ),
                "upload": (
                    db.scalar(
                        select(func.count())
                        .select_from(Item)
                        .where(Item.project_id == project_id, Item.source.like(f"{UPLOAD}%"))
                    ),
                    uploaded,
                ),
                "SSA items": (len(ssa), len(bot_ids)),  # the saved chat's bot turns
                "new account": (
                    db.scalar(
                        select(func.count()).select_from(User).where(User.username == NEW_USER)
                    ),
                    1,
                ),
                "member": (
                    db.scalar(
                        select(func.count())
                        .select_from(ProjectMember)
                        .where(ProjectMember.user_id == new_user)
                    ),
                    1,
                ),
            }
    finally:
        engine.dispose()
    return found


async def throttle_burst(base: str, attempts: int, password: str, timeout: float) -> dict:
    async with httpx.AsyncClient(base_url=base, timeout=timeout) as client:
        form = await client.get("/login")
        token = CSRF.search(form.text).group(1)
        wrong = {"username": LOCKED, "password": password + "-wrong", "csrf": token}
        answers = await asyncio.gather(
            *(client.post("/login", data=wrong) for _ in range(attempts)), return_exceptions=True
        )
        right = await log_in(client, LOCKED, password)
    statuses = Counter(
        type(a).__name__ if isinstance(a, Exception) else a.status_code for a in answers
    )
    return {
        "attempts": attempts,
        "checked": statuses.get(401, 0),
        "refused": statuses.get(429, 0),
        "limit": LoginLimits().per_account,
        "server_errors": sum(n for s, n in statuses.items() if not isinstance(s, int) or s >= 500),
        "statuses": {str(s): n for s, n in statuses.items()},
        "right_password_after": right.status_code,
    }
