"""The selection and safety heads on the embedded Gemma's frozen states (``--backbone
embedded``), now that the demo trains them on the sentence encoder: the real tokenizer,
pair assembly, decoder pooling and feature cache, on a few of the demo's own examples and
the Gemma cut after two layers (the path, not quality: bench/ measures that)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from rolecall.train.backbones.features import Features  # noqa: E402
from rolecall.train.backbones.load import load_backbone  # noqa: E402
from rolecall.train.classifier import Classifier, ClassifierSettings  # noqa: E402
from rolecall.train.data import read_examples, selection_pairs  # noqa: E402
from rolecall.train.loop import TrainConfig  # noqa: E402
from rolecall.train.reranker import Reranker, RerankerSettings  # noqa: E402
from rolecall.train.retriever import Retriever, RetrieverSettings, fit_retriever  # noqa: E402

pytestmark = [pytest.mark.embedded, pytest.mark.timeout(1800)]


def test_classifier_retriever_and_reranker_on_two_gemma_layers(demo_run, tmp_path):
    examples = read_examples(demo_run.out / "bot" / "examples.jsonl")
    picked = [e for e in examples if e.label == "negative"][:6]
    picked += [e for e in examples if e.label == "positive"][:18]
    backbone = load_backbone("embedded", layer=2)
    cache = tmp_path / "features"
    config = TrainConfig(epochs=3, batch_size=8, lr=2e-3)
    classifier = Classifier.create(
        backbone, ClassifierSettings(max_length=96, response_max=32), Features(backbone, cache)
    )
    assert classifier.settings.pool == "mean+last"  # Gemma is a decoder
    classifier.fit(picked, config, progress=False)
    classifier.save(tmp_path / "classifier")
    contexts = [e.history for e in picked[:4]]
    responses = [e.response for e in picked[:4]]
    proba = classifier.predict_proba(contexts, responses)
    again = Classifier.load(tmp_path / "classifier").predict_proba(contexts, responses)
    assert proba.shape == (4, 2) and np.allclose(proba, again, atol=1e-4)

    pairs = selection_pairs(picked)
    settings = RetrieverSettings(kind="poly", codes=4, context_max_tokens=64)
    retriever, history = fit_retriever(pairs, backbone, settings, config, False, cache)
    assert np.isfinite(history["last_loss"])
    retriever.save(tmp_path / "retriever")
    loaded = Retriever.load(tmp_path / "retriever", cache)
    assert loaded.settings.backbone == "embedded" and loaded.backbone.layer == 2
    candidates = [r for _, r in pairs[:5]]
    assert np.allclose(
        loaded.encode_candidates(candidates), retriever.encode_candidates(candidates), atol=1e-3
    )

    reranker = Reranker.for_training(
        backbone, RerankerSettings(negatives=3, context_max_tokens=64), config, cache
    )
    assert reranker.settings.interaction == "attention"
    reranker.fit([e for e in picked if e.label == "positive"], config, None, progress=False)
    scores = reranker.score([c for c, _ in pairs[:3]], [candidates] * 3)
    assert scores.shape == (3, 5) and np.isfinite(scores).all()
