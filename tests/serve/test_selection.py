"""Response selection for a live turn: one backbone pass shared by retriever and reranker."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("faiss")

from rolecall.records import Example, Turn  # noqa: E402
from rolecall.serve.candidates import build_candidate_index  # noqa: E402
from rolecall.serve.selection import ResponseSelector  # noqa: E402
from rolecall.serve.unanswerable import mc_dropout_confidence  # noqa: E402
from rolecall.train.backbones.base import Backbone  # noqa: E402
from rolecall.train.data import context_text  # noqa: E402
from rolecall.train.loop import TrainConfig  # noqa: E402
from rolecall.train.reranker import Reranker, RerankerSettings  # noqa: E402
from rolecall.train.retriever import RetrieverSettings, fit_retriever  # noqa: E402
from tests.serve.topics import PAIRS, TOPICS  # noqa: E402
from tests.tiny_models import tiny_backbone  # noqa: E402

RERANK = RerankerSettings(
    interaction="attention",
    context_max_tokens=32,
    candidate_max_tokens=16,
    dim=16,
    heads=2,
    width=16,
    negatives=3,
    dropout=0.2,
)


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    tiny = tiny_backbone([t for pair in PAIRS for t in pair], vocab_size=150, dropout=0.0)
    tiny = Backbone(tiny.model, tiny.tokenizer, "in-code", frozen=True)
    retriever, _ = fit_retriever(
        PAIRS,
        tiny,
        RetrieverSettings(
            kind="poly", dim=32, codes=4, context_max_tokens=32, candidate_max_tokens=16
        ),
        TrainConfig(epochs=10, batch_size=8, lr=1e-2),
        progress=False,
    )
    index = build_candidate_index(
        retriever, [a for _, a in TOPICS], tmp_path_factory.mktemp("index"), progress=False
    )
    reranker = Reranker.create(tiny, RERANK)
    examples = [
        Example(
            history=[Turn(role="user", text=f"{topic} 이야기 {n}")],
            response=answer,
            label="positive",
        )
        for n in range(3)
        for topic, answer in TOPICS
    ]
    reranker.fit(examples, TrainConfig(epochs=5, batch_size=4, lr=1e-2), progress=False)
    return index, reranker


def count_backbone_passes(backbone: Backbone) -> list[int]:
    calls = []
    backbone.model.register_forward_hook(lambda *_: calls.append(1))
    return calls


def test_one_backbone_pass_per_turn_and_the_same_answer_as_the_parts(parts):
    index, reranker = parts
    selector = ResponseSelector(index, reranker, k=5)
    assert selector.shared
    selector.prepare(progress=False)  # every candidate's states, once
    calls = count_backbone_passes(reranker.backbone)
    context = [Turn(role="user", text="식사 이야기 1")]
    turn = selector.select(context, mc_passes=6, seed=2)
    assert len(calls) == 1  # the context, once, for retriever, reranker and MC dropout
    text = context_text(context)
    found = index.search([text], k=5)[0]
    assert sorted(s.candidate_id for s in turn.ranked) == sorted(i for i, _, _ in found)
    scores = reranker.score([text], [[t for _, t, _ in found]])[0]
    expected = [found[i][1] for i in np.argsort(-scores, kind="stable")]
    assert [s.text for s in turn.ranked] == expected
    # the selector reads the context's float32 states, score() the float16 cached ones
    assert [s.rerank_score for s in turn.ranked] == pytest.approx(
        sorted(scores)[::-1], rel=1e-2, abs=1e-3
    )
    alone = mc_dropout_confidence(reranker, [text], [turn.best.text], passes=6, seed=2)[0]
    assert turn.confidence == pytest.approx(alone, rel=1e-2, abs=1e-3)
    assert selector.retrieve(context) == [
        s for s in ResponseSelector(index, k=5).select(context).ranked
    ]


def test_a_reranker_that_cuts_the_context_otherwise_reads_pairs(parts):
    index, reranker = parts
    other = Reranker(
        reranker.head,
        reranker.backbone,
        reranker.settings.model_copy(update={"context_max_tokens": 24}),
    )
    selector = ResponseSelector(index, other, k=4)
    assert not selector.shared
    shared = ResponseSelector(index, reranker, k=4)
    context = context_text([Turn(role="user", text="산책 이야기 2")])  # short: both cuts
    # keep all of it
    assert [s.text for s in selector.select(context).ranked] == [
        s.text for s in shared.select(context).ranked
    ]
    with pytest.raises(ValueError, match="k must be 1 or more"):
        ResponseSelector(index, reranker, k=0)


def test_without_rerank_the_retrievers_order_stands_and_the_reranker_gives_the_confidence(
    parts,
):
    index, reranker = parts
    selector = ResponseSelector(index, reranker, k=5, rerank=False)
    context = [Turn(role="user", text="식사 이야기 1")]
    turn = selector.select(context, mc_passes=6, seed=2)
    assert turn.ranked == selector.retrieve(context)  # retriever order, no rerank scores
    assert all(s.rerank_score is None for s in turn.ranked)
    text = context_text(context)
    alone = mc_dropout_confidence(reranker, [text], [turn.best.text], passes=6, seed=2)[0]
    assert turn.confidence == pytest.approx(alone, rel=1e-2, abs=1e-3)
    reranked = ResponseSelector(index, reranker, k=5).select(context).ranked
    assert sorted(s.text for s in reranked) == sorted(s.text for s in turn.ranked)


def test_bm25_fused_into_the_first_stage_brings_the_candidate_sharing_words_up(parts):
    index, reranker = parts
    dense = ResponseSelector(index, reranker, k=3, rerank=False)
    hybrid = ResponseSelector(index, reranker, k=3, rerank=False, lexical_weight=100.0)
    hybrid.prepare(progress=False)
    # the user speaks of one topic's answer words under another topic's cue word
    context = [Turn(role="user", text="날씨 이야기 말고, 병원 예약 하셨어요?")]
    assert hybrid.select(context).best.text == "병원 예약 하셨어요"
    assert [s.text for s in hybrid.retrieve(context)] == [
        s.text for s in hybrid.select(context).ranked
    ]
    unrelated = [Turn(role="user", text="음")]  # no shared word: BM25 adds nothing
    assert [s.text for s in hybrid.retrieve(unrelated)] == [
        s.text for s in dense.retrieve(unrelated)
    ]


def test_bm25_brings_in_a_candidate_beyond_the_retrievers_depth(parts):
    index, reranker = parts
    context = [Turn(role="user", text="날씨 이야기 1 병원 예약")]
    dense = ResponseSelector(index, reranker, k=1, rerank=False, depth=1)
    assert dense.retrieve(context)[0].text != "병원 예약 하셨어요"  # beyond the depth of 1
    hybrid = ResponseSelector(index, reranker, k=1, rerank=False, lexical_weight=5.0, depth=1)
    best = hybrid.retrieve(context)[0]
    assert best.text == "병원 예약 하셨어요"
    assert index.texts[best.candidate_id] == best.text
    # the retriever's own score of it, as the index's search gives it
    whole = {t: s for _, t, s in index.search([context_text(context)], k=len(index))[0]}
    encoded = index.retriever.encode_contexts([context_text(context)])
    own = index.score_ids(encoded, [best.candidate_id])
    assert own[0] == pytest.approx(whole[best.text], rel=1e-4, abs=1e-5)


def test_a_partner_retriever_adds_its_scores_and_must_index_the_same_candidates(parts, tmp_path):
    """A second retriever (another backbone's, in a bot) sums its standardised scores with
    the first's: the same retriever twice ranks as it does alone; an index of other
    candidates is refused."""
    from rolecall.errors import ConfigError

    index, _ = parts
    context = [Turn(role="user", text="날씨 이야기 1")]
    alone = ResponseSelector(index, k=4, rerank=False)
    twice = ResponseSelector(index, k=4, rerank=False, partner=index)
    assert [s.text for s in twice.retrieve(context)] == [s.text for s in alone.retrieve(context)]
    assert [s.text for s in twice.select(context).ranked] == [
        s.text for s in alone.select(context).ranked
    ]
    fewer = build_candidate_index(
        index.retriever, [a for _, a in TOPICS][:-1], tmp_path / "fewer", progress=False
    )
    with pytest.raises(ConfigError, match="holds other candidates"):
        ResponseSelector(index, partner=fewer)
