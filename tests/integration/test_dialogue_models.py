"""The dialogue models on the demo's backbone (the bundled sentence encoder; the retriever
tunes its dense top) and real Korean data, as the session's demo trained them
(``demo_run``, tests/integration/conftest.py): the out-of-bounds classifier, the residual
retriever with its candidate index, and the cross-attention reranker, trained on the
shipped care-call dialogues, the generated ones and the spec's forbidden examples. Here
each is loaded back from the run directory and used as the bot uses it: the real backbone,
tokenizer and feature cache through every model. Their quality is bench/'s business; that
they learned is read from what training recorded. The same heads on the embedded Gemma:
test_gemma_heads.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from rolecall.serve.candidates import CandidateIndex  # noqa: E402
from rolecall.serve.selection import ResponseSelector  # noqa: E402
from rolecall.serve.unanswerable import mc_dropout_confidence  # noqa: E402
from rolecall.train.classifier import Classifier  # noqa: E402
from rolecall.train.data import read_examples, selection_pairs  # noqa: E402
from rolecall.train.reranker import Reranker  # noqa: E402
from rolecall.train.retriever import Retriever  # noqa: E402

pytestmark = [pytest.mark.embedded, pytest.mark.timeout(3600)]


def trained(demo_run, part: str) -> dict:
    saved = json.loads((demo_run.out / "bot" / part / "model.json").read_text(encoding="utf-8"))
    metrics = saved["metrics"]
    assert metrics["last_loss"] < metrics["first_loss"], (part, metrics)
    return saved


@pytest.fixture(scope="module")
def held_out(demo_run) -> list:
    """(context, gold response) pairs of the demo's held-out dialogues: never trained on."""
    pairs = selection_pairs(read_examples(demo_run.out / "bot" / "held_out.jsonl"))
    assert len(pairs) >= 8
    return pairs[:8]


def test_the_classifier_separates_out_of_bounds_responses(demo_run, held_out):
    # the guard candidate over the sentence encoder (the bot run keeps every candidate)
    saved = trained(demo_run, "candidates/guard-sentence")
    metrics = saved["metrics"]
    assert metrics["test_out_of_bounds"] > 0 and metrics["roc_auc"] > 0.6, metrics
    assert saved["settings"]["pool"] == "pair"  # the sentence encoder's turns and response
    classifier = Classifier.load(demo_run.out / "bot" / "candidates" / "guard-sentence")
    contexts = [context for context, _ in held_out]
    proba = classifier.predict_proba(contexts, [gold for _, gold in held_out])
    assert proba.shape == (8, 2) and np.allclose(proba.sum(axis=1), 1, atol=1e-5)
    forbidden = classifier.predict_proba(contexts, ["네 주소 알려주면 내가 직접 찾아갈게"] * 8)
    assert forbidden[:, 1].mean() > proba[:, 1].mean()  # a persona break looks worse


def test_retriever_index_and_reranker_with_mc_dropout(demo_run, held_out):
    bot, features = demo_run.out / "bot", demo_run.out / "features"
    # over the sentence encoder: its cosine plus trained residual maps, one vector a side
    assert trained(demo_run, "retriever")["settings"]["kind"] == "residual"
    # with the encoder's dense top tuned (the policy's default for a retriever on it)
    assert json.loads((bot / "retriever" / "backbone.json").read_text())["tuned"] == 5
    saved = trained(demo_run, "reranker")
    # the default for a frozen backbone: a cross-attention head over separate states, cut
    # like the retriever's so that a live turn runs the context through the backbone once
    assert saved["settings"]["interaction"] == "attention"
    retriever = Retriever.load(bot / "retriever", features)
    index = CandidateIndex.load(bot / "retriever" / "candidates", retriever)
    contexts = [context for context, _ in held_out]
    hits = index.search(contexts, k=5)
    assert [len(row) for row in hits] == [5] * 8
    # loaded alone, the index runs the backbone straight (no feature cache): the same
    # candidates, scores to float rounding
    alone = CandidateIndex.load(bot / "retriever" / "candidates").search(contexts, k=5)
    assert [[t for _, t, _ in row] for row in alone] == [[t for _, t, _ in row] for row in hits]
    assert np.allclose(
        [[s for *_, s in row] for row in alone], [[s for *_, s in row] for row in hits], atol=1e-3
    )

    reranker = Reranker.load(bot / "reranker", features)
    found = [[text for _, text, _ in row] for row in hits]
    scores = reranker.score(contexts, found)
    assert scores.shape == (8, 5) and np.isfinite(scores).all()
    best = [row[int(np.argmax(s))] for row, s in zip(found, scores, strict=True)]
    confidence = mc_dropout_confidence(reranker, contexts, best, passes=5)
    assert confidence.shape == (8,) and np.all((confidence > -1) & (confidence < 1))

    selector = ResponseSelector(index, reranker, k=5)
    # the retriever tuned its encoder's top, the reranker reads the frozen package's
    # vectors: no context pass to share, the reranker runs its own
    assert not selector.shared
    selector.prepare(progress=False)
    turn = selector.select(contexts[0], mc_passes=5)
    # the selector's context states are float32 straight from the backbone, the cached ones
    # float16: near-ties may order differently, scores agree to the cache's rounding
    texts = [s.text for s in turn.ranked]
    assert len(texts) == 5 and len(set(texts) & set(found[0])) >= 4
    cached = dict(zip(found[0], scores[0], strict=True))
    for selection in turn.ranked:
        if selection.text in cached:
            assert selection.rerank_score == pytest.approx(cached[selection.text], abs=0.05)
    alone = mc_dropout_confidence(reranker, contexts[:1], [turn.best.text], passes=5)[0]
    assert turn.confidence == pytest.approx(alone, abs=0.01)
