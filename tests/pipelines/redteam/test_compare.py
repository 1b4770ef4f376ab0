"""Comparing red-team runs of bot versions (#19): rates per kind and run, the difference
from the first run with Newcombe's interval, the not-paired warning, the pages, and the
errors of a run directory that is not a red-team run."""

from __future__ import annotations

import json

import pytest

from rolecall.errors import ConfigError, InputFileError
from rolecall.eval.intervals import newcombe_interval
from rolecall.pipelines.redteam.compare import compare, read_report, write_comparison
from tests.pipelines.redteam.records import report_of, runs_of, write_run
from tests.pipelines.redteam.report_html import Elements


def _runs(tmp_path, second_changes=None):
    old = runs_of("explicit", 10, not_safe=6, version="rfg:old") + runs_of(
        "neutral", 10, not_safe=0, other=2, version="rfg:old"
    )
    new = runs_of("explicit", 10, not_safe=1, other=1, version="rfg:new") + runs_of(
        "neutral", 10, not_safe=0, version="rfg:new"
    )
    first = write_run(tmp_path / "old", old)
    second = write_run(tmp_path / "new", new, **(second_changes or {"bot": "runs/bot2"}))
    return first, second


def test_each_version_is_compared_with_the_first_per_attack_kind(tmp_path):
    first, second = _runs(tmp_path)
    comparison = write_comparison(tmp_path / "cmp", [first, second])
    assert [r["label"] for r in comparison["runs"]] == ["rfg:old", "rfg:new"]
    assert [r["dir"] for r in comparison["runs"]] == [str(first), str(second)]
    assert comparison["paired"] and comparison["warnings"] == []
    old, new = comparison["kinds"]["explicit"]
    assert (old["not_safe"]["k"], new["not_safe"]["k"]) == (6, 1)
    assert old["not_safe_vs_first"] is None
    difference = new["not_safe_vs_first"]
    assert difference["difference"] == pytest.approx(0.1 - 0.6)
    assert difference["ci95"] == pytest.approx(newcombe_interval(1, 10, 6, 10), abs=1e-4)
    assert difference["ci95"][1] < 0  # fewer not-safe conversations, and the interval says so
    assert new["out_of_role_vs_first"]["difference"] == pytest.approx(0.2 - 0.6)
    neutral_new = comparison["kinds"]["neutral"][1]
    assert neutral_new["out_of_role_vs_first"]["difference"] == pytest.approx(-0.2)
    written = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert written == comparison
    text = (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    assert "| explicit | 2 | 10 | 10.0% [" in text and "-50.0 points [" in text
    assert "Not paired" not in text


def test_runs_whose_users_or_judges_differ_are_compared_with_a_warning(tmp_path):
    first, second = _runs(tmp_path, {"bot": "runs/bot2", "seed": 5, "judges": ["rules:x"]})
    comparison = write_comparison(tmp_path / "cmp", [first, second])
    assert not comparison["paired"]
    assert [w.split(":")[0] for w in comparison["warnings"]] == [
        "run 2 differs from run 1 in judges",
        "run 2 differs from run 1 in seed",
    ]
    assert "5 instead of 0" in comparison["warnings"][1]
    text = (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    assert text.count("**Not paired:**") == 2
    page = Elements((tmp_path / "cmp" / "compare.html").read_text(encoding="utf-8"))
    assert len(page.find("p", "not-paired")) == 2


def test_a_run_that_mixes_bot_versions_and_a_kind_one_run_lacks(tmp_path):
    mixed = runs_of("explicit", 2, not_safe=1, version="rfg:a") + runs_of(
        "explicit", 2, not_safe=0, version="rfg:b"
    )
    reports = [
        report_of(runs_of("explicit", 3, not_safe=0), attacks=["explicit"]),
        report_of(mixed + runs_of("neutral", 2, not_safe=0, version="rfg:b")),
    ]
    comparison = compare(["a", "b"], reports)
    assert comparison["runs"][1]["label"] == "rfg:a, rfg:b"
    assert any("2 bot versions" in w for w in comparison["warnings"])
    assert [row["run"] for row in comparison["kinds"]["neutral"]] == [2]
    assert comparison["kinds"]["neutral"][0]["not_safe_vs_first"] is None


def test_the_compare_page_draws_a_pair_of_bars_per_kind_and_run(tmp_path):
    first, second = _runs(tmp_path)
    write_comparison(tmp_path / "cmp", [first, second])
    page = Elements((tmp_path / "cmp" / "compare.html").read_text(encoding="utf-8"))
    bars = page.find("rect", "not-safe")
    assert [(b["data-group"], b["data-k"]) for b in bars] == [
        ("explicit", "6"),
        ("explicit", "1"),
        ("neutral", "0"),
        ("neutral", "0"),
    ]
    assert len(page.find("rect", "out-of-role")) == 4
    text = "".join(page.text)
    assert "1. rfg:old" in text and "2. rfg:new" in text and "-50.0 points [" in text


def test_a_missing_or_foreign_report_names_the_path_and_the_fix(tmp_path):
    with pytest.raises(InputFileError, match="no such directory") as caught:
        read_report(tmp_path / "nowhere")
    assert "rolecall redteam" in caught.value.fix
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputFileError, match=r"report\.json.*no report\.json there"):
        read_report(tmp_path / "empty")
    other = tmp_path / "other"
    other.mkdir()
    (other / "report.json").write_text(json.dumps({"kinds": {"kda": {"n": 1}}}), "utf-8")
    with pytest.raises(InputFileError, match="not a red-team report"):
        read_report(other)
    (other / "report.json").write_text("{", "utf-8")
    with pytest.raises(InputFileError, match="not valid JSON"):
        read_report(other)
    first, _ = _runs(tmp_path)
    assert read_report(first / "report.json")["kinds"]["explicit"]["n"] == 10
    with pytest.raises(ConfigError, match="two or more"):
        write_comparison(tmp_path / "cmp", [first])
