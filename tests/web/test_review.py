"""Disagreements, each annotator against the others, and review (``web/review.py``)."""

from __future__ import annotations

import json

from sqlalchemy import select

from rolecall.store import Item, session
from rolecall.web.review import system_turn, tied
from tests.web.site import PAIRS_CSV, client_for, hidden_fields, label, post, upload


def test_a_tie_is_an_answer_not_given_more_often_than_another():
    yes, no = {"consistent": True, "offensive": True}, {"consistent": True, "offensive": False}
    assert tied([yes, no]) and not tied([yes, yes, no]) and not tied([yes])
    assert tied([{"first_oob": 2, "category": "style"}, {"first_oob": None, "category": None}])
    turns = {"turns": [{"role": "system"}, {"role": "user"}, {"role": "system"}]}
    assert system_turn(turns, {"first_oob": 2}) == 2 and system_turn(turns, {}) is None


def test_only_an_admin_reviews_and_only_an_item_of_that_project(page_site):
    engine, project_id = page_site
    admin = client_for(engine, "admin")
    assert upload(admin, project_id, "pair", "kda.csv", PAIRS_CSV, 2).status_code == 303
    ann1, ann2 = client_for(engine, "ann1"), client_for(engine, "ann2")
    with session(engine) as db:
        item = db.scalars(select(Item.id)).one()
    assert label(ann1, item, consistent="yes", offensive="yes").status_code == 303
    assert label(ann2, item, consistent="yes", offensive="no").status_code == 303
    dashboard = admin.get(f"/projects/{project_id}/dashboard").text
    assert f'data-item="{item}" data-tie' in dashboard and "내용 유지: 예" in dashboard
    csv = admin.get(f"/projects/{project_id}/dashboard.csv").text
    answers = [line for line in csv.splitlines() if line.startswith("disagreements,")]
    assert any("ann1" in line and "ann2" in line for line in answers)  # the answers, as JSON
    review = f"/projects/{project_id}/review/{item}"
    fields = hidden_fields(admin.get(f"/projects/{project_id}/dashboard").text, review)
    assert ann1.post(review, data={**fields, "once": "z" * 24}).status_code == 403
    wrong = f"/projects/{project_id}/review/999"
    assert admin.post(wrong, data={**fields, "once": "w" * 24}).status_code == 404
    assert post(admin, review, f"/projects/{project_id}/dashboard").status_code == 303
    assert label(admin, item, consistent="yes", offensive="yes").status_code == 303
    pairs = admin.get(f"/projects/{project_id}/export/pairs.csv").text.splitlines()
    assert len(pairs) == 2  # two of three say implicitly offensive: approved
    rows = admin.get(f"/projects/{project_id}/export/labels.jsonl").text.splitlines()
    assert [json.loads(r)["annotator"] for r in rows] == ["ann1", "ann2", "admin"]
