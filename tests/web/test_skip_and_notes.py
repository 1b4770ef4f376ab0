"""Skip, unsure and a comment for the lead (issue 50 item 6): a skipped item goes to the end
of the person's queue, unlabelled; a note rides with the label and is no part of its
answer (agreement and ties read the answer only)."""

from __future__ import annotations

import json

from sqlalchemy import select

from rolecall.store import Annotation, Item, session
from tests.web.site import client_for, label, post, upload


def pairs(engine, project_id, count: int) -> list[int]:
    admin = client_for(engine, "admin")
    csv = "neutral,implicit\n" + "".join(f"문장 {n}.,바꾼 문장 {n}\n" for n in range(count))
    assert upload(admin, project_id, "pair", "kda.csv", csv, 2).status_code == 303
    with session(engine) as db:
        return list(db.scalars(select(Item.id).order_by(Item.id)))


def first_in_queue(client, project_id) -> int:
    page = client.get(f"/projects/{project_id}/queue").text
    return int(page.split('id="start"')[0].rsplit('href="/items/', 1)[1].split('"')[0])


def test_a_skipped_item_goes_to_the_end_of_that_persons_queue_only(site):
    engine, project_id = site
    items = pairs(engine, project_id, 3)
    ann1, ann2 = client_for(engine, "ann1"), client_for(engine, "ann2")
    first = first_in_queue(ann1, project_id)
    skipped = post(ann1, f"/items/{first}/skip", f"/items/{first}")
    assert skipped.status_code == 303 and skipped.headers["location"] != f"/items/{first}"
    assert first_in_queue(ann1, project_id) != first
    assert first_in_queue(ann2, project_id) == first  # ann2's queue is as it was
    for item in items:  # ann1 labels the others: the skipped one comes back last
        if item != first:
            assert label(ann1, item, consistent="yes", offensive="no").status_code == 303
    assert first_in_queue(ann1, project_id) == first
    with session(engine) as db:  # nothing was made up for the skipped item
        assert db.scalar(select(Annotation).where(Annotation.item_id == first)) is None


def test_unsure_and_a_comment_ride_with_the_label_not_in_its_answer(page_site):
    engine, project_id = page_site
    (item,) = pairs(engine, project_id, 1)
    ann1, ann2 = client_for(engine, "ann1"), client_for(engine, "ann2")
    said = label(ann1, item, consistent="yes", offensive="yes", unsure="yes", comment=" 애매함 ")
    assert said.status_code == 303
    assert label(ann2, item, consistent="yes", offensive="yes").status_code == 303
    with session(engine) as db:
        answers = [a.payload for a in db.scalars(select(Annotation).order_by(Annotation.id))]
    assert answers[0]["note"] == {"unsure": True, "comment": "애매함"} and "note" not in answers[1]
    admin = client_for(engine, "admin")
    dashboard = admin.get(f"/projects/{project_id}/dashboard").text
    assert f'data-item="{item}"' not in dashboard  # the same answer: no disagreement
    assert "확신 없음 · 애매함" in ann1.get(f"/projects/{project_id}/labels").text
    page = ann1.get(f"/items/{item}").text  # the note shows again, to change
    assert 'name="unsure" value="yes" checked' in page and 'value="애매함"' in page
    assert 'id="skip-form"' not in page  # a labelled item is not skipped
    rows = admin.get(f"/projects/{project_id}/export/labels.jsonl").text.splitlines()
    assert json.loads(rows[0])["answer"]["note"]["comment"] == "애매함"


def test_a_skip_says_why_to_the_lead_until_the_item_is_labelled(page_site):
    engine, project_id = page_site
    items = pairs(engine, project_id, 2)
    ann1 = client_for(engine, "ann1")
    first = first_in_queue(ann1, project_id)
    queue = ann1.get(f"/projects/{project_id}/queue").text
    assert "남은 항목 2개, 라벨링한 항목 0개" in queue and "/guidelines" in queue
    assert (
        post(ann1, f"/items/{first}/skip", f"/items/{first}", reason=" 뜻이 모호함 ").status_code
        == 303
    )
    admin = client_for(engine, "admin")
    skipped = admin.get(f"/projects/{project_id}/dashboard").text.split('id="skipped"')[1]
    assert f'data-item="{first}"' in skipped and "뜻이 모호함" in skipped
    other = next(i for i in items if i != first)
    assert label(ann1, other, consistent="yes", offensive="no").status_code == 303
    page = ann1.get(f"/items/{first}").text
    assert f'href="/items/{other}" id="previous"' in page  # Backspace goes there
    assert label(ann1, first, consistent="no", offensive="no").status_code == 303
    skipped = admin.get(f"/projects/{project_id}/dashboard").text.split('id="skipped"')[1]
    assert f'data-item="{first}"' not in skipped.split("</table>")[0]  # labelled since


def test_the_projects_guidelines_page_holds_every_kind(page_site):
    engine, project_id = page_site
    page = client_for(engine, "ann1").get(f"/projects/{project_id}/guidelines").text
    for kind in ("dialogue", "pair", "bot-turn"):
        assert f'id="guidelines-{kind}"' in page
    assert "내일 오후 세 시에 제가 다시 전화드릴게요." in page and "드러난 욕설 없이" in page
