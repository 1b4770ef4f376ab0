"""The order in which the label queue serves items (issue #35): the items the judges
disagree on first, with a share of random items kept for unbiased error estimates.

Per item, how split a panel's verdicts are (several judges), or how near one judge's
probability of the positive label is to 0.5 (a single judge); and the serving order from
such scores, every ``1 / random_share``-th position a uniformly random item, each tagged
ranked or random so that error rates can be estimated from the random share alone.

``bench/active_labeling.py`` measures how many labels this order saves over random order
(some on care-call turns, none beyond chance on BEEP!: short of the issue's third,
docs/benchmarks.md; a bootstrap committee of the judge and spreading near-duplicates out
of a batch measured no better); the web app's label queue serves it (``web/queue.py``).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence

RANKED, RANDOM = "ranked", "random"
RANDOM_SHARE = 0.2  # the default share of random items


def vote_entropy(votes: Sequence[Sequence[str]]) -> list[float]:
    """Per item, the entropy in nats (natural log) of the labels its judges gave: 0 when
    they agree, ln 2 when two labels split evenly, ln 3 for three. ``votes[i]``
    holds item ``i``'s labels, one per judge of the panel."""
    out = []
    for index, labels in enumerate(votes):
        if isinstance(labels, str):
            raise ValueError(f"item {index}: give a sequence of labels, not the string {labels!r}")
        if not labels:
            raise ValueError(f"item {index} has no votes: every item needs one label or more")
        total = len(labels)
        entropy = -sum(n / total * math.log(n / total) for n in Counter(labels).values())
        out.append(abs(entropy))  # subtle: one label gives -0.0, shown as 0.0
    return out


def uncertainty(probabilities: Sequence[float]) -> list[float]:
    """Per item, ``1 - 2 * |p - 0.5|`` of one judge's probability ``p`` of the positive
    label: 1 at p = 0.5, 0 at p = 0 or 1."""
    out = []
    for index, p in enumerate(probabilities):
        if not 0.0 <= p <= 1.0:  # NaN fails here too
            raise ValueError(f"item {index}: probability {p} is not in [0, 1]")
        out.append(1.0 - 2.0 * abs(p - 0.5))
    return out


def ranked_queue(
    scores: Sequence[float],
    random_share: float = RANDOM_SHARE,
    seed: int = 0,
    tiebreak: Sequence[float] | None = None,
) -> list[tuple[int, str]]:
    """Every item index once, in serving order, tagged ``"ranked"`` or ``"random"``.

    Of the first ``n`` positions, ``floor(n * random_share)`` hold a random item (drawn
    uniformly from the items not yet served, with ``seed``), so every prefix of the queue
    keeps the share; the other positions take the highest ``scores`` not yet served, ties
    by the higher ``tiebreak`` (when given), then by the lower index. The same inputs and
    seed give the same queue.
    """
    if not 0.0 <= random_share <= 1.0:
        raise ValueError(f"random_share must be in [0, 1], not {random_share}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, not {seed!r}")
    _check_finite(scores, "scores")
    if tiebreak is not None:
        if len(tiebreak) != len(scores):
            raise ValueError(f"tiebreak has {len(tiebreak)} values for {len(scores)} scores")
        _check_finite(tiebreak, "tiebreak")
    second = tiebreak if tiebreak is not None else [0.0] * len(scores)
    ranked = sorted(range(len(scores)), key=lambda i: (-scores[i], -second[i], i))
    rng = random.Random(seed)
    # the unserved items in any order, and where each stands: removal by swapping with
    # the last keeps a random draw O(1) (the order of `left` is not the ranking)
    left = list(range(len(scores)))
    where = {item: item for item in left}
    queue: list[tuple[int, str]] = []
    next_ranked = 0
    for position in range(len(scores)):
        if _random_slot(position, random_share):
            item, tag = left[rng.randrange(len(left))], RANDOM
        else:
            while ranked[next_ranked] not in where:  # served already, as a random item
                next_ranked += 1
            item, tag = ranked[next_ranked], RANKED
        last = left.pop()
        if last != item:
            left[where[item]] = last
            where[last] = where[item]
        del where[item]
        queue.append((item, tag))
    return queue


def _random_slot(position: int, share: float) -> bool:
    """Whether the position (from 0) is a random one: where ``floor(n * share)`` of the
    first ``n`` positions goes up. (The epsilon keeps 0.29 * 100 from flooring to 28.)"""
    return math.floor((position + 1) * share + 1e-9) > math.floor(position * share + 1e-9)


def _check_finite(values: Sequence[float], name: str) -> None:
    for index, value in enumerate(values):
        if not math.isfinite(value):
            raise ValueError(f"{name}[{index}] is {value}: every value must be a finite number")
