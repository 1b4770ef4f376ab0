"""The validation set for the unanswerable-context threshold (NAACL 2022, Appendix C).

The threshold of the unanswerable-context detector is chosen where F1 is highest on a set
of (context, response) pairs of which some responses do *not* fit. Random responses would
be far too easy to tell apart; the paper instead replaces the gold response of part of the
contexts with a hard negative, the best-scoring retrieved response that is not the gold,
and labels those contexts unanswerable.

``build_unanswerable_set`` does that for any model: the caller passes ``hard_negative``
(in the real system the retriever's best non-gold candidate; in tests any function).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from rolecall.errors import ConfigError

Context = TypeVar("Context")


def build_unanswerable_set(
    examples: Sequence[tuple[Context, str]],
    hard_negative: Callable[[Context, str], str],
    share: float = 0.5,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One item per example, in input order: ``{"context", "response", "label",
    "replaced_gold"}``.

    ``round(share * len(examples))`` items (half up), picked with
    ``numpy.random.default_rng(seed)``, get their gold replaced by
    ``hard_negative(context, gold)``: label 1 (unanswerable), ``replaced_gold`` = the gold.
    The rest keep the gold: label 0, ``replaced_gold`` None. ``hard_negative`` is called
    only for the picked items, and must not return the gold itself (that would label a
    fitting response unanswerable).
    """
    if not 0.0 <= share <= 1.0:  # also False for NaN
        raise ConfigError(
            f"the share of replaced responses must lie in [0, 1], got {share}",
            fix="use e.g. 0.5: half of the contexts get a hard negative",
        )
    if len(examples) == 0:
        raise ValueError("no examples to build a validation set from")
    n_replaced = int(share * len(examples) + 0.5)
    rng = np.random.default_rng(seed)
    picked = set(rng.choice(len(examples), size=n_replaced, replace=False).tolist())
    items = []
    for i, (context, gold) in enumerate(examples):
        if i not in picked:
            items.append({"context": context, "response": gold, "label": 0, "replaced_gold": None})
            continue
        negative = hard_negative(context, gold)
        if not isinstance(negative, str):
            raise ValueError(
                f"hard_negative returned {type(negative).__name__} for "
                f"example {i}, expected a response string"
            )
        if negative == gold:
            raise ValueError(
                f"hard_negative returned the gold response itself for example "
                f"{i}: it must return the best candidate that is not the gold"
            )
        items.append({"context": context, "response": negative, "label": 1, "replaced_gold": gold})
    return items
