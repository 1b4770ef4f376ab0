"""The acceptance walk-through in a real headless Chromium, on SQLite and on PostgreSQL:
log in, chat, Fix twice with a category, save; then the admin's export holds exactly the
expected positives and negatives. Screenshots of each page: runs/screenshots/."""

from __future__ import annotations

import json

from rolecall.web import create_app
from tests.web.browser import Shots, browser, log_in, serving, submit
from tests.web.conftest import PASSWORD


def test_chat_fix_save_and_export_in_a_browser(site, request):
    engine, project_id = site
    backend = request.node.callspec.params["db_url"]
    shots = Shots(f"chat-{backend}")
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
        assert "(saved)" in page.inner_text("h2")
        assert page.locator("#send").count() == 0 and page.locator(".fix-button").count() == 0
        shots.take(page, "saved")

        admin = chromium.new_page(viewport={"width": 1100, "height": 800})
        log_in(admin, base, "admin", PASSWORD)
        admin.goto(f"{base}/admin")
        shots.take(admin, "admin")
        exported = admin.request.get(f"{base}/projects/{project_id}/export/examples.jsonl")
        assert exported.ok
        rows = [json.loads(line) for line in exported.text().splitlines()]
    context = [{"role": "user", "text": "안녕하세요"}, {"role": "system", "text": first},
               {"role": "user", "text": "요즘 무릎이 좀 아파요"}]
    simplified = [(r["label"], r["category"], r["response"],
                   [{"role": t["role"], "text": t["text"]} for t in r["history"]])
                  for r in rows]
    assert simplified == [
        ("positive", None, first, context[:1]),
        ("negative", "not sensible", rejected[0], context),
        ("negative", "wrong persona", rejected[1], context),
        ("positive", None, final, context)]
    assert len(list(shots.folder.glob("*.png"))) == shots.count == 7
