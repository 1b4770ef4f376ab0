"""Feedback -> training examples, in the JSONL the ``rolecall train`` commands read.

From the chats of a project:

- every bot turn rejected with Fix -> a **negative** example: its error category and the
  dialogue up to it (saved or not: the rejection itself is the label);
- every bot turn of a saved dialogue -> a **positive** example with the dialogue up to it.

``dialogue_id`` is ``chat-<id>``, so the held-out splits of the training commands keep a
dialogue's examples together. Unsaved dialogues give no positives (nobody vouched for them).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from rolecall.records import Example
from rolecall.store import ChatSession, Project, Speaker, TurnStatus, WebSession
from rolecall.web.chat import as_history, live_turns
from rolecall.web.deps import DB, Refused, admin

router = APIRouter()


def chat_examples(db: Session, project_id: int) -> list[Example]:
    examples = []
    chats = db.scalars(select(ChatSession).where(ChatSession.project_id == project_id)
                       .order_by(ChatSession.id)).all()
    for chat in chats:
        live = live_turns(chat)
        dialogue = f"chat-{chat.id}"
        for turn in sorted(chat.turns, key=lambda t: (t.index, t.id)):
            if turn.role != Speaker.BOT or turn.status == TurnStatus.SHOWN:
                continue
            history = as_history([t for t in live if t.index < turn.index])
            if turn.status == TurnStatus.FIXED:
                examples.append(Example(history=history, response=turn.text, label="negative",
                                        category=turn.error_category, dialogue_id=dialogue))
            else:
                examples.append(Example(history=history, response=turn.text,
                                        label="positive", dialogue_id=dialogue))
    return examples


def examples_jsonl(examples: list[Example]) -> str:
    return "".join(e.model_dump_json() + "\n" for e in examples)


@router.get("/projects/{project_id}/export/examples.jsonl")
def export_examples(project_id: int, _login: WebSession = Depends(admin),
                    db: Session = DB):
    project = db.get(Project, project_id)
    if project is None:
        raise Refused(404, "no such project")
    return Response(examples_jsonl(chat_examples(db, project.id)),
                    media_type="application/x-ndjson", headers={
                        "content-disposition":
                            f'attachment; filename="project-{project.id}-examples.jsonl"'})
