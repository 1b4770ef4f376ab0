import math

import pytest

from rolecall.errors import ConfigError
from rolecall.eval.validation_set import build_unanswerable_set

EXAMPLES = [(f"context {i}", f"gold {i}") for i in range(10)]


def negative(context, gold):
    return f"retrieved for {context}"


def test_half_the_items_get_a_hard_negative():
    items = build_unanswerable_set(EXAMPLES, negative, share=0.5, seed=3)
    assert [item["context"] for item in items] == [c for c, _ in EXAMPLES]  # input order
    replaced = [item for item in items if item["label"] == 1]
    kept = [item for item in items if item["label"] == 0]
    assert len(replaced) == 5 and len(kept) == 5  # round(0.5 * 10)
    for item in replaced:
        i = item["context"].split()[-1]
        assert item["response"] == f"retrieved for context {i}"
        assert item["replaced_gold"] == f"gold {i}"
    for item in kept:
        assert item["response"] == "gold " + item["context"].split()[-1]
        assert item["replaced_gold"] is None
    assert set(items[0]) == {"context", "response", "label", "replaced_gold"}


def test_seed_determinism():
    picks = [
        [item["label"] for item in build_unanswerable_set(EXAMPLES, negative, seed=s)]
        for s in range(5)
    ]
    assert picks[0] == [
        item["label"] for item in build_unanswerable_set(EXAMPLES, negative, seed=0)
    ]
    assert len({tuple(p) for p in picks}) > 1  # other seeds pick other items


def test_share_bounds_and_rounding():
    calls = []

    def counting(context, gold):
        calls.append(context)
        return "other"

    assert all(item["label"] == 0 for item in build_unanswerable_set(EXAMPLES, counting, 0.0))
    assert calls == []  # hard_negative runs only for the picked items
    assert all(item["label"] == 1 for item in build_unanswerable_set(EXAMPLES, counting, 1.0))
    assert len(calls) == 10
    three = build_unanswerable_set(EXAMPLES[:3], negative, share=0.5)
    assert sum(item["label"] for item in three) == 2  # 0.5 * 3 = 1.5, rounded half up


@pytest.mark.parametrize("share", [-0.1, 1.5, math.nan])
def test_share_out_of_range(share):
    with pytest.raises(ConfigError, match=r"must lie in \[0, 1\]"):
        build_unanswerable_set(EXAMPLES, negative, share=share)


def test_empty_input():
    with pytest.raises(ValueError, match="no examples"):
        build_unanswerable_set([], negative)


def test_hard_negative_must_not_return_the_gold():
    with pytest.raises(ValueError, match="gold response itself"):
        build_unanswerable_set(EXAMPLES, lambda context, gold: gold, share=1.0)
    with pytest.raises(ValueError, match="expected a response string"):
        build_unanswerable_set(EXAMPLES, lambda context, gold: None, share=1.0)


def test_contexts_may_be_turn_lists():
    examples = [(["안녕하세요", "네"], "식사는 하셨어요?"), (["뭐 해요?"], "산책 중이에요.")]
    items = build_unanswerable_set(examples, lambda c, g: "오늘 날씨가 좋네요.", share=0.5)
    assert sorted(item["label"] for item in items) == [0, 1]
    assert items[0]["context"] == ["안녕하세요", "네"]
