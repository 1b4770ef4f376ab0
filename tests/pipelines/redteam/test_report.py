"""The red-team report's HTML page (#19): written beside report.md, self-contained, the
chart's bars and whiskers drawn from the counts, the offensive text escaped."""

from __future__ import annotations

import pytest

from rolecall.pipelines.redteam.html import (
    LABEL_W,
    MAX_LABEL,
    PLOT_W,
    Bar,
    rate_chart,
    report_page,
)
from tests.pipelines.redteam.records import report_of, runs_of, write_run
from tests.pipelines.redteam.report_html import Elements

HOSTILE = '<script>alert("x")</script> 씨발 & <b>'


def _records():
    explicit = runs_of("explicit", 4, not_safe=3, path="fallback", attack=HOSTILE, reply=HOSTILE)
    return explicit + runs_of("neutral", 5, not_safe=0, other=1)


def test_report_html_is_written_beside_report_md_and_holds_no_outside_resource(tmp_path):
    run = write_run(tmp_path / "run", _records())
    html = (run / "report.html").read_text(encoding="utf-8")
    assert (run / "report.md").is_file()
    page = Elements(html)
    assert page.find("html")[0]["lang"] == "ko" and page.find("meta")[0]["charset"] == "utf-8"
    assert not page.find("script") and not page.find("link") and not page.find("img")
    assert "://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert page.find("p", "warning") and "offensive" in "".join(page.text)


def test_the_chart_draws_each_rate_and_interval_from_the_counts():
    report = report_of(_records())
    page = Elements(report_page(report))
    not_safe = page.find("rect", "not-safe")
    assert [bar["data-group"] for bar in not_safe] == ["explicit", "neutral"]
    assert [(bar["data-k"], bar["data-n"]) for bar in not_safe] == [("3", "4"), ("0", "5")]
    assert float(not_safe[0]["width"]) == pytest.approx(PLOT_W * 3 / 4, abs=0.2)
    assert float(not_safe[1]["width"]) == 0
    out_of_role = page.find("rect", "out-of-role")
    assert [bar["data-k"] for bar in out_of_role] == ["3", "1"]
    # three lines a whisker (the interval and its two ends), one whisker a bar
    whiskers = page.find("line", "whisker")
    assert len(whiskers) == 3 * 4
    low, high = report["kinds"]["explicit"]["not_safe"]["ci95"]
    assert float(whiskers[0]["x1"]) == pytest.approx(LABEL_W + PLOT_W * low, abs=0.2)
    assert float(whiskers[0]["x2"]) == pytest.approx(LABEL_W + PLOT_W * high, abs=0.2)
    assert {"3/4", "0/5", "1/5"} <= set(page.text)


def test_offensive_text_is_escaped_and_the_failures_paths_are_listed():
    html = report_page(report_of(_records()))
    assert "<script" not in html and "&lt;script&gt;alert(&quot;x&quot;)" in html
    page = Elements(html)
    text = "".join(page.text)
    assert HOSTILE in text  # shown as text, whole
    assert "fallback 3" in text  # the flagged replies' path
    assert "wrong persona 1" in text and "explicit-0" in text
    assert len(page.find("div", "case")) == 4  # three not safe, one out of role


def test_a_kind_without_conversations_gets_no_bar_and_no_case_says_so():
    report = report_of(runs_of("explicit", 2, not_safe=0))
    page = Elements(report_page(report))
    assert [bar["data-group"] for bar in page.find("rect", "not-safe")] == ["explicit"]
    text = "".join(page.text)
    assert "no conversations" in text and "No reply was flagged" in text


def test_long_labels_are_shortened_in_the_chart_but_kept_whole_in_its_tooltip():
    label = "llm:openai:a-very-long-model-name-of-a-server:0123456789"
    rate = {"k": 1, "rate": 0.5, "ci95": [0.1, 0.9]}
    page = Elements(rate_chart([("kda", [Bar(label, "not_safe", rate, 2)])], "chart"))
    assert label in page.text  # the <title> of the label
    shown = [t for t in page.text if t.startswith("llm:openai") and t != label]
    assert len(shown) == 1 and shown[0].endswith("…") and len(shown[0]) <= MAX_LABEL
