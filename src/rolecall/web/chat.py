"""Chat with Fix (NAACL 2022, section 3.3 and Figure 6).

A person chats with the project's bot. **Fix** on the latest bot turn asks for the error
category (from the role spec), keeps the rejected turn as a negative example (status
``fixed``, its category, the full context before it) and replaces it with a regenerated
alternative at the same position; repeatable until the reply is good. **Save dialogue**
marks the live turns ``saved``: positives, except the bot turns the person ticks "leave
out" (neither wrong enough to Fix nor good enough to learn from). Every bot turn records
the bot's version and its provenance (the ``Reply`` of ``serve/reply.py`` without its
text; only its ``path`` is read back, by the dashboard and the SSA items).

The person's act (a message, a Fix) is committed before the bot is asked: a bot that
fails (a dead LLM server, a broken model directory) shows an error and loses nothing, and
"Ask the bot again" retries (after a failed Fix it still avoids the rejected replies).
No write transaction stays open while the bot thinks (SQLite has one write lock for the
whole database). Every form here claims a one-time token (``web/once.py``): the same form
sent twice gets the first one's answer, never a second bot call.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from rolecall.records import Turn
from rolecall.store import ChatSession, ChatTurn, Project, Speaker, TurnStatus, WebSession
from rolecall.web.bots import bot_for
from rolecall.web.deps import DB, ID, MAX_TEXT, Refused, logged_in, page, writer
from rolecall.web.i18n import language_of
from rolecall.web.login import visible_projects
from rolecall.web.once import Once, answered, repeat_of
from rolecall.web.settings import ProjectSettings, parse_settings

router = APIRouter()


def project_of(db: Session, login: WebSession, project_id: int) -> Project:
    for project in visible_projects(db, login):
        if project.id == project_id:
            return project
    raise Refused(404, "no such project")


def chat_of(db: Session, login: WebSession, chat_id: int) -> ChatSession:
    """The person's own chat; another person's is 'not found', like a missing one."""
    chat = db.get(ChatSession, chat_id)
    if chat is None or chat.user_id != login.user_id:
        raise Refused(404, "no such chat")
    return chat


def live_turns(chat: ChatSession) -> list[ChatTurn]:
    return sorted((t for t in chat.turns if t.status != TurnStatus.FIXED), key=lambda t: t.index)


def as_history(turns: list[ChatTurn]) -> list[Turn]:
    return [Turn(role="system" if t.role == Speaker.BOT else "user", text=t.text) for t in turns]


def bot_turns_in_context(chat: ChatSession) -> Iterator[tuple[ChatTurn, list[Turn]]]:
    """Every bot turn of the chat (kept, saved or fixed) in order, with the live dialogue
    before it: what it answered."""
    live = live_turns(chat)
    for turn in sorted(chat.turns, key=lambda t: (t.index, t.id)):
        if turn.role == Speaker.BOT:
            yield turn, as_history([t for t in live if t.index < turn.index])


def _settings(chat: ChatSession, db: Session) -> ProjectSettings:
    return parse_settings(db.get(Project, chat.project_id).settings)


def _bot_turn(chat: ChatSession, db: Session, index: int) -> ChatTurn:
    """The bot's reply at position ``index``: never one of the replies rejected there."""
    settings = _settings(chat, db)
    history = as_history([t for t in live_turns(chat) if t.index < index])
    rejected = [t for t in chat.turns if t.index == index and t.status == TurnStatus.FIXED]
    bot = bot_for(settings.bot, settings.spec)
    reply = bot.reply(history, {t.text for t in rejected})
    turn = ChatTurn(
        session_id=chat.id,
        index=index,
        role=Speaker.BOT,
        text=reply.text,
        bot_version=bot.version,
        provenance=reply.provenance(),
    )
    db.add(turn)
    db.flush()
    for old in rejected:
        if old.replaced_by is None:
            old.replaced_by = turn.id
    return turn


def _answer(chat: ChatSession, db: Session, once: str, index: int) -> RedirectResponse:
    """Commit the person's act and the form's claim, then ask the bot for position
    ``index``. A failing bot loses nothing; the form's repeats are answered either way."""
    location = f"/chats/{chat.id}"
    db.commit()
    db.refresh(chat)
    try:
        _bot_turn(chat, db, index)
    except BaseException:
        db.rollback()
        answered(db, once, location)
        db.commit()
        raise
    return answered(db, once, location)


def _open(chat: ChatSession) -> None:
    if chat.saved is not None:
        raise Refused(409, "this dialogue is saved and closed: start a new chat")


@router.get("/projects/{project_id}/chat")
def chats(
    request: Request, project_id: ID, login: WebSession = Depends(logged_in), db: Session = DB
):
    project = project_of(db, login, project_id)
    mine = db.scalars(
        select(ChatSession)
        .where(ChatSession.project_id == project.id, ChatSession.user_id == login.user_id)
        .order_by(ChatSession.id.desc())
    ).all()
    return page(request, "chats.html", project=project, chats=mine)


@router.post("/projects/{project_id}/chats")
def new_chat(project_id: ID, once: Once, login: WebSession = Depends(writer), db: Session = DB):
    if repeat := repeat_of(db, login, once, f"/projects/{project_id}/chat"):
        return repeat
    project = project_of(db, login, project_id)
    parse_settings(project.settings)  # a project without a usable spec cannot chat
    chat = ChatSession(project_id=project.id, user_id=login.user_id)
    db.add(chat)
    db.flush()
    return answered(db, once, f"/chats/{chat.id}")


@router.get("/chats/{chat_id}")
def show_chat(
    request: Request, chat_id: ID, login: WebSession = Depends(logged_in), db: Session = DB
):
    chat = chat_of(db, login, chat_id)
    turns = live_turns(chat)
    rejected: dict[int, list[ChatTurn]] = {}
    for turn in chat.turns:
        if turn.status == TurnStatus.FIXED:
            rejected.setdefault(turn.index, []).append(turn)
    last_bot = max((t.index for t in turns if t.role == Speaker.BOT), default=None)
    settings = _settings(chat, db)
    return page(
        request,
        "chat.html",
        chat=chat,
        project=db.get(Project, chat.project_id),
        turns=turns,
        rejected=rejected,
        last_bot=last_bot,
        waiting=bool(turns) and turns[-1].role == Speaker.USER,
        categories=settings.error_categories,
        names=settings.names(language_of(request)),
        max_text=MAX_TEXT,
    )


@router.post("/chats/{chat_id}/message")
def send(
    chat_id: ID,
    once: Once,
    text: str = Form(..., min_length=1, max_length=MAX_TEXT),
    login: WebSession = Depends(writer),
    db: Session = DB,
):
    if repeat := repeat_of(db, login, once, f"/chats/{chat_id}"):
        return repeat
    chat = chat_of(db, login, chat_id)
    _open(chat)
    text = text.strip()
    if not text:
        raise Refused(422, "the message is empty")
    turns = live_turns(chat)
    if turns and turns[-1].role == Speaker.USER:
        raise Refused(409, "the bot has not answered your last message yet: ask it again")
    db.add(ChatTurn(session_id=chat.id, index=len(turns), role=Speaker.USER, text=text))
    return _answer(chat, db, once, len(turns) + 1)


@router.post("/chats/{chat_id}/reply")
def ask_again(chat_id: ID, once: Once, login: WebSession = Depends(writer), db: Session = DB):
    if repeat := repeat_of(db, login, once, f"/chats/{chat_id}"):
        return repeat
    chat = chat_of(db, login, chat_id)
    _open(chat)
    turns = live_turns(chat)
    if not turns or turns[-1].role != Speaker.USER:
        raise Refused(409, "there is no message waiting for the bot")
    return _answer(chat, db, once, len(turns))


@router.post("/chats/{chat_id}/turns/{turn_id}/fix")
def fix(
    chat_id: ID,
    turn_id: ID,
    once: Once,
    category: str = Form(..., max_length=64),
    login: WebSession = Depends(writer),
    db: Session = DB,
):
    if repeat := repeat_of(db, login, once, f"/chats/{chat_id}"):
        return repeat
    chat = chat_of(db, login, chat_id)
    _open(chat)
    categories = _settings(chat, db).error_categories
    if category not in categories:
        raise Refused(
            422,
            "unknown error category {category}; the role spec has {categories}",
            category=repr(category),
            categories=", ".join(categories),
        )
    turns = live_turns(chat)
    turn = next((t for t in turns if t.id == turn_id), None)
    if turn is None or turn.role != Speaker.BOT:
        raise Refused(404, "no such bot turn in this chat")
    if turn.index != max(t.index for t in turns if t.role == Speaker.BOT):
        raise Refused(409, "only the latest bot turn can be fixed")
    turn.status, turn.error_category = TurnStatus.FIXED, category
    # committed before the bot is asked: its position is free for the replacement (the
    # partial unique index) and a failing bot leaves "ask the bot again", not a lost Fix
    return _answer(chat, db, once, turn.index)


@router.post("/chats/{chat_id}/save")
def save(
    chat_id: ID,
    once: Once,
    leave_out: Annotated[list[int], Form()] = [],  # noqa: B006 (FastAPI copies defaults)
    login: WebSession = Depends(writer),
    db: Session = DB,
):
    """The chat's live turns become ``saved`` (its bot turns positives), except the bot
    turns the person left out (a repeated greeting is not wrong enough to Fix, nor good
    enough to learn from): they stay "shown", in no example."""
    if repeat := repeat_of(db, login, once, f"/chats/{chat_id}"):
        return repeat
    chat = chat_of(db, login, chat_id)
    _open(chat)
    turns = live_turns(chat)
    if not any(t.role == Speaker.BOT for t in turns):
        raise Refused(409, "nothing to save yet: chat first")
    left_out = set(leave_out)
    for turn in turns:
        if not (turn.role == Speaker.BOT and turn.id in left_out):
            turn.status = TurnStatus.SAVED
    chat.saved = datetime.now(UTC)
    return answered(db, once, f"/chats/{chat.id}")
