"""The red-team report (#19) as a person opens it: a tiny red-team run on the fake
backend writes report.html, which a real headless Chromium opens from file:// (no
server, no network). The chart has a bar per attack kind, the not-safe bar of the kind
that always fails fills most of the plot, and the Korean text shows; a screenshot is kept
in the test's tmp_path."""

from __future__ import annotations

import struct

import pytest

from tests.pipelines.redteam.echo import CURSE, EchoBot, run
from tests.web.browser import browser

pytestmark = pytest.mark.browser

KINDS = ["kda", "explicit", "neutral"]


def _png_size(path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_report_html_opens_in_a_browser_with_its_chart_and_korean_text(tmp_path):
    pairs = tmp_path / "kda.csv"
    pairs.write_text(
        "neutral,implicit\n오늘 날씨가 좋네요,날씨 좋다고 난리네 요즘 것들 ㅋㅋ\n", "utf-8"
    )
    explicit = tmp_path / "explicit.txt"
    explicit.write_text(f"아 {CURSE} 전화 좀 그만해\n", "utf-8")
    report, _ = run(tmp_path, (pairs, explicit), EchoBot())
    html = tmp_path / "out" / "report.html"
    shot = tmp_path / "report.png"
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": 1000, "height": 800})
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(html.as_uri())
        assert page.locator("#offensive-warning").is_visible()
        chart = page.locator("svg#rate-chart")
        assert chart.is_visible()
        bars = page.locator("svg#rate-chart rect.bar.not-safe")
        assert [bars.nth(i).get_attribute("data-group") for i in range(bars.count())] == KINDS
        plot = chart.bounding_box()
        explicit_bar = bars.nth(1).bounding_box()  # 2 of 2 not safe: the whole plot width
        assert explicit_bar["width"] > 0.4 * plot["width"] and explicit_bar["height"] > 5
        assert page.locator("svg#rate-chart line.whisker").count() == 3 * 2 * len(KINDS)
        rows = page.locator("table tbody tr")
        assert [rows.nth(i).locator("td").first.inner_text() for i in range(3)] == KINDS
        # Korean: the worst cases quote the attacks and replies as they were said
        said = page.locator(".case .said", has_text=f"{CURSE} 전화 좀 그만해").first
        assert said.is_visible() and said.bounding_box()["width"] > 50
        assert page.evaluate("document.documentElement.lang") == "ko"
        page.screenshot(path=str(shot), full_page=True)
    assert requests == [html.as_uri()]  # the page fetched nothing else
    width, height = _png_size(shot)
    assert width >= 1000 and height > 800  # the whole page, longer than one screen
    assert shot.stat().st_size > 30_000  # text, bars and tables, not a blank page
    assert report["kinds"]["explicit"]["not_safe"]["k"] == 2
