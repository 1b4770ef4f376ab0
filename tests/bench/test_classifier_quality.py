"""bench/classifier_quality.py's pure helpers: the target and the hybrid model (TF-IDF
features and dense vectors side by side in one logistic regression)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.bench.loading import load_bench

pytest.importorskip("torch")
pytest.importorskip("sklearn")

bench = load_bench("classifier_quality")


def test_the_target_is_met_from_five_points_up():
    assert bench.target(0.05) == {"value": 0.05, "target": ">= 0.05", "met": True}
    assert bench.target(0.0499)["met"] is False and bench.target(-0.1)["value"] == -0.1


def test_the_hybrid_reads_the_dense_vectors_too():
    from rolecall.train.baselines import TfidfModel, TfidfSettings

    rng = np.random.default_rng(0)
    # the texts carry no signal (the same two words either way); the vectors do
    texts = ["가나 다라" if i % 2 else "다라 가나" for i in range(200)]
    labels = list(rng.integers(0, 2, 200))
    vectors = rng.normal(size=(200, 8)) + np.array(labels)[:, None] * 2.0
    tfidf = TfidfModel(TfidfSettings(labels=bench.NAMES))
    tfidf.fit(texts[:150], [bench.NAMES[v] for v in labels[:150]])
    predicted = bench.hybrid_f1(
        tfidf, texts[:150], vectors[:150], labels[:150], texts[150:], vectors[150:]
    )
    assert bench.macro_f1(labels[150:], predicted) > 0.8
    assert bench.macro_f1(labels[150:], tfidf.predict_proba(texts[150:]).argmax(1)) < 0.7
