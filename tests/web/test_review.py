"""Disagreements, each annotator against the others, and review (``web/review.py``)."""

from __future__ import annotations

import json

from sqlalchemy import select

from rolecall.store import Annotation, Item, session
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


def test_a_leads_review_settles_the_item_over_the_majority(page_site):
    """Issue 50 build item 4: adjudication picks the final label; the exports use it, the
    agreement figures stay the annotators' own, and an annotator cannot settle."""
    engine, project_id = page_site
    admin = client_for(engine, "admin")
    assert upload(admin, project_id, "pair", "kda.csv", PAIRS_CSV, 2).status_code == 303
    with session(engine) as db:
        item = db.scalars(select(Item.id)).one()
    ann1, ann2 = client_for(engine, "ann1"), client_for(engine, "ann2")
    assert label(ann1, item, consistent="yes", offensive="yes").status_code == 303
    assert label(ann2, item, consistent="yes", offensive="no", settle="yes").status_code == 303
    export = f"/projects/{project_id}/export/pairs.csv"
    assert len(admin.get(export).text.splitlines()) == 1  # a tie: not approved
    dashboard = f"/projects/{project_id}/dashboard"
    opened = post(admin, f"/projects/{project_id}/review/{item}", dashboard)
    assert opened.headers["location"] == f"/items/{item}?settle=yes"
    page = admin.get(opened.headers["location"]).text
    assert 'name="settle" value="yes"' in page and 'id="settling"' in page
    shown_at = page.split('name="shown_at" value="')[1].split('"')[0]
    settled = admin.post(
        f"/items/{item}/label",
        data={
            **hidden_fields(page, f"/items/{item}/label"),
            "shown_at": shown_at,
            "consistent": "yes",
            "offensive": "yes",
            "settle": "yes",
        },
    )
    assert settled.status_code == 303
    assert len(admin.get(export).text.splitlines()) == 2  # the lead's answer decides
    table = admin.get(dashboard).text.split('id="disagreements"')[1].split("</table>")[0]
    assert "admin 확정" in table
    agreement = admin.get(dashboard).text.split('id="annotator-agreement"')[1]
    assert "<td>admin</td>" not in agreement.split("</table>")[0]  # the annotators' own
    # the answer mix: ann2 refused the pair (not offensive), ann1 approved it
    assert agreement.split("<td>ann2</td>")[1].split("</tr>")[0].endswith("<td>100.0%</td>")
    assert agreement.split("<td>ann1</td>")[1].split("</tr>")[0].endswith("<td>0.0%</td>")
    with session(engine) as db:  # ann2's settle was not a lead's: no mark
        marks = [a.payload.get("settled") for a in db.scalars(select(Annotation))]
    assert sorted(map(bool, marks)) == [False, False, True]
