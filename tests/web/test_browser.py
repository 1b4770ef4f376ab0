"""The acceptance walk-through in a real headless Chromium (on SQLite: what the two
databases may do differently is tested below the pages, in test_security, test_annotate):
log in, chat, Fix twice with a category, save; then the admin's export holds exactly the
expected positives and negatives. Screenshots of each page: runs/screenshots/."""

from __future__ import annotations

import json

import pytest

from rolecall.web import create_app
from tests.web.browser import Shots, browser, log_in, serving, submit
from tests.web.site import PASSWORD

pytestmark = pytest.mark.browser


def test_chat_fix_save_and_export_in_a_browser(page_site):
    engine, project_id = page_site
    shots = Shots("chat")
    with serving(create_app(engine)) as base, browser() as chromium:
        page = chromium.new_page(viewport={"width": 1100, "height": 800})
        page.goto(f"{base}/")
        assert page.url.startswith(f"{base}/login")
        shots.take(page, "login")
        log_in(page, base, "ann1", PASSWORD)
        shots.take(page, "home")
        page.click(f"a[href='/projects/{project_id}/chat']")
        submit(page, "#new-chat")
        for text in ("안녕하세요", "요즘 무릎이 좀 아파요"):
            page.fill("#message", text)
            submit(page, "#send")
        shots.take(page, "chat")
        bot_turns = page.locator(".turn.bot:not(.rejected) .text")
        assert bot_turns.count() == 2
        rejected = []
        for category in ("not sensible", "wrong persona"):
            rejected.append(bot_turns.nth(1).inner_text())
            page.select_option("select[name=category]", category)
            submit(page, ".fix-button")
            shots.take(page, f"fixed-{len(rejected)}")
        assert page.locator(".rejected").count() == 2
        final = bot_turns.nth(1).inner_text()
        assert final not in rejected
        first = bot_turns.nth(0).inner_text()
        submit(page, "#save")
        assert page.locator("h2 #saved").count() == 1
        assert page.locator("#send").count() == 0 and page.locator(".fix-button").count() == 0
        shots.take(page, "saved")

        admin = chromium.new_page(viewport={"width": 1100, "height": 800})
        log_in(admin, base, "admin", PASSWORD)
        admin.goto(f"{base}/admin")
        shots.take(admin, "admin")
        exported = admin.request.get(f"{base}/projects/{project_id}/export/examples.jsonl")
        assert exported.ok
        rows = [json.loads(line) for line in exported.text().splitlines()]
    context = [
        {"role": "user", "text": "안녕하세요"},
        {"role": "system", "text": first},
        {"role": "user", "text": "요즘 무릎이 좀 아파요"},
    ]
    simplified = [
        (
            r["label"],
            r["category"],
            r["response"],
            [{"role": t["role"], "text": t["text"]} for t in r["history"]],
        )
        for r in rows
    ]
    assert simplified == [
        ("positive", None, first, context[:1]),
        ("negative", "not sensible", rejected[0], context),
        ("negative", "wrong persona", rejected[1], context),
        ("positive", None, final, context),
    ]
    assert len(list(shots.folder.glob("*.png"))) == shots.count == 7


def test_upload_annotate_review_ssa_and_dashboard_in_a_browser(page_site, tmp_path):
    """The admin uploads a generated dialogue and a K/DA pair and makes SSA items of a saved
    chat; an annotator labels all three kinds; the dashboard shows the chat's error rate."""
    from tests.web.site import DIALOGUES, PAIRS_CSV

    engine, project_id = page_site
    shots = Shots("label")
    dialogues = tmp_path / "generated.jsonl"
    dialogues.write_text(json.dumps(DIALOGUES[0], ensure_ascii=False) + "\n", encoding="utf-8")
    pairs = tmp_path / "kda.csv"
    pairs.write_text(PAIRS_CSV, encoding="utf-8")
    with serving(create_app(engine)) as base, browser() as chromium:
        ann = chromium.new_page(viewport={"width": 1100, "height": 800})
        log_in(ann, base, "ann1", PASSWORD)
        ann.goto(f"{base}/projects/{project_id}/chat")
        submit(ann, "#new-chat")
        ann.fill("#message", "오늘 산책을 다녀왔어요")
        submit(ann, "#send")
        ann.select_option("select[name=category]", "style")
        submit(ann, ".fix-button")
        submit(ann, "#save")  # 2 bot turns shown, 1 fixed: error rate 50%

        admin = chromium.new_page(viewport={"width": 1100, "height": 800})
        log_in(admin, base, "admin", PASSWORD)
        admin.goto(f"{base}/admin")
        uploads = admin.locator(f"form[action='/admin/projects/{project_id}/items']")
        for kind, path in (("dialogue", dialogues), ("pair", pairs)):
            uploads.locator("select[name=kind]").select_option(kind)
            uploads.locator("input[name=file]").set_input_files(str(path))
            uploads.locator("input[name=per_item]").fill("2")
            submit(admin, f"form[action='/admin/projects/{project_id}/items'] button")
        admin.fill(
            f"form[action='/admin/projects/{project_id}/ssa-items'] input[name=per_item]", "2"
        )
        submit(admin, ".make-ssa")
        shots.take(admin, "admin-after-uploads")

        ann.goto(f"{base}/projects/{project_id}/queue")
        assert ann.get_attribute("#remaining", "data-count") == "4"
        shots.take(ann, "queue")
        submit(ann, "#start")
        answered = []
        while "/items/" in ann.url:
            kind = ann.get_attribute("#label-form", "data-kind")
            if kind == "dialogue":
                ann.check("input[name=first_oob][value='2']")
                ann.check("input[name=category][value='policy violation']")
                shots.take(ann, "label-dialogue")
                answered.append("dialogue")
            elif kind == "pair":
                blur = "getComputedStyle(document.querySelector('.toxic')).filter"
                assert "blur" in ann.evaluate(blur)  # masked until pointed at
                shots.take(ann, "label-pair-masked")
                ann.hover(".toxic")
                assert ann.evaluate(blur) == "none"
                ann.check("input[name=consistent][value=yes]")
                ann.check("input[name=offensive][value=yes]")
                shots.take(ann, "label-pair")
                answered.append("pair")
            else:
                ann.check("input[name=sensible][value=yes]")
                ann.check("input[name=specific][value=no]")
                shots.take(ann, "label-ssa")
                answered.append("ssa")
            submit(ann, "#submit-label")
        assert sorted(answered) == ["dialogue", "pair", "ssa", "ssa"]
        assert ann.locator("#done").count() == 1

        admin.goto(f"{base}/projects/{project_id}/dashboard")
        first_row = admin.locator("#error-rates tr").nth(1)
        assert first_row.locator("td").nth(1).get_attribute("data-category") == "all"
        assert first_row.locator(".rate").inner_text() == "50.0%"
        shots.take(admin, "dashboard")
        ssa_cells = admin.locator("#ssa tr").nth(1).locator("td")
        assert ssa_cells.nth(2).inner_text() == "100.0%"  # sensible
        assert ssa_cells.nth(3).inner_text() == "0.0%"  # specific
        exported = admin.request.get(f"{base}/projects/{project_id}/export/examples.jsonl")
        rows = [json.loads(line) for line in exported.text().splitlines()]
        approved = admin.request.get(f"{base}/projects/{project_id}/export/pairs.csv").text()
    # chat: 1 negative (style) + 1 positive; the dialogue: 1 positive, then its negative
    assert [(r["label"], r["category"]) for r in rows] == [
        ("negative", "style"),
        ("positive", None),
        ("positive", None),
        ("negative", "policy violation"),
    ]
    assert approved.splitlines()[1:] == ["회의가 취소됐어요.,회의 취소라니 윗분들 또 땡땡이네"]
    assert shots.count == 8
