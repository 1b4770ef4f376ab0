"""The dialogue models on the embedded Gemma (frozen) and real Korean data.

Examples: every system turn of examples/carecall/dialogues.jsonl (a care-call bot for
seniors) is a positive; for a share of those contexts the response is swapped for an
implicitly offensive sentence of ../shared/data/detox/kda_ko.csv, a negative ("offensive"),
which is how rolecall uses K/DA for the safety side of the classifier. Sizes are small so
the test takes minutes on two cores: the point is the real backbone, tokenizer and data
through every model, not their final quality (bench/ measures that).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from rolecall.jsonl import write_jsonl  # noqa: E402
from rolecall.serve.candidates import CandidateIndex, build_candidate_index  # noqa: E402
from rolecall.serve.selection import ResponseSelector  # noqa: E402
from rolecall.serve.unanswerable import mc_dropout_confidence  # noqa: E402
from rolecall.train.backbone import load_backbone  # noqa: E402
from rolecall.train.classifier import ClassifierSettings, train_classifier  # noqa: E402
from rolecall.train.data import selection_pairs, unique_candidates  # noqa: E402
from rolecall.train.features import Features  # noqa: E402
from rolecall.train.loop import TrainConfig  # noqa: E402
from rolecall.train.reranker import Reranker, RerankerSettings  # noqa: E402
from rolecall.train.retriever import Retriever, RetrieverSettings, train_retriever  # noqa: E402
from tests.dialogue_data import carecall_examples  # noqa: E402

# minutes of CPU work each: more than pyproject's per-test limit (900 s) on a busy machine
pytestmark = [pytest.mark.embedded, pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    examples = carecall_examples()
    write_jsonl(root / "examples.jsonl", examples)
    return root, examples, load_backbone("embedded")


def test_the_classifier_separates_offensive_responses(setup):
    root, _, backbone = setup
    metrics = train_classifier(
        root / "examples.jsonl",
        root / "classifier",
        backbone,
        ClassifierSettings(max_length=192, response_max=48),
        TrainConfig(epochs=6, batch_size=16, lr=2e-3),
        test_share=0.25,
        progress=False,
        cache_dir=root / "features",
    )
    assert metrics["last_loss"] < metrics["first_loss"]
    assert metrics["test_out_of_bounds"] > 0 and metrics["roc_auc"] > 0.7, metrics
    saved = json.loads((root / "classifier" / "model.json").read_text(encoding="utf-8"))
    assert saved["settings"]["pool"] == "mean+last"  # Gemma is a decoder


def test_retriever_index_and_reranker_with_mc_dropout(setup):
    root, examples, backbone = setup
    settings = RetrieverSettings(
        kind="poly", codes=8, context_max_tokens=128, candidate_max_tokens=48
    )
    metrics = train_retriever(
        root / "examples.jsonl",
        root / "retriever",
        backbone,
        settings,
        TrainConfig(epochs=4, batch_size=16),
        progress=False,
        cache_dir=root / "features",
    )
    assert np.mean(metrics["losses"][-5:]) < np.mean(metrics["losses"][:5]), metrics["losses"]
    retriever = Retriever.load(root / "retriever", root / "features")
    pairs = selection_pairs(examples)
    built = build_candidate_index(
        retriever, unique_candidates(r for _, r in pairs), root / "index", progress=False
    )
    contexts = [context for context, _ in pairs[:8]]
    hits = built.search(contexts, k=5)
    assert [len(row) for row in hits] == [5] * 8
    assert CandidateIndex.load(root / "index").search(contexts, k=5) == hits

    # the default for a frozen backbone: a cross-attention head over separate states, cut
    # like the retriever's so that a live turn runs the context through Gemma once
    reranker = Reranker.create(
        backbone,
        RerankerSettings(context_max_tokens=128, candidate_max_tokens=48, negatives=3),
        Features(backbone, root / "features"),
    )
    assert reranker.settings.interaction == "attention"
    positives = [e for e in examples if e.label == "positive"][:48]
    history = reranker.fit(positives, TrainConfig(epochs=4, batch_size=8, lr=2e-3), progress=False)
    losses = history["losses"]  # one per batch of 8: compare the first and last epochs
    assert np.mean(losses[-6:]) < np.mean(losses[:6]), losses
    found = [[text for _, text, _ in row] for row in hits]
    scores = reranker.score(contexts, found)
    assert scores.shape == (8, 5) and np.isfinite(scores).all()
    best = [row[int(np.argmax(s))] for row, s in zip(found, scores, strict=True)]
    confidence = mc_dropout_confidence(reranker, contexts, best, passes=5)
    assert confidence.shape == (8,) and np.all((confidence > -1) & (confidence < 1))

    selector = ResponseSelector(built, reranker, k=5)
    assert selector.shared
    selector.prepare(progress=False)
    turn = selector.select(contexts[0], mc_passes=5)
    # the selector's context states are float32 straight from Gemma, the cached ones
    # float16: near-ties may order differently, scores agree to the cache's rounding
    texts = [s.text for s in turn.ranked]
    assert len(texts) == 5 and len(set(texts) & set(found[0])) >= 4
    cached = dict(zip(found[0], scores[0], strict=True))
    for selection in turn.ranked:
        if selection.text in cached:
            assert selection.rerank_score == pytest.approx(cached[selection.text], abs=0.05)
    alone = mc_dropout_confidence(reranker, contexts[:1], [turn.best.text], passes=5)[0]
    assert turn.confidence == pytest.approx(alone, abs=0.01)
