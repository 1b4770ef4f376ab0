"""The reranker's negatives: what each training context's gold response is ranked against.

The negatives are drawn from the unique positive responses of the training split, never
the gold; optionally some come from ``hard_negatives(context, gold, k)`` (the retriever's
best candidates that are not the gold), which teaches the fine distinctions random ones
cannot, while the random rest keeps the retriever's near-paraphrases of the gold (false
negatives) from dominating. ``Miner`` mines them in batches: every training context is
searched once, ``batch_size`` at a time, before training asks for any (one search per
context was most of the cost of a hard-negative run).

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

from rolecall.progress import progress_bar
from rolecall.records import Example
from rolecall.train.pairs import as_context

# hard_negatives(context, gold, k): up to k candidates ranked best first; may include the
# gold (it is dropped)
HardNegatives = Callable[[str, str, int], list[str]]
# search(contexts, n): for each context its n best candidate texts, best first
Search = Callable[[list[str], int], list[list[str]]]


class Miner:
    """A ``HardNegatives`` over a batched ``search`` (e.g. a candidate index's): ``prepare``
    searches every distinct context not yet searched, ``batch_size`` at a time, with a
    progress bar; a call for a context that was not prepared searches it alone."""

    def __init__(self, search: Search, batch_size: int = 256, progress: bool = False):
        self.search, self.batch_size, self.progress = search, batch_size, progress
        self.found: dict[str, list[str]] = {}
        self.depth = 0

    def prepare(self, contexts: Sequence[str], k: int) -> None:
        if k > self.depth:  # deeper than what was searched: search everything again
            self.found, self.depth = {}, k
        todo = [c for c in dict.fromkeys(contexts) if c not in self.found]
        if not todo:
            return
        with progress_bar(len(todo), "mining hard negatives", enabled=self.progress) as advance:
            for start in range(0, len(todo), self.batch_size):
                chunk = todo[start : start + self.batch_size]
                for context, texts in zip(chunk, self.search(chunk, self.depth), strict=True):
                    self.found[context] = texts
                advance(len(chunk))

    def __call__(self, context: str, gold: str, k: int) -> list[str]:
        if context not in self.found or k > self.depth:
            self.prepare([context], max(k, self.depth))
        return [t for t in self.found[context] if t.strip() != gold.strip()][:k]


def prepare_mining(
    hard_negatives: HardNegatives | None, contexts: Sequence[str], hard_count: int
) -> None:
    """Let a batched miner search all ``contexts`` at once (for ``hard_count`` + 1 each,
    as ``draw_negatives`` asks); other callables are asked one context at a time."""
    prepare = getattr(hard_negatives, "prepare", None)
    if prepare is not None and hard_count > 0:
        prepare(contexts, hard_count + 1)


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
    prepare_mining(hard_negatives, [as_context(e.history, max_turns) for e in examples], hard_count)
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
