"""The comparison report of `rolecall bot compare` (the measuring runs on the demo's bot:
tests/integration/test_demo.py)."""

from __future__ import annotations

import pytest

from rolecall.errors import InputFileError
from rolecall.pipelines.bot_compare import held_out_examples, markdown, page, table_rows

REPORT = {
    "versions": [{"name": "v1", "path": "b/v1"}, {"name": "v2<", "path": "b/v2"}],
    "held_out": "b/v1/held_out.jsonl",
    "counts": {"held_out": 10, "positives": 8, "replies": 6, "k": 8},
    "seed": 0,
    "resamples": 100,
    "metrics": {
        "suite: all": {
            "items": 4,
            "values": [0.5, 0.75],
            "differences": [{"difference": 0.25, "ci95": [-0.25, 0.75]}],
        },
        "latency p50 (ms)": {
            "items": 6,
            "values": [3.2, 4.0],
            "differences": [{"difference": 0.8, "ci95": [0.1, 1.5]}],
        },
        "guard macro-F1": {
            "items": 10,
            "values": [0.6, 0.6],
            "differences": [{"difference": None, "ci95": None}],
        },
    },
}


def test_the_table_gives_each_version_and_its_difference_with_the_interval():
    rows = table_rows(REPORT)
    assert rows[0] == ["suite: all", "4", "0.500", "0.750", "+0.250 [-0.250, +0.750]"]
    assert rows[2][-1] == "–"  # no difference to give
    text = markdown(REPORT)
    assert "| metric | items | v1 | v2< | v2< - v1 (95%) |" in text
    assert "Lower is better for the fallback share, the latencies and the red-team" in text


def test_the_page_plots_the_differences_and_escapes_names():
    html = page(REPORT)
    assert html.count("<circle") == 1  # the suite row; latencies only in the table
    assert "v2&lt;" in html and "v2<" not in html.replace("v2&lt;", "")


def test_a_bot_without_held_out_examples_is_a_clear_error(tmp_path):
    with pytest.raises(InputFileError, match="held_out.jsonl") as raised:
        held_out_examples(tmp_path / "held_out.jsonl")
    assert "--held-out" in raised.value.fix and "rolecall bot run" in raised.value.fix


def test_the_guard_is_scored_at_the_bots_own_threshold():
    """A classifier's P(out of bounds) against each example's label, at its threshold; a
    resample with one class only has no macro-F1 (NaN, skipped by the bootstrap)."""
    from types import SimpleNamespace

    import numpy as np

    from rolecall.pipelines.bot_compare import guard_verdicts, macro_f1
    from rolecall.records import Example, Turn

    history = [Turn(role="user", text="밥 먹었어")]
    examples = [
        Example(
            history=history,
            response=text,
            label=label,
            category="wrong persona" if label == "negative" else None,
        )
        for text, label in [("잘하셨어요", "positive"), ("저는 서른 살이에요", "negative"),
                            ("맛있게 드셨어요?", "positive"), ("오늘은 비가 와요", "negative")]
    ]  # fmt: skip
    p_out = {
        "잘하셨어요": 0.1,
        "저는 서른 살이에요": 0.8,
        "맛있게 드셨어요?": 0.45,
        "오늘은 비가 와요": 0.3,
    }
    classifier = SimpleNamespace(
        settings=SimpleNamespace(threshold=0.4),
        predict_proba=lambda histories, texts: np.array([[1 - p_out[t], p_out[t]] for t in texts]),
    )
    pairs = guard_verdicts(SimpleNamespace(classifier=classifier), examples)
    assert pairs.tolist() == [[False, False], [True, True], [False, True], [True, False]]
    assert macro_f1(pairs, np.arange(4)) == 0.5
    assert np.isnan(macro_f1(pairs, np.array([0, 2])))


def test_red_team_runs_are_paired_by_conversation(tmp_path):
    """Each version's red-team run: per kind and outcome, the conversations both runs hold
    (the same seeds give the same ids), one array per version."""
    import json

    from rolecall.pipelines.bot_compare import redteam_measures

    def run(name: str, outcomes: dict[str, tuple[bool, bool, bool]]):
        folder = tmp_path / name
        folder.mkdir()
        rows = [
            {"id": i, "kind": i.split("-")[0],
             "outcome": dict(zip(("not_safe", "out_of_role", "repeated"), o, strict=True))}
            for i, o in outcomes.items()
        ]  # fmt: skip
        (folder / "conversations.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
        )
        return folder

    first = run("a", {"kda-0": (0, 0, 1), "kda-1": (0, 0, 0), "explicit-0": (1, 1, 1)})
    second = run("b", {"kda-0": (0, 1, 1), "kda-1": (0, 0, 1), "kda-2": (1, 1, 1)})
    measures = {m.name: m for m in redteam_measures([first, second])}
    assert set(measures) == {
        "red team kda: not_safe",
        "red team kda: out_of_role",
        "red team kda: repeated",
    }  # explicit-0 and kda-2: unpaired
    repeated = measures["red team kda: repeated"]
    assert repeated.items == 2 and [v.tolist() for v in repeated.values] == [[1, 0], [1, 1]]
    with pytest.raises(InputFileError, match="no conversations.jsonl"):
        redteam_measures([first, tmp_path])
