"""bench/detox_quality.py's pure helpers: the decodings given on its command line, the
lexicon baseline and the targets."""

from __future__ import annotations

import argparse

import pytest

from tests.bench.loading import load_bench

pytest.importorskip("torch")

bench = load_bench("detox_quality")


def test_decodings_parse_and_a_bad_one_says_the_form():
    keeps = bench.keep_list("1:0, 0:0.8")
    assert [(k.copy_bias, k.min_length_ratio) for k in keeps] == [(1.0, 0.0), (0.0, 0.8)]
    with pytest.raises(argparse.ArgumentTypeError, match="COPY_BIAS:MIN_LENGTH_RATIO"):
        bench.keep_list("1")


def test_targets_compare_with_copying():
    results = {
        "input (copy)": {"chrf": 40.0, "offensive_rate": 0.9},
        "detox model": {"chrf": 41.0, "offensive_rate": 0.4},
    }
    met = bench.targets(results)
    assert met["chrf_vs_copy"] == {"value": 1.025, "target": ">= 1.0", "met": True}
    assert met["offensive_rate_vs_copy"]["met"] is False  # 0.444 > 0.4


def test_lexicon_deletion_drops_words_holding_an_entry():
    words = bench.lexicon_words()
    entry = next(w for w in words if len(w) >= 2)
    assert bench.lexicon_baseline([f"좋은 아침 {entry}야 반가워"]) == ["좋은 아침 반가워"]
