"""SSA labelling of bot turns and the dashboard's numbers, computed by hand."""

from __future__ import annotations

import csv
import io

import pytest
from sqlalchemy import select

from rolecall.store import Item, ItemKind, session
from rolecall.web.dashboard import error_rate_svg
from tests.web.site import client_for, label, post, start_chat

# per SSA item in id order: ann1's and ann2's (sensible, specific)
ANSWERS = {
    "ann1": [("yes", "yes"), ("yes", "no"), ("no", "no"), ("yes", "yes")],
    "ann2": [("yes", "yes"), ("no", "no"), ("no", "yes"), ("yes", "no")],
}


def chat_with_two_fixes(engine, project_id: int) -> None:
    client = client_for(engine, "ann1")
    chat = start_chat(client, project_id)
    for text in ("안녕하세요", "요즘 잠을 잘 못 자요"):
        assert post(client, f"{chat}/message", chat, text=text).status_code == 303
    for category in ("not sensible", "not safe"):
        page = client.get(chat).text
        turn_id = page.split('/fix"')[0].rsplit("/turns/", 1)[1]
        response = post(client, f"{chat}/turns/{turn_id}/fix", chat, category=category)
        assert response.status_code == 303
    assert post(client, f"{chat}/save", chat).status_code == 303


def test_ssa_items_labels_and_dashboard(site):
    engine, project_id = site
    chat_with_two_fixes(engine, project_id)  # 4 bot turns shown, 2 fixed
    admin = client_for(engine, "admin")
    action = f"/admin/projects/{project_id}/ssa-items"
    made = post(admin, action, "/admin", per_item="2")
    assert made.status_code == 303
    again = post(admin, action, "/admin", per_item="2")  # the form loaded again
    assert again.status_code == 409  # every bot turn is an item already
    with session(engine) as db:
        items = db.scalars(
            select(Item).where(Item.kind == ItemKind.BOT_TURN).order_by(Item.id)
        ).all()
        assert len(items) == 4 and all(i.payload["bot_version"] for i in items)
        ids = [i.id for i in items]
    for name, answers in ANSWERS.items():
        client = client_for(engine, name)
        for item_id, (sensible, specific) in zip(ids, answers, strict=True):
            assert label(client, item_id, sensible=sensible, specific=specific).status_code == 303
    assert label(client, ids[0], sensible="perhaps", specific="no").status_code == 422

    page = admin.get(f"/projects/{project_id}/dashboard")
    assert page.status_code == 200 and "50.0%" in page.text
    rows = list(
        csv.DictReader(io.StringIO(admin.get(f"/projects/{project_id}/dashboard.csv").text))
    )

    def value(table: str, key_part: str, metric: str) -> float:
        found = [
            r["value"]
            for r in rows
            if r["table"] == table and key_part in r["key"] and r["metric"] == metric
        ]
        assert len(found) == 1, (table, key_part, metric, found)
        return float(found[0])

    assert value("error_rates", "category=all", "error_rate") == 0.5
    assert value("error_rates", "category=not safe", "error_rate") == 0.25
    assert value("paths", "path=llm", "share") == 1.0
    # majority per turn (a tie is "no"; specific only if sensible): sensible 2/4, specific 1/4
    assert value("ssa", "bot_version", "sensibleness") == 0.5
    assert value("ssa", "bot_version", "specificity") == 0.25
    assert value("ssa", "bot_version", "ssa") == 0.375
    # sensible: n_yes 5, n_no 3, one disagreeing item: 1 - 7 * 2 / (64 - 25 - 9)
    assert value("agreement", "question=sensible", "krippendorff_alpha") == pytest.approx(
        1 - 14 / 30
    )
    assert value("throughput", "annotator=ann2;kind=ssa", "labels") == 4
    svg = admin.get(f"/projects/{project_id}/dashboard/error-rates.svg")
    assert svg.headers["content-type"].startswith("image/svg+xml")
    assert "50.0% (2/4)" in svg.text
    # annotators see no dashboard
    assert client_for(engine, "ann1").get(f"/projects/{project_id}/dashboard").status_code == 403


def test_the_chart_escapes_names():
    svg = error_rate_svg(
        [{"bot_version": "<v1>", "category": "all", "turns": 2, "errors": 1, "error_rate": 0.5}]
    )
    assert "&lt;v1&gt;" in svg and "<v1>" not in svg
    assert 'viewBox="0 0 640' in svg and 'width="100%"' in svg  # fits a phone's screen


def test_the_chart_speaks_the_page_language(page_site):
    """Issue 50 item 10: the chart's title and category names stayed English."""
    from tests.web.site import post, start_chat

    engine, project_id = page_site
    ann = client_for(engine, "ann1")
    chat = start_chat(ann, project_id)
    assert post(ann, f"{chat}/message", chat, text="안녕하세요").status_code == 303
    svg = client_for(engine, "admin").get(f"/projects/{project_id}/dashboard/error-rates.svg")
    assert "봇 버전과 범주별 오류율" in svg.text and " · 전체" in svg.text
    assert "error rate by" not in svg.text


def test_redteam_rates_per_version_beside_the_human_error_rate(site, tmp_path):
    """Two runs added with add-redteam: one of the version people chatted with, one of a
    version nobody did. Not safe 2/2 has the Wilson interval [n / (n + z^2), 1]."""
    from rolecall.eval.intervals import Z95
    from rolecall.store import ChatTurn
    from rolecall.web.redteam import add_run
    from tests.redteam_runs import redteam_run

    engine, project_id = site
    chat_with_two_fixes(engine, project_id)  # 4 bot turns shown, 2 fixed: 50%
    with session(engine) as db:
        [version] = set(db.scalars(select(ChatTurn.bot_version).where(ChatTurn.role == "bot")))
    admin = client_for(engine, "admin")
    assert "아직 레드팀 실행이 없습니다" in admin.get(f"/projects/{project_id}/dashboard").text
    with session(engine) as db:
        add_run(db, project_id, redteam_run(tmp_path / "same", version=version))
        add_run(db, project_id, redteam_run(tmp_path / "other", 3, version="other-bot"))
    page = admin.get(f"/projects/{project_id}/dashboard").text
    card = page.split('id="redteam"')[1].split("</div>")[0]
    assert card.count("<tr>") == 1 + 6  # header, 2 runs x 3 attack kinds
    low = 2 / (2 + Z95**2)
    assert f"100.0% <small>[{100 * low:.1f}%, 100.0%] (2/2)</small>" in card
    assert "0.0% <small>[0.0%, " in card and "rules:curse" in card

    rows = list(
        csv.DictReader(io.StringIO(admin.get(f"/projects/{project_id}/dashboard.csv").text))
    )

    def value(key_parts: tuple[str, ...], metric: str) -> str:
        found = [
            r["value"]
            for r in rows
            if r["table"] == "redteam"
            and all(p in r["key"] for p in key_parts)
            and r["metric"] == metric
        ]
        assert len(found) == 1, (key_parts, metric, found)
        return found[0]

    same = (f"bot_version={version};", "attack=explicit")
    assert float(value(same, "not_safe_rate")) == 1.0
    assert float(value(same, "not_safe_low")) == pytest.approx(low)
    assert float(value(same, "human_error_rate")) == 0.5  # the chats' Fix rate, same version
    assert int(value(same, "human_turns")) == 4
    other = ("bot_version=other-bot;", "attack=kda")
    assert (value(other, "conversations"), value(other, "out_of_role")) == ("3", "0")
    assert value(other, "human_error_rate") == ""  # nobody chatted with that version
    assert float(value(other, "out_of_role_high")) == pytest.approx(Z95**2 / (3 + Z95**2))


def test_a_crisis_the_bot_referred_is_listed_for_the_operator(site):
    """Issue 46: a bot turn whose user-turn check flagged the call is on the dashboard,
    with what the person said; an ordinary turn is not."""
    from rolecall.store import ChatTurn, Speaker

    engine, project_id = site
    client = client_for(engine, "ann1")
    chat = start_chat(client, project_id)
    assert post(client, f"{chat}/message", chat, text="그냥 다 끝내고 싶어").status_code == 303
    with session(engine) as db:
        bot = db.scalars(select(ChatTurn).where(ChatTurn.role == Speaker.BOT)).all()[-1]
        stage = {"stage": "user_check", "check": "self_harm", "kind": "crisis", "flagged": True}
        bot.provenance = {**(bot.provenance or {}), "path": "checked", "stages": [stage]}
        db.commit()
    admin = client_for(engine, "admin")
    page = admin.get(f"/projects/{project_id}/dashboard").text
    flagged = page.split('id="flagged"')[1].split("</div>")[0]
    assert "self_harm" in flagged and "그냥 다 끝내고 싶어" in flagged
    assert 'id="no-flagged"' not in page
    rows = admin.get(f"/projects/{project_id}/dashboard.csv").text
    assert "flagged" in rows and "check=self_harm" in rows
