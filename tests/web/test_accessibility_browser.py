"""Issue 50 item 8 in a real headless Chromium, on SQLite and PostgreSQL: the pages a lead
and an annotator use pass what the review found failing. On a phone (390 px wide, touch)
no page scrolls sideways and every radio and checkbox is at least 24 px; text and
secondary buttons have at least AA contrast (4.5:1); a dialogue's turn radios carry
their turn's text and the categories their names; the keys list is a dialog that takes
the focus and gives it back. Screenshots: runs/screenshots/a11y-*/."""

from __future__ import annotations

import re

import pytest

from rolecall.web import create_app
from tests.web.browser import Shots, browser, log_in, serving
from tests.web.site import DIALOGUES, PASSWORD, dialogue_and_pair

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect

# WCAG 2 contrast of each shown element matching a selector: its text colour against the
# first opaque background behind it
CONTRAST = """selector => {
  const rgb = s => s.match(/[\\d.]+/g).map(Number);
  const channel = c => (c /= 255) <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
  const luminance = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const behind = element => {
    for (let e = element; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length < 4 || c[3] > 0) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  return [...document.querySelectorAll(selector)]
    .filter(e => e.getClientRects().length && e.textContent.trim())
    .map(e => {
      const [a, b] = [luminance(rgb(getComputedStyle(e).color)), luminance(behind(e))];
      return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    });
}"""
TEXTS = ["button.secondary", "button:not(.secondary)", ".meta", ".speaker", "kbd", "td", "a"]
SMALL_TARGETS = """() => [...document.querySelectorAll('input[type=radio], input[type=checkbox]')]
  .filter(e => e.getClientRects().length)
  .map(e => e.getBoundingClientRect())
  .filter(r => r.width < 24 || r.height < 24).length"""


def test_pages_pass_aa_on_a_phone_and_on_a_desktop(site, request):
    engine, project_id = site
    dialogue, pair = dialogue_and_pair(engine, project_id, per_item=2)
    lead = ["/", "/admin", f"/projects/{project_id}/dashboard"]
    annotator = [
        f"/projects/{project_id}/queue",
        f"/projects/{project_id}/guidelines",
        f"/projects/{project_id}/labels",
        f"/items/{dialogue}",
        f"/items/{pair}",
    ]
    shots = Shots(f"a11y-{request.node.callspec.id}")
    with serving(create_app(engine)) as base, browser() as chromium:
        for who, pages in (("admin", lead), ("ann1", annotator)):
            phone = chromium.new_context(
                viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True
            ).new_page()
            log_in(phone, base, who, PASSWORD)
            phone_pages(phone, base, pages)
        shots.take(phone, "item-pair-390")

        desktop = chromium.new_page(viewport={"width": 1100, "height": 800})
        log_in(desktop, base, "ann1", PASSWORD)
        desktop.goto(f"{base}/items/{dialogue}")

        # each turn radio is described by its turn's text; a category is named by its name
        system_turns = [
            (n, t["text"]) for n, t in enumerate(DIALOGUES[0]["turns"]) if t["role"] == "system"
        ]
        for n, text in system_turns:
            radio = desktop.locator(f"input[name=first_oob][value='{n}']")
            expect(radio).to_have_accessible_description(text)
        expect(desktop.get_by_role("radio", name=re.compile("정책 위반"))).to_have_count(1)
        # the keys: a dialog named by its title, which takes the focus and gives it back
        desktop.locator("input[name=first_oob][value=none]").focus()
        desktop.keyboard.press("?")
        dialog = desktop.get_by_role("dialog", name="단축키")
        expect(dialog).to_be_visible()
        assert desktop.evaluate("document.activeElement.id") == "keys-help"
        desktop.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        assert desktop.evaluate("document.activeElement.value") == "none"
        shots.take(desktop, "item-dialogue-1100")
    assert shots.count == 2


def phone_pages(phone, base: str, pages: list[str]) -> None:
    for path in pages:
        phone.goto(base + path)
        assert phone.locator("#error").count() == 0, path
        wide = phone.evaluate("document.documentElement.scrollWidth")
        assert wide <= 390, f"{path} scrolls sideways on a phone: {wide} px"
        assert phone.evaluate(SMALL_TARGETS) == 0, f"{path}: a radio under 24 px on touch"
        for selector in TEXTS:
            low = [r for r in phone.evaluate(CONTRAST, selector) if r < 4.5]
            assert not low, f"{path}: {selector} contrast {min(low):.2f}:1 (AA: 4.5:1)"
