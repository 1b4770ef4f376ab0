"""bench/slang_retrieval.py's last line: every number and its targets."""

from __future__ import annotations

import argparse

from tests.bench.loading import load_bench

bench = load_bench("slang_retrieval")


def test_the_last_line_has_the_targets_and_one_per_dense_model():
    numbers = {
        "build": {"ours_s": 1.0, "raw_s": 0.9, "raw_with_texts_s": 1.1},
        "latency": {"p50_ms": {"ours": 2.5}, "p95_ms": {"ours": 4.0}, "ours_over_raw": 1.25},
        "recall": {"ours": 0.9, "raw": 0.9, "queries": 500},
        "dense": {
            "sentence": {"bm25": {"recall": 0.8}, "hybrid": {"recall": 0.85}},
            "e5": {"bm25": {"recall": 0.8}, "hybrid": {"recall": 0.75}},
        },
    }
    args = argparse.Namespace(k=9, seed=0, dense_comments=5000)
    targets = bench.result(numbers, args)["targets"]
    assert targets["ours_over_raw_p50"] == {"value": 1.25, "target": "<= 1.2", "met": False}
    assert targets["ours_p50_ms"]["met"] is True
    assert targets["hybrid_sentence_vs_bm25_recall"] == {
        "value": 0.05,
        "target": ">= 0.0",
        "met": True,
    }
    assert targets["hybrid_e5_vs_bm25_recall"]["met"] is False
