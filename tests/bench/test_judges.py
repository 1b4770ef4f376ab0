"""bench/judges.py on tiny data: every judge kind trained, timed and scored, the tables
printed, and the last line the JSON object with one target per goal of issue #16."""

from __future__ import annotations

import json

import pytest

from tests.bench import loading
from tests.train.kda_data import write_data_dir

BEEP_HEADER = "comments\tcontain_gender_bias\tbias\thate"
TARGETS = {
    f"{name}_{side}_minus_{other}"
    for name, side in (
        ("beep", "trained"),
        ("kda_implicit", "trained"),
        ("kda_consistency", "trained"),
        ("kda_consistency_hard", "trained"),
        ("out_of_bounds", "rules"),
    )
    for other in ("llm", "tfidf")
} | {
    f"{judge}_items_per_min"
    for judge in ("beep_judge", "implicit_judge", "consistency_judge", "rules")
}


def load_bench():
    """bench/judges.py as a module (bench/ is not a package)."""
    return loading.load_bench("judges", "bench_judges")


def write_beep(path, rows: int) -> None:
    lines = [BEEP_HEADER]
    for i in range(rows):
        hate = ("offensive", "hate", "none", "none")[i % 4]
        text = f"이 배우 진짜 한심하다 {i}" if hate != "none" else f"이 드라마 재밌게 봤어요 {i}"
        lines.append(f"{text}\tFalse\tnone\t{hate}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = write_data_dir(tmp_path_factory.mktemp("shared"))
    (root / "eval").mkdir()
    write_beep(root / "slang" / "beep_labeled_train.tsv", 60)
    write_beep(root / "eval" / "beep_labeled_dev.tsv", 20)
    return root


def last_json(capsys) -> dict:
    lines = capsys.readouterr().out.strip().splitlines()
    return json.loads(lines[-1])


@pytest.mark.slow
def test_without_the_llm_every_target_is_reported(data_dir, capsys):
    summary = load_bench().main(["--data-dir", str(data_dir), "--skip-llm", "--no-progress"])
    assert last_json(capsys) == summary
    loading.check_targets(summary["targets"], TARGETS)
    for name, goal in summary["targets"].items():
        if name.endswith("_minus_llm"):
            assert goal["value"] is None and goal.get("note") == "not measured"
    # each value is the bench's own numbers: the trained judge (or the rules) minus TF-IDF
    # on all items, the judge's items per minute
    for name, side in (
        ("beep", "trained"),
        ("kda_implicit", "trained"),
        ("kda_consistency", "trained"),
        ("kda_consistency_hard", "trained"),
        ("out_of_bounds", "rules"),
    ):
        judges = summary["sets"][name]["judges"]
        gain = judges[side]["macro_f1"] - judges["tfidf"]["macro_f1"]
        assert summary["targets"][f"{name}_{side}_minus_tfidf"]["value"] == pytest.approx(
            gain, abs=1e-4
        )
    assert summary["targets"]["kda_consistency_hard_trained_minus_tfidf"]["target"] == ">= 0.05"
    hard = summary["sets"]["kda_consistency_hard"]
    kinds = hard["judges"]["trained"]["kind_accuracy"]
    assert set(kinds) <= {"respaced rewrite", "respaced", "repunctuated", "reworded"}
    assert sum(k["n"] for k in kinds.values()) == hard["items"]
    speed = summary["targets"]["rules_items_per_min"]["value"]
    assert speed == summary["sets"]["out_of_bounds"]["judges"]["rules"]["items_per_min"] > 0
    oob = summary["sets"]["out_of_bounds"]
    assert oob["items"] == 244 + 183  # system turns after the opening + the written ones
    recall = oob["judges"]["rules"]["category_recall"]
    assert sum(c["n"] for c in recall.values()) == 183
    assert set(summary["sets"]["beep"]["judges"]) == {
        "trained",
        "tfidf",
        "kda_implicit",
        "sentence",
        "e5",
    }
    assert set(summary["sets"]["kda_consistency_hard"]["judges"]) == {
        "trained",
        "tfidf",
        "ngrams",
        "no_content",
        "e5",
    }
    for found in summary["sets"].values():
        for judge in found["judges"].values():
            assert 0 <= judge["macro_f1"] <= 1 and judge["items_per_min"] > 0


def test_the_llm_judges_the_same_stratified_items(data_dir, capsys):
    summary = load_bench().main(
        ["--data-dir", str(data_dir), "--model", "fake:judge", "--llm-limit", "6", "--no-progress"]
    )
    last_json(capsys)
    for name, found in summary["sets"].items():
        subset = found["llm_subset"]
        assert subset["items"] == min(6, found["items"]), name
        assert {"llm", "llm_calibrated", "tfidf"} <= set(subset["judges"])
        assert all(j["items"] == subset["items"] for j in subset["judges"].values())
    assert all(
        isinstance(summary["targets"][t]["value"], float) for t in TARGETS if t.endswith("_llm")
    )


def test_stratified_keeps_each_label_and_grows_into_a_superset():
    bench = load_bench()
    gold = ["a"] * 90 + ["b"] * 10
    small, large = bench.stratified(gold, 10, 0), bench.stratified(gold, 30, 0)
    assert [gold[i] for i in small].count("b") == 1 and len(small) == 10
    assert [gold[i] for i in large].count("b") == 3 and set(small) <= set(large)
    assert bench.stratified(gold, 0, 0) == list(range(100))


def test_each_edit_of_the_hard_set_is_told_by_its_kind():
    import random

    from rolecall.train.near_copies import repunctuated, respaced, reworded

    bench, rng = load_bench(), random.Random(2)
    text = "정말 3박 4일 여행 다녀왔어요"
    assert bench.edit_kind(text, respaced(text, rng)) == "respaced"
    assert bench.edit_kind(text, repunctuated(text, rng)) == "repunctuated"
    assert bench.edit_kind(text, reworded(text)) == "reworded"
