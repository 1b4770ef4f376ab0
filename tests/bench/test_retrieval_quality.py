"""bench/retrieval_quality.py's pure helpers: retrieve + rerank as the bot does it (the
retriever's top reordered), reciprocal-rank fusion, the care-call split by dialogue."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from rolecall.eval.retrieval import hits_at
from tests.bench.loading import load_bench

pytest.importorskip("torch")
pytest.importorskip("bm25s")

bench = load_bench("retrieval_quality")


def test_only_the_retrievers_top_is_reordered():
    first = np.array([[0.9, 0.8, 0.1, 0.5], [0.2, 0.9, 0.8, 0.1]])  # gold in column 0
    second = np.array([[0.0, 5.0, 9.0, 1.0], [9.0, 0.0, 0.0, 0.0]])
    scores = bench.reordered(first, second, top=2)
    # row 0: the top 2 (cols 0, 1) reordered by second: col 1 first, then 0; col 2 never
    # climbs above them however high its second score
    assert list(np.argsort(-scores[0])) == [1, 0, 3, 2]
    # row 1: the gold (col 0) is outside the top 2 and stays below it
    assert list(np.argsort(-scores[1])) == [1, 2, 0, 3]
    assert hits_at(scores) == 0.0
    # reordering every candidate is ranking by the second scores alone
    assert hits_at(bench.reordered(first, second, top=4)) == hits_at(second) == 0.5


def test_reciprocal_rank_never_breaks_a_tie_for_the_gold():
    scores = bench.rrf(np.array([[1.0, 1.0, 0.0], [3.0, 2.0, 1.0]]))
    assert scores[0, 0] < scores[0, 1]  # tied with the gold: the gold ranks below
    assert np.allclose(scores[1], 1 / (60 + np.array([1, 2, 3])))


def test_care_call_pairs_split_by_dialogue_and_skip_the_opening():
    args = argparse.Namespace(
        carecall=bench.CARECALL,
        seed=0,
        carecall_test_share=0.3,
        max_turns=2,
        carecall_train="carecall",
    )
    task = bench.carecall_task(args, chatbot_train=[])
    assert task.train and task.test and all(p.history for p in task.train + task.test)
    train = {p.context for p in task.train}
    assert not train & {p.context for p in task.test}
    assert all(len(p.context.splitlines()) <= 2 for p in task.test)


def test_targets_hold_on_the_mean_over_seeds_not_the_best_seed():
    def run(bm25, fused, retriever, rerank):
        hits = {"bm25": bm25, "retriever + bm25 (fused)": fused, "retriever": retriever}
        hits["retrieve + rerank top 10"] = rerank
        return {"carecall": {"results": {m: {"hits@1/20": v} for m, v in hits.items()}}}

    seeds = [run(0.40, 0.52, 0.30, 0.28), run(0.44, 0.49, 0.25, 0.26)]
    values = [bench.seed_targets(out, "retrieve + rerank top 10") for out in seeds]
    first_stage = [v["bot_first_stage_vs_bm25_carecall"] for v in values]
    assert first_stage == pytest.approx([0.12, 0.05])
    measured = bench.target(first_stage, 0.10)
    assert measured["value"] == pytest.approx(0.085) and not measured["met"]
    assert measured["per_seed"] == [0.12, 0.05]
    assert bench.target([0.5, 0.46], 0.475, relative=False)["met"]
    assert bench.target([0.5, 0.46], 0.475, relative=False)["target"] == ">= 0.475"


def test_a_pair_of_backbones_is_scored_on_its_fused_rows():
    """--pair: the chatbot target reads both retrievers fused, care-call's adds BM25."""
    rows = {"bm25": 0.40, "retriever": 0.45, "retrieve + rerank top 10": 0.4}
    rows |= {"retriever + bm25 (fused)": 0.50, "both retrievers (fused)": 0.58}
    rows |= {"both retrievers + bm25 (fused)": 0.55}
    out = {
        name: {"results": {m: {"hits@1/20": v} for m, v in rows.items()}}
        for name in ("chatbot", "carecall")
    }
    values = bench.seed_targets(out, "retrieve + rerank top 10")
    assert values["pair_retriever_chatbot"] == pytest.approx(0.58)
    assert values["pair_first_stage_vs_bm25_carecall"] == pytest.approx(0.15)
    assert "pair_retriever_chatbot" not in bench.seed_targets(
        {
            "chatbot": {
                "results": {
                    m: {"hits@1/20": 0.4} for m in ("bm25", "retriever", "retrieve + rerank top 10")
                }
            }
        },
        "retrieve + rerank top 10",
    )
