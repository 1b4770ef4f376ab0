"""The label queue's order (issue #35): vote entropy, one judge's uncertainty, and the
queue that serves the highest scores first with a share of random items."""

from __future__ import annotations

import math

import pytest

from rolecall.web.queue_order import (
    RANDOM,
    RANKED,
    ranked_queue,
    uncertainty,
    vote_entropy,
)


def test_vote_entropy_in_nats_by_hand():
    votes = [
        ["ok", "ok", "ok"],  # agreed: 0
        ["ok", "bad"],  # an even split: ln 2
        ["ok", "ok", "bad"],  # -(2/3 ln 2/3 + 1/3 ln 1/3)
        ["a", "b", "c"],  # ln 3
        ["ok"],
        ("bad", "ok", "bad", "ok"),  # any sequence of labels
    ]
    expected = [
        0.0,
        math.log(2),
        -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3)),
        math.log(3),
        0.0,
        math.log(2),
    ]
    assert vote_entropy(votes) == pytest.approx(expected)
    assert vote_entropy(votes)[0] == 0.0 and math.copysign(1, vote_entropy(votes)[0]) == 1
    assert vote_entropy([["ok", "ok", "bad"]])[0] == pytest.approx(0.6365, abs=1e-4)
    assert vote_entropy([]) == []


def test_vote_entropy_refuses_an_item_without_votes_or_a_bare_string():
    with pytest.raises(ValueError, match="item 1 has no votes"):
        vote_entropy([["ok"], []])
    with pytest.raises(ValueError, match="item 0: give a sequence of labels"):
        vote_entropy(["okbad"])


def test_uncertainty_is_one_at_a_half_and_zero_at_the_ends():
    assert uncertainty([0.5, 0.0, 1.0, 0.25, 0.9]) == pytest.approx([1.0, 0.0, 0.0, 0.5, 0.2])
    assert uncertainty([0.3]) == pytest.approx(uncertainty([0.7]))
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match=r"item 1: probability .* is not in \[0, 1\]"):
            uncertainty([0.5, bad])


def test_without_random_share_the_queue_is_the_scores_ranked_ties_by_index():
    queue = ranked_queue([0.1, 0.9, 0.5, 0.9, 0.0], random_share=0.0, seed=3)
    assert queue == [(1, RANKED), (3, RANKED), (2, RANKED), (0, RANKED), (4, RANKED)]


def test_a_tiebreak_orders_equal_scores_before_the_index_does():
    scores = [0.6, 0.6, 0.6, 0.0]
    queue = ranked_queue(scores, random_share=0.0, seed=0, tiebreak=[0.1, 0.8, 0.1, 1.0])
    assert [i for i, _ in queue] == [1, 0, 2, 3]


def test_every_fifth_position_is_random_and_every_item_is_served_once():
    scores = [float(i % 7) for i in range(100)]
    queue = ranked_queue(scores, random_share=0.2, seed=1)
    assert sorted(i for i, _ in queue) == list(range(100))
    tags = [tag for _, tag in queue]
    assert [p for p, tag in enumerate(tags) if tag == RANDOM] == list(range(4, 100, 5))
    for n in range(1, 101):  # every prefix keeps the share
        assert tags[:n].count(RANDOM) == math.floor(n * 0.2)
    # the ranked positions take the best scores not yet served, in order: the ranking
    # with the items served at random left out
    drawn = {i for i, tag in queue if tag == RANDOM}
    best = sorted(range(100), key=lambda i: (-scores[i], i))
    assert [i for i, tag in queue if tag == RANKED] == [i for i in best if i not in drawn]


def test_the_random_items_come_from_the_seed_and_the_whole_unserved_pool():
    scores = [float(-i) for i in range(200)]  # ranked order is 0, 1, 2, ...
    first = ranked_queue(scores, random_share=0.2, seed=7)
    assert ranked_queue(scores, random_share=0.2, seed=7) == first
    assert ranked_queue(scores, random_share=0.2, seed=8) != first
    random_items = [i for i, tag in first[:100] if tag == RANDOM]
    # drawn from everything left, not from the top of the ranking
    assert max(random_items) > 100


def test_a_share_of_one_is_all_random_and_shares_between_keep_their_count():
    queue = ranked_queue([1.0] * 10, random_share=1.0, seed=0)
    assert {tag for _, tag in queue} == {RANDOM} and sorted(i for i, _ in queue) == list(range(10))
    tags = [tag for _, tag in ranked_queue([0.0] * 100, random_share=0.29, seed=0)]
    assert tags.count(RANDOM) == 29
    assert ranked_queue([], random_share=0.2, seed=0) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"random_share": -0.1}, r"random_share must be in \[0, 1\]"),
        ({"random_share": 1.2}, r"random_share must be in \[0, 1\]"),
        ({"random_share": float("nan")}, r"random_share must be in \[0, 1\]"),
        ({"seed": 1.5}, "seed must be an integer"),
        ({"scores": [0.1, float("nan")]}, r"scores\[1\] is nan"),
        ({"tiebreak": [0.1]}, "tiebreak has 1 values for 2 scores"),
        ({"tiebreak": [0.1, float("inf")]}, r"tiebreak\[1\] is inf"),
    ],
)
def test_bad_inputs_say_what_is_wrong(kwargs, message):
    arguments = {"scores": [0.1, 0.2], "random_share": 0.2, "seed": 0} | kwargs
    with pytest.raises(ValueError, match=message):
        ranked_queue(**arguments)
