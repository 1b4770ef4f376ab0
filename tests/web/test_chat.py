"""Chat with Fix and Save through the app's routes; export of the feedback."""

from __future__ import annotations

import json

from sqlalchemy import select

from rolecall.store import ChatTurn, TurnStatus, session
from tests.web.site import client_for, post, start_chat


def test_chat_fix_twice_save_and_export(site):
    engine, project_id = site
    client = client_for(engine, "ann1")
    chat = start_chat(client, project_id)
    assert post(client, f"{chat}/message", chat, text="안녕하세요").status_code == 303
    assert post(client, f"{chat}/message", chat, text="오늘 병원에 다녀왔어요").status_code == 303
    with session(engine) as db:
        turns = db.scalars(select(ChatTurn).order_by(ChatTurn.id)).all()
        assert [(t.index, t.role) for t in turns] == [
            (0, "user"),
            (1, "bot"),
            (2, "user"),
            (3, "bot"),
        ]
        assert all(t.bot_version.startswith("llm:fake:fake-web:") for t in turns if t.role == "bot")
        last = turns[-1]
    seen = {last.text}
    for category in ("not sensible", "not safe"):
        response = post(client, f"{chat}/turns/{last.id}/fix", chat, category=category)
        assert response.status_code == 303, response.text
        with session(engine) as db:
            live = db.scalars(
                select(ChatTurn).where(ChatTurn.index == 3, ChatTurn.status != "fixed")
            ).one()
            fixed = db.get(ChatTurn, last.id)
            assert fixed.status == TurnStatus.FIXED and fixed.error_category == category
            assert fixed.replaced_by == live.id and live.text not in seen
            seen.add(live.text)
            last = live
    assert post(client, f"{chat}/save", chat).status_code == 303
    page = client.get(chat).text
    assert 'id="saved"' in page and 'id="send"' not in page

    admin = client_for(engine, "admin")
    exported = admin.get(f"/projects/{project_id}/export/examples.jsonl")
    assert exported.status_code == 200
    rows = [json.loads(line) for line in exported.text.splitlines()]
    negatives = [r for r in rows if r["label"] == "negative"]
    positives = [r for r in rows if r["label"] == "positive"]
    assert [r["category"] for r in negatives] == ["not sensible", "not safe"]
    assert len(positives) == 2 and positives[1]["response"] == last.text
    assert all(r["dialogue_id"] == f"chat-{chat.rsplit('/', 1)[1]}" for r in rows)
    assert [t["text"] for t in negatives[0]["history"]] == [
        "안녕하세요",
        positives[0]["response"],
        "오늘 병원에 다녀왔어요",
    ]


def test_annotators_see_no_internal_address_of_the_bot(page_site):
    """Before: the bot version shown under every bot turn was
    'llm:openai:http://127.0.0.1:42695/v1#...', the LLM server's internal address."""
    from types import SimpleNamespace

    import yaml

    from rolecall.records import RoleSpec
    from rolecall.serve.prompted import PromptedBot
    from rolecall.serve.version import model_name, prompted_version
    from tests.web.site import SPEC_YAML

    spec = RoleSpec.model_validate(yaml.safe_load(SPEC_YAML))
    served = SimpleNamespace(model_id="openai:http://127.0.0.1:42695/v1#qwen2.5-7b")
    version = prompted_version(PromptedBot(served, spec))
    assert version.startswith("llm:openai:qwen2.5-7b:") and "127.0.0.1" not in version
    other = SimpleNamespace(model_id="openai:http://10.0.0.9:8000/v1#qwen2.5-7b")
    assert prompted_version(PromptedBot(other, spec)) != version  # still told apart
    assert model_name("llamacpp:/srv/models/gemma.gguf@123-456") == "llamacpp:gemma.gguf"
    assert model_name("embedded") == "embedded"

    engine, project_id = page_site
    client = client_for(engine, "ann1")
    chat = start_chat(client, project_id)
    assert post(client, f"{chat}/message", chat, text="안녕하세요").status_code == 303
    with session(engine) as db:  # a turn recorded before the fix, with the address in it
        turn = db.scalars(select(ChatTurn).where(ChatTurn.role == "bot")).one()
        turn.bot_version = "llm:openai:http://127.0.0.1:42695/v1#m:0123456789"
    page = client.get(chat).text
    assert "127.0.0.1" not in page and "42695" not in page
    assert "llm:openai:[internal]#m:0123456789" in page


def test_bot_turns_keep_the_reply_and_group_with_turns_stored_before(site):
    """A bot turn stores the serve ``Reply`` without its text; the prompted bot's path is
    ``llm``, as turns stored before the web app used serve's ``Reply`` (then
    ``{"path": "llm", "model": ..., "tries": ..., "excluded": ...}``) say, so the
    dashboard counts old and new turns of one bot version on one path."""
    from rolecall.web.dashboard import _bot_turns, path_shares

    engine, project_id = site
    client = client_for(engine, "ann1")
    chat = start_chat(client, project_id)
    for text in ("안녕하세요", "오늘 병원에 다녀왔어요"):
        assert post(client, f"{chat}/message", chat, text=text).status_code == 303
    with session(engine) as db:
        first, last = db.scalars(
            select(ChatTurn).where(ChatTurn.role == "bot").order_by(ChatTurn.id)
        ).all()
        assert set(last.provenance) == {"path", "stages", "latency_ms"}
        assert last.provenance["path"] == "llm"
        assert last.provenance["stages"][0]["excluded"] == 0
    assert (
        post(client, f"{chat}/turns/{last.id}/fix", chat, category="not sensible").status_code
        == 303
    )
    with session(engine) as db:
        replacement = db.scalars(
            select(ChatTurn).where(ChatTurn.index == 3, ChatTurn.status != "fixed")
        ).one()
        stage = replacement.provenance["stages"][0]
        assert stage["excluded"] == 1 and stage["tries"] >= 2
        db.get(ChatTurn, first.id).provenance = {
            "path": "llm",
            "model": "fake:fake-web",
            "tries": 1,
            "excluded": 0,
        }
    with session(engine) as db:
        (row,) = path_shares(_bot_turns(db, project_id))
    assert (row["path"], row["turns"], row["share"], row["errors"]) == ("llm", 3, 1.0, 1)


def test_a_bot_turn_left_out_at_save_is_in_no_example(page_site):
    """Issue 50 item 12: Save made every unfixed bot turn a positive (a repeated greeting
    became a training example); a ticked turn now stays out."""
    engine, project_id = page_site
    client = client_for(engine, "ann1")
    chat = start_chat(client, project_id)
    for text in ("안녕하세요", "네, 안녕하세요"):
        assert post(client, f"{chat}/message", chat, text=text).status_code == 303
    page = client.get(chat).text
    assert 'form="save-form" name="leave_out"' in page and "좋은 예에서 빼기" in page
    with session(engine) as db:
        first_bot = db.scalars(
            select(ChatTurn).where(ChatTurn.role == "bot").order_by(ChatTurn.index)
        ).first()
        left_out, kept_text = first_bot.id, None
    assert post(client, f"{chat}/save", chat, leave_out=str(left_out)).status_code == 303
    with session(engine) as db:
        statuses = {t.id: t.status for t in db.scalars(select(ChatTurn))}
        kept_text = db.scalars(
            select(ChatTurn.text).where(ChatTurn.role == "bot", ChatTurn.id != left_out)
        ).one()
    assert statuses[left_out] == TurnStatus.SHOWN
    assert sum(s == TurnStatus.SAVED for s in statuses.values()) == 3  # two users, one bot
    rows = client_for(engine, "admin").get(f"/projects/{project_id}/export/examples.jsonl")
    positives = [json.loads(line) for line in rows.text.splitlines()]
    assert [(r["label"], r["response"]) for r in positives] == [("positive", kept_text)]
