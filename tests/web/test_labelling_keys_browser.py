"""Issue 35 in a real headless Chromium, on SQLite and PostgreSQL: a Korean annotator
labels a dialogue item and a K/DA pair item with the keyboard only (numbers, letters,
Enter, u, m, v, ?), in Korean, the pair's rewrite blurred until it has the focus or v shows
it for 5 seconds; the mask
and the language stay switched for the person. Screenshots: runs/screenshots/keys-*/
(docs/images/label-dialogue-ko.png is a copy of the first)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from rolecall.store import Annotation, Item, QueueEntry, User, session
from rolecall.web import create_app
from tests.web.browser import Shots, browser, log_in, serving
from tests.web.site import DIALOGUES, PASSWORD, client_for, dialogue_and_pair, upload

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect
BLUR = "getComputedStyle(document.querySelector('.toxic')).filter"


def press(page, key: str) -> None:
    """A key that saves or switches something: the page the server answers with."""
    with page.expect_navigation():
        page.keyboard.press(key)
    assert page.locator("#error").count() == 0, page.inner_text("#error")


def checked(page, name: str) -> list[str]:
    return page.eval_on_selector_all(
        f"input[name={name}]:checked", "inputs => inputs.map(i => i.value)"
    )


def test_a_korean_annotator_labels_with_keys_only(site, request):
    engine, project_id = site
    dialogue_id, pair_id = dialogue_and_pair(engine, project_id, per_item=2)
    shots = Shots(f"keys-{request.node.callspec.id}")
    # a Chromium per test, as the other browser tests: a session-long Playwright keeps an
    # event loop running in the main thread, and later tests' asyncio.run() fail on it
    with serving(create_app(engine)) as base, browser() as chromium:
        page = chromium.new_page(viewport={"width": 1100, "height": 800})
        page.clock.install()  # time flows, and can be moved on (the 5 seconds of v)
        log_in(page, base, "ann1", PASSWORD)
        page.goto(f"{base}/items/{dialogue_id}")
        # the Korean screen: pages, the spec's categories by their Korean names, progress
        assert page.get_attribute("html", "lang") == "ko"
        assert "처음으로 범위를 벗어난 시스템 발화" in page.inner_text("h2")
        assert page.inner_text("#progress") == "이 종류 라벨링 0 / 1"  # 1 dialogue, 1 pair
        assert page.inner_text("#logout") == "로그아웃"
        assert "e 정책 위반" in page.inner_text("#categories")
        expect(page.locator("#timer")).not_to_have_text("0")  # the item's clock runs
        shots.take(page, "label-dialogue-ko")
        page.keyboard.press("?")
        assert page.is_visible("#keys-help") and "단축키" in page.inner_text("#keys-help")
        page.keyboard.press("Escape")
        assert not page.is_visible("#keys-help")
        # a Korean keyboard layout types "ㅇ" on the d key: still the d category
        page.evaluate(
            "document.dispatchEvent(new KeyboardEvent('keydown', {key: 'ㅇ', code: 'KeyD'}))"
        )
        assert checked(page, "category") == ["wrong persona"]
        page.keyboard.press("2")  # the second system turn (turn 2 of the dialogue)
        page.keyboard.press("e")
        assert checked(page, "first_oob") == ["2"] and checked(page, "category") == [
            "policy violation"
        ]
        press(page, "Enter")  # saved; the next item: the pair

        assert page.url == f"{base}/items/{pair_id}"
        press(page, "Backspace")  # back to the last label, its answer kept
        assert page.url == f"{base}/items/{dialogue_id}"
        assert checked(page, "first_oob") == ["2"]
        press(page, "Enter")  # saved again as it was: on to the pair
        assert page.url == f"{base}/items/{pair_id}"
        assert page.inner_text("#progress") == "이 종류 라벨링 0 / 1"  # the pairs' own
        assert page.inner_text("#pace") == "라벨당 시간: 아직 없음"  # no pair labelled yet
        assert "blur" in page.evaluate(BLUR)  # masked ...
        page.keyboard.press(".")  # ... until it has the focus: one key takes it there
        assert page.evaluate("document.activeElement.className") == "toxic masked"
        assert page.evaluate(BLUR) == "none"
        shots.take(page, "label-pair-focused")
        page.evaluate("document.activeElement.blur()")
        assert "blur" in page.evaluate(BLUR)
        page.keyboard.press("v")  # shown for 5 seconds, without a reload
        assert page.evaluate(BLUR) == "none" and page.url == f"{base}/items/{pair_id}"
        page.clock.run_for(4000)
        assert page.evaluate(BLUR) == "none"
        page.clock.run_for(1100)
        assert "blur" in page.evaluate(BLUR)  # masked again
        press(page, "u")  # undo: the dialogue's label is gone, its page open again
        assert page.url == f"{base}/items/{dialogue_id}"
        assert page.inner_text("#progress") == "이 종류 라벨링 0 / 1"
        assert checked(page, "first_oob") == []
        page.keyboard.press("n")  # every system turn in bounds
        press(page, "Enter")
        assert page.url == f"{base}/items/{pair_id}"
        shown = page.get_attribute("input[name=shown_at]", "value")
        press(page, "m")  # the mask off, for this person; the item's clock goes on
        assert page.evaluate(BLUR) == "none"
        assert page.get_attribute("input[name=shown_at]", "value") == shown
        assert page.get_attribute("#mask-toggle", "aria-pressed") == "false"
        page.keyboard.press("1")
        page.keyboard.press("3")
        press(page, "Enter")
        assert page.locator("#done").count() == 1  # the queue: nothing left

        # the language switch: the account's, and the mask stays off
        with page.expect_navigation():
            page.click("button.language[value=en]")
        assert page.get_attribute("html", "lang") == "en"
        assert page.inner_text("#done") == "nothing left to label here."
        page.goto(f"{base}/items/{pair_id}")
        assert page.inner_text("h2") == f"pair {pair_id}"
        assert page.inner_text("#progress") == "this kind labelled 1 / 1"
        assert page.evaluate(BLUR) == "none"
        shots.take(page, "label-pair-en")
        with page.expect_navigation():
            page.click("button.language[value=ko]")
        assert page.get_attribute("html", "lang") == "ko"
        assert page.inner_text("h2") == f"쌍 {pair_id}"
    with session(engine) as db:
        user = db.scalars(select(User).where(User.username == "ann1")).one()
        assert (user.language, user.mask) == ("ko", False)
        labels = db.execute(
            select(Annotation.item_id, Annotation.payload).where(Annotation.user_id == user.id)
        ).all()
    assert sorted(labels) == [
        (dialogue_id, {"first_oob": None, "category": None}),
        (pair_id, {"consistent": True, "offensive": True}),
    ]
    assert shots.count == 3


def test_the_queue_serves_its_stored_order_in_the_browser(site):
    """The queue page and Enter follow the stored order (web/queue.py), not upload order,
    and each label keeps the share its item was served from."""
    engine, project_id = site
    admin = client_for(engine, "admin")
    csv = "neutral,implicit\n" + "".join(f"문장 {n}.,바꾼 문장 {n}\n" for n in range(3))
    assert upload(admin, project_id, "pair", "kda.csv", csv, 2).status_code == 303
    with session(engine) as db:  # the judges' order, here the reverse of the upload's
        entries = db.scalars(select(QueueEntry).order_by(QueueEntry.item_id)).all()
        for entry, position, share in zip(entries, (2, 1, 0), ("ranked", "random", "ranked")):
            entry.position, entry.share = position, share
        order = [e.item_id for e in sorted(entries, key=lambda e: e.position)]
    with serving(create_app(engine)) as base, browser() as chromium:
        page = chromium.new_page()
        log_in(page, base, "ann1", PASSWORD)
        page.goto(f"{base}/projects/{project_id}/queue")
        with page.expect_navigation():
            page.click("#start")
        assert page.url == f"{base}/items/{order[0]}"
        for served, following in zip(order, order[1:]):
            page.keyboard.press("1")
            page.keyboard.press("3")
            press(page, "Enter")
            assert page.url == f"{base}/items/{following}", served
    with session(engine) as db:
        shares = dict(db.execute(select(Annotation.item_id, Annotation.share)).all())
    assert shares == {order[0]: "ranked", order[1]: "random"}


def test_a_long_dialogues_answers_stay_in_view_at_1280_by_720(page_site):
    """Issue 50 item 5: at 1280x720 the answers were below the fold. The in-bounds choice,
    the categories and the save button stay at the bottom of the window while the turns
    scroll; the guidelines sit beside them."""
    engine, project_id = page_site
    turns = [
        {"role": "system" if n % 2 == 0 else "user", "text": f"긴 대화의 {n + 1}번째 발화입니다."}
        for n in range(20)
    ]
    long = {**DIALOGUES[0], "id": "long-1", "turns": turns}
    admin = client_for(engine, "admin")
    jsonl = json.dumps(long, ensure_ascii=False) + "\n"
    assert upload(admin, project_id, "dialogue", "long.jsonl", jsonl, 1).status_code == 303
    with session(engine) as db:
        item_id = db.scalars(select(Item.id)).one()
    with serving(create_app(engine)) as base, browser() as chromium:
        page = chromium.new_page(viewport={"width": 1280, "height": 720})
        log_in(page, base, "ann1", PASSWORD)
        page.goto(f"{base}/items/{item_id}")
        assert page.evaluate("document.documentElement.scrollHeight") > 720  # it scrolls
        for selector in ("#submit-label", "#categories", "input[name=first_oob][value=none]"):
            box = page.locator(selector).bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= 720, selector
        guide = page.locator("#guidelines").bounding_box()
        form = page.locator("#label-form").bounding_box()
        assert guide["x"] >= form["x"] + form["width"]  # beside the answers, not below
