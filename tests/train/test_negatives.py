"""The reranker's hard negatives mined in batches (``negatives.Miner``)."""

from __future__ import annotations

import random

from rolecall.records import Example, Turn
from rolecall.train.negatives import Miner, with_negatives
from rolecall.train.pairs import as_context

POOL = ["가", "나", "다", "라", "마", "바"]


def ranked_search(calls: list[list[str]]):
    """A search whose ranking depends on the context: its last character first."""

    def search(contexts: list[str], n: int) -> list[list[str]]:
        calls.append(list(contexts))
        return [sorted(POOL, key=lambda t: (t != c[-1], t))[:n] for c in contexts]

    return search


def test_prepare_searches_each_distinct_context_once_in_batches():
    calls: list[list[str]] = []
    miner = Miner(ranked_search(calls), batch_size=2)
    miner.prepare(["x다", "x가", "x다", "x마", "x바"], 3)
    assert calls == [["x다", "x가"], ["x마", "x바"]]  # the repeat searched once
    assert miner("x다", "다", 2) == ["가", "나"]  # the gold dropped, k kept
    assert miner("x가", " 나 ", 3) == ["가", "다"]  # only what the depth of 3 found
    assert len(calls) == 2  # answered from what was mined
    assert miner("x라", "가", 2) == ["라", "나"] and calls[-1] == ["x라"]  # not prepared
    assert miner("x다", "다", 4) == ["가", "나", "라"]  # deeper: searched again
    assert calls[-1] == ["x다"]


def test_with_negatives_mines_every_context_in_one_batch():
    calls: list[list[str]] = []
    miner = Miner(ranked_search(calls), batch_size=100)
    examples = [
        Example(history=[Turn(role="user", text=f"질문{t}")], response=t, label="positive")
        for t in POOL
    ]
    items = with_negatives(examples, None, POOL, 4, random.Random(0), miner, hard_count=2)
    assert len(calls) == 1 and len(calls[0]) == len(POOL)
    for (context, gold, negatives), example in zip(items, examples, strict=True):
        assert context == as_context(example.history, None) and gold == example.response
        assert gold not in negatives and len(set(negatives)) == 4
        assert negatives[:2] == miner(context, gold, 2)  # the hard ones first
