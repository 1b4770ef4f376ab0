"""The reranker's negatives: what each training context's gold response is ranked against.

The negatives are drawn from the unique positive responses of the training split, never
the gold; optionally some come from ``hard_negatives(context, gold, k)`` (the retriever's
best candidates that are not the gold), which teaches the fine distinctions random ones
cannot, while the random rest keeps the retriever's near-paraphrases of the gold (false
negatives) from dominating.

With ``joint`` interaction the negatives are drawn once per example, not per epoch: with a
frozen backbone each new pair is a forward pass of the backbone, and a fixed set is
computed once and cached. With ``attention`` a candidate's states are its own, whatever
the context, so the random negatives are drawn afresh at every step (``random_others``;
the hard ones stay): the head sees many more negatives for the same cost (on
chatbot_data, 7 fixed ones left it far below the poly-encoder).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from rolecall.records import Example
from rolecall.train.pairs import as_context

# hard_negatives(context, gold, k): up to k candidates ranked best first; may include the
# gold (it is dropped)
HardNegatives = Callable[[str, str, int], list[str]]


def draw_negatives(
    context: str,
    gold: str,
    pool: Sequence[str],
    k: int,
    rng: random.Random,
    hard_negatives: HardNegatives | None = None,
    hard_count: int = 0,
) -> list[str]:
    """``k`` distinct responses other than ``gold``: first up to ``hard_count`` from
    ``hard_negatives`` (in its order), the rest drawn at random from ``pool``."""
    gold = gold.strip()
    chosen: list[str] = []
    if hard_negatives is not None and hard_count > 0:
        for candidate in hard_negatives(context, gold, hard_count + 1):
            candidate = candidate.strip()
            if candidate and candidate != gold and candidate not in chosen:
                chosen.append(candidate)
            if len(chosen) == min(hard_count, k):
                break
    others = [r for r in pool if r != gold and r not in chosen]
    chosen += rng.sample(others, min(k - len(chosen), len(others)))
    return chosen


def with_negatives(
    examples: Sequence[Example],
    max_turns: int | None,
    pool: Sequence[str],
    k: int,
    rng: random.Random,
    hard_negatives: HardNegatives | None,
    hard_count: int,
) -> list[tuple[str, str, list[str]]]:
    """(context text, gold, ``draw_negatives``) for each example, in order."""
    items = []
    for example in examples:
        context = as_context(example.history, max_turns)
        gold = example.response.strip()
        negatives = draw_negatives(context, gold, pool, k, rng, hard_negatives, hard_count)
        items.append((context, gold, negatives))
    return items


def random_others(
    pool: Sequence[str], taken: set[str], count: int, rng: random.Random
) -> list[str]:
    """``count`` distinct pool texts outside ``taken`` (by rejection: the pool is large)."""
    chosen: list[str] = []
    while len(chosen) < count:
        text = pool[rng.randrange(len(pool))]
        if text not in taken and text not in chosen:
            chosen.append(text)
    return chosen
