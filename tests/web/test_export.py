"""Exports are safe to open in a spreadsheet (no cell runs as a formula), and rolecall
still reads its own CSVs back with the exact text; the training JSONL is untouched."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from rolecall.formats.spreadsheet import neutralise, restore
from rolecall.store import ChatSession, ChatTurn, Item, Project, ProjectMember, session
from rolecall.web.auth import add_user
from tests.web.site import PASSWORD, client_for, label, upload

FORMULAS = [
    '=HYPERLINK("http://evil.example","x")',
    "+1+2",
    "-_- 회의 또 취소",
    "@SUM(A1)",
    "\t=1+1",
    "'=already quoted",
    "''-twice",
    "=cmd|'/C calc'!A0",
]
NAME = "=cmd|'/C_calc'!A0"


def cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def opens_as_formula(cell: str) -> bool:
    return cell[:1] in ("=", "+", "-", "@", "\t", "\r")


@pytest.mark.parametrize(
    "text", [*FORMULAS, "", "'", "''", "plain", "'plain", "a=b", "-", "\r\n=x", " =x", "'\t"]
)
def test_neutralise_then_restore_is_exact(text):
    safe = neutralise(text)
    assert not opens_as_formula(safe)
    assert restore(safe) == text
    assert restore(text) == text or text.startswith("'")  # only a quote+trigger cell moves


def test_numbers_stay_numbers():
    assert neutralise(-0.25) == -0.25 and neutralise(3) == 3 and neutralise(None) is None


def _pairs_labelled(engine, project_id: int, tmp_path) -> None:
    """FORMULAS as K/DA pairs (a kda run's JSONL), approved by ann1 and a user named
    like a formula."""
    with session(engine) as db:
        user = add_user(db, NAME, PASSWORD)
        db.add(ProjectMember(project_id=project_id, user_id=user.id))
    pairs = [{"neutral": text, "toxic": FORMULAS[-1 - n]} for n, text in enumerate(FORMULAS)]
    jsonl = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs)
    admin = client_for(engine, "admin")
    assert upload(admin, project_id, "pair", "pairs.jsonl", jsonl, 3).status_code == 303
    with session(engine) as db:
        ids = db.scalars(select(Item.id).order_by(Item.id)).all()
    for name in ("ann1", "ann2", NAME):
        client = client_for(engine, name)
        for item_id in ids:
            response = label(client, item_id, consistent="yes", offensive="yes")
            assert response.status_code == 303


def test_pair_exports_are_spreadsheet_safe_and_read_back_exactly(site, tmp_path):
    from rolecall.eval.agreement import read_human_labels
    from rolecall.formats.kda import read_kda_csv

    engine, project_id = site
    _pairs_labelled(engine, project_id, tmp_path)
    admin = client_for(engine, "admin")
    pairs = admin.get(f"/projects/{project_id}/export/pairs.csv").text
    labels = admin.get(f"/projects/{project_id}/export/pair-labels.csv").text
    for text in (pairs, labels):
        assert not any(opens_as_formula(cell) for row in cells(text) for cell in row)
    assert any(row[3] == "'" + NAME for row in cells(labels)[1:])
    (tmp_path / "pairs.csv").write_text(pairs, encoding="utf-8")
    read = read_kda_csv(tmp_path / "pairs.csv")
    # the K/DA reader strips surrounding whitespace: the tab of "\t=1+1" goes, as it would
    # from an unquoted file
    assert [(p.neutral, p.toxic) for p in read] == [
        (text.strip(), FORMULAS[-1 - n].strip()) for n, text in enumerate(FORMULAS)
    ]
    (tmp_path / "labels.csv").write_text(labels, encoding="utf-8")
    human = read_human_labels(tmp_path / "labels.csv")
    assert {name for votes in human["implicit"].values() for name in votes} == {
        "ann1",
        "ann2",
        NAME,
    }


def test_the_training_jsonl_keeps_the_exact_text(site):
    engine, project_id = site
    with session(engine) as db:
        user_id = db.scalar(select(ProjectMember.user_id).limit(1))
        chat = ChatSession(project_id=project_id, user_id=user_id)
        db.add(chat)
        db.flush()
        db.add_all(
            [
                ChatTurn(session_id=chat.id, index=0, role="user", text="=1+1 안녕"),
                ChatTurn(
                    session_id=chat.id,
                    index=1,
                    role="bot",
                    text="-_- 네",
                    status="fixed",
                    error_category="style",
                    bot_version="=cmd|'/C calc'!A0",
                ),
            ]
        )
    admin = client_for(engine, "admin")
    row = json.loads(admin.get(f"/projects/{project_id}/export/examples.jsonl").text)
    assert (row["response"], row["history"][0]["text"]) == ("-_- 네", "=1+1 안녕")
    dashboard = cells(admin.get(f"/projects/{project_id}/dashboard.csv").text)
    assert not any(opens_as_formula(cell) for row in dashboard for cell in row)
    rates = [r for r in dashboard if r[0] == "error_rates" and r[2] == "error_rate"]
    assert rates and rates[0][1].startswith("bot_version==cmd") and rates[0][3] == "1.0"


def test_a_dashboard_cell_that_opens_as_a_formula_is_quoted_and_numbers_are_not():
    from rolecall.web.dashboard import tables_csv

    rows = cells(tables_csv({"=t": [{"bot_version": "v", "alpha": -0.25}, {"n": 1}]}))
    assert rows[1:] == [["'=t", "bot_version=v", "alpha", "-0.25"], ["'=t", "", "n", "1"]]


def test_a_labelled_redteam_failure_comes_back_as_an_out_of_bounds_example(site, tmp_path):
    """The Fix loop: a failed red-team conversation, sent with add-redteam, labelled by an
    annotator (who sees no judge: show_judge is off), exported as training examples."""
    from rolecall.web.redteam import add_run
    from tests.redteam_runs import POLITE, redteam_run

    engine, project_id = site
    with session(engine) as db:
        summary = add_run(db, project_id, redteam_run(tmp_path / "rt"))
        items = db.scalars(select(Item).order_by(Item.id)).all()
    assert summary["items_added"] == 2 and len(items) == 2  # the explicit conversations
    item = items[0]
    turns = item.payload["turns"]
    flagged = next(i for i, t in enumerate(turns) if t["out_of_bounds"])
    ann1 = client_for(engine, "ann1")  # round-robin: the first item is ann1's
    page = ann1.get(f"/items/{item.id}").text
    assert turns[flagged]["text"] in page and 'class="meta judge"' not in page
    assert label(ann1, item.id, first_oob=str(flagged), category="not safe").status_code == 303

    admin = client_for(engine, "admin")
    text = admin.get(f"/projects/{project_id}/export/examples.jsonl").text
    examples = [json.loads(line) for line in text.splitlines()]
    assert [e["label"] for e in examples] == ["positive", "positive", "negative"]
    negative = examples[-1]
    assert (negative["response"], negative["category"]) == (turns[flagged]["text"], "not safe")
    assert negative["dialogue_id"] == "redteam:rt:explicit-0"
    assert [t["text"] for t in negative["history"]] == [t["text"] for t in turns[:flagged]]
    assert examples[1]["response"] == POLITE  # the bot's reply before the attack


def test_every_label_as_given_exports_with_its_annotator_time_and_share(page_site):
    """Issue 50 item 9: raw labels of every kind (a lead's own analysis), linked from the
    home page; annotators cannot download them."""
    from tests.web.site import DIALOGUES, PAIRS_CSV

    engine, project_id = page_site
    admin = client_for(engine, "admin")
    jsonl = json.dumps(DIALOGUES[0], ensure_ascii=False) + "\n"
    assert upload(admin, project_id, "dialogue", "gen.jsonl", jsonl, 2).status_code == 303
    assert upload(admin, project_id, "pair", "kda.csv", PAIRS_CSV, 1).status_code == 303
    with session(engine) as db:
        ids = dict(db.execute(select(Item.kind, Item.id)).all())
    ann1, ann2 = client_for(engine, "ann1"), client_for(engine, "ann2")
    assert label(ann1, ids["dialogue"], first_oob="2", category="style").status_code == 303
    assert label(ann2, ids["dialogue"], first_oob="none").status_code == 303
    pair_client = next(c for c in (ann1, ann2) if c.get(f"/items/{ids['pair']}").status_code == 200)
    assert label(pair_client, ids["pair"], consistent="yes", offensive="no").status_code == 303
    assert f'href="/projects/{project_id}/export/labels.jsonl"' in admin.get("/").text
    assert ann1.get(f"/projects/{project_id}/export/labels.jsonl").status_code == 403
    rows = [
        json.loads(line)
        for line in admin.get(f"/projects/{project_id}/export/labels.jsonl").text.splitlines()
    ]
    assert [(r["item_kind"], r["label_kind"], r["answer"]) for r in rows] == [
        ("dialogue", "oob", {"first_oob": 2, "category": "style"}),
        ("dialogue", "oob", {"first_oob": None, "category": None}),
        ("pair", "pair", {"consistent": True, "offensive": False}),
    ]
    assert [r["annotator"] for r in rows[:2]] == ["ann1", "ann2"]
    assert rows[0]["source_id"] == DIALOGUES[0]["id"] and rows[2]["source_id"]
    assert all(r["seconds"] is not None and r["seconds"] >= 0 for r in rows)
    assert all(r["created"].endswith("+09:00") for r in rows)  # the project's zone: KST
    with session(engine) as db:  # another zone: the same moments, written there
        project = db.get(Project, project_id)
        project.settings = {**project.settings, "time_zone": "UTC"}
        db.commit()
    again = admin.get(f"/projects/{project_id}/export/labels.jsonl").text.splitlines()
    assert [json.loads(line)["created"] for line in again] == [
        datetime.fromisoformat(r["created"]).astimezone(UTC).isoformat() for r in rows
    ]
    sheet = cells(admin.get(f"/projects/{project_id}/export/labels.csv").text)
    assert sheet[0][:6] == ["item", "item_kind", "source_id", "annotator", "label_kind", "answer"]
    assert [row[3] for row in sheet[1:]] == ["ann1", "ann2", rows[2]["annotator"]]
    assert json.loads(sheet[1][5]) == {"first_oob": 2, "category": "style"}
    dashboard = admin.get(f"/projects/{project_id}/dashboard").text
    assert f'href="/projects/{project_id}/export/labels.csv" id="labels-csv"' in dashboard
