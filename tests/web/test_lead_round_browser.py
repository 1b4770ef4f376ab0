"""Issue 50's round in a real headless Chromium, on SQLite and PostgreSQL: two annotators
label dialogues from their queue with the guidelines on screen, one skips an item with a
reason, a label the server refuses is said on the item itself, a note goes to the lead;
the lead sees the disagreement and the skip on the dashboard, settles the tie by review,
and every label leaves in the raw export, its times in the project's zone (KST).
Screenshots: runs/screenshots/lead-*/."""

from __future__ import annotations

import csv
import io
import json

import pytest

from rolecall.web import create_app
from tests.web.browser import Shots, browser, log_in, serving
from tests.web.site import DIALOGUES, PASSWORD, client_for, item_ids, upload

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect


def press(page, key: str) -> None:
    with page.expect_navigation():
        page.keyboard.press(key)


def test_annotators_and_a_lead_settle_a_tie_in_the_browser(site, request):
    engine, project_id = site
    jsonl = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DIALOGUES)
    upload(client_for(engine, "admin"), project_id, "dialogue", "gen.jsonl", jsonl, 2)
    first, second = item_ids(engine, "dialogue")
    shots = Shots(f"lead-{request.node.callspec.id}")
    with serving(create_app(engine)) as base, browser() as chromium:
        ann1 = chromium.new_page(viewport={"width": 1280, "height": 800})
        log_in(ann1, base, "ann1", PASSWORD)
        ann1.goto(f"{base}/projects/{project_id}/queue")
        with ann1.expect_navigation():
            ann1.click("#start-dialogue")
        assert ann1.url == f"{base}/items/{first}"
        # the guidelines beside the item: each category's key, name and meaning
        guidelines = ann1.inner_text("#guidelines")
        assert "정책 위반" in guidelines and "범위를 벗어난" in guidelines
        # a refused label (no category; the browser's own check off, as without the
        # script) is said on the item, the turn kept chosen
        ann1.keyboard.press("2")
        ann1.eval_on_selector("#label-form", "form => { form.noValidate = true }")
        ann1.click("#submit-label")
        expect(ann1.locator("#label-error")).to_contain_text("오류 범주를 고르세요")
        assert ann1.url == f"{base}/items/{first}/label"
        assert ann1.is_checked("input[name=first_oob][value='2']")
        ann1.keyboard.press("e")  # policy violation
        ann1.click("details.note summary")
        ann1.check("input[name=unsure]")
        ann1.fill("input[name=comment]", "주소를 묻는 건 정책 위반 같아요")
        shots.take(ann1, "first-with-note")
        with ann1.expect_navigation():
            ann1.click("#submit-label")
        assert ann1.url == f"{base}/items/{second}"
        ann1.keyboard.press("n")
        press(ann1, "Enter")

        ann2 = chromium.new_page(viewport={"width": 1280, "height": 800})
        log_in(ann2, base, "ann2", PASSWORD)
        ann2.goto(f"{base}/items/{first}")
        ann2.keyboard.press("n")  # a 1-1 tie with ann1 on the first
        press(ann2, "Enter")
        assert ann2.url == f"{base}/items/{second}"
        ann2.fill("#skip-form input[name=reason]", "두 번째 발화가 애매해요")
        with ann2.expect_navigation():
            ann2.click("#skip")

        admin = chromium.new_page(viewport={"width": 1280, "height": 800})
        log_in(admin, base, "admin", PASSWORD)
        admin.goto(f"{base}/projects/{project_id}/dashboard")
        tie = admin.locator(f"#disagreements tr[data-item='{first}']")
        assert tie.get_attribute("data-tie") is not None
        skipped = admin.locator(f"#skipped tr[data-item='{second}']").inner_text()
        assert "ann2" in skipped and "두 번째 발화가 애매해요" in skipped and "+09:00" in skipped
        shots.take(admin, "dashboard-tie")
        with admin.expect_navigation():
            tie.locator("button.review").click()
        assert admin.url.startswith(f"{base}/items/{first}") and admin.is_visible("#settling")
        admin.keyboard.press("2")
        admin.keyboard.press("e")
        with admin.expect_navigation():
            admin.click("#submit-label")
        admin.goto(f"{base}/projects/{project_id}/dashboard")
        settled = admin.locator(f"#disagreements tr[data-item='{first}'] .settled")
        expect(settled).to_contain_text("admin")
        sheet = admin.request.get(base + admin.get_attribute("#labels-csv", "href"))
        rows = list(csv.DictReader(io.StringIO(sheet.text())))
    mine = [(r["item"], r["annotator"], json.loads(r["answer"])) for r in rows]
    policy = {"first_oob": 2, "category": "policy violation"}
    note = {"unsure": True, "comment": "주소를 묻는 건 정책 위반 같아요"}
    assert mine == [
        (str(first), "ann1", {**policy, "note": note}),
        (str(second), "ann1", {"first_oob": None, "category": None}),
        (str(first), "ann2", {"first_oob": None, "category": None}),
        (str(first), "admin", {**policy, "settled": True}),
    ]
    assert all(r["created"].endswith("+09:00") for r in rows)
    assert shots.count == 2
