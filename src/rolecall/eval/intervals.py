"""Confidence intervals of rates.

``rate_record`` and ``difference_record`` are the JSON forms the reports write (rounded
to 4 places). ``paired_bootstrap``: the difference of a statistic between two systems
measured on the same items, with a percentile interval over resampled items.

``wilson_interval(k, n)``: the Wilson score interval of a proportion k/n (Wilson 1927).
Chosen over the normal ("Wald") interval because red-team rates are small and counts are
few: the Wald interval of 0/20 is [0, 0], which claims certainty, while Wilson's is
[0, 0.16]. It never leaves [0, 1]. ``n = 0`` has no interval (None).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """``(low, high)`` of the proportion ``k / n`` at the confidence ``z`` stands for
    (95% by default); None when ``n`` is 0."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return None
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_interval(
    k1: int, n1: int, k2: int, n2: int, z: float = Z95
) -> tuple[float, float] | None:
    """``(low, high)`` of the difference ``k1/n1 - k2/n2`` of two independent proportions:
    Newcombe's hybrid score interval (Newcombe 1998, "Interval estimation for the
    difference between independent proportions", method 10), built from the two Wilson
    intervals. Chosen for the same reason as Wilson's: the Wald interval of a difference
    collapses to a point when both counts are 0 or all, which red-team runs often are;
    this one stays inside [-1, 1] and is close to its nominal coverage at small n.
    None when either ``n`` is 0."""
    first, second = wilson_interval(k1, n1, z), wilson_interval(k2, n2, z)
    if first is None or second is None:
        return None
    p1, p2 = k1 / n1, k2 / n2
    (l1, u1), (l2, u2) = first, second
    below = math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    above = math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return max(-1.0, p1 - p2 - below), min(1.0, p1 - p2 + above)


def _rounded(interval: tuple[float, float] | None) -> list[float] | None:
    return [round(x, 4) for x in interval] if interval else None


def rate_record(k: int, n: int) -> dict[str, Any]:
    """``{"k", "rate", "ci95"}`` of ``k / n`` (Wilson); rate and interval None for n = 0."""
    return {"k": k, "rate": round(k / n, 4) if n else None, "ci95": _rounded(wilson_interval(k, n))}


def difference_record(k1: int, n1: int, k2: int, n2: int) -> dict[str, Any]:
    """``{"difference", "ci95"}`` of ``k1/n1 - k2/n2`` (Newcombe); None for an empty n."""
    return {
        "difference": round(k1 / n1 - k2 / n2, 4) if n1 and n2 else None,
        "ci95": _rounded(newcombe_interval(k1, n1, k2, n2)),
    }


def paired_bootstrap(
    first: Callable[[Any], float],
    second: Callable[[Any], float],
    n: int,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """``{"difference", "ci95"}`` of ``second - first``, two statistics of the same ``n``
    items (each a function of an index array: the items it is computed on, with repeats):
    the difference on all items and the 2.5th and 97.5th percentiles of the difference over
    ``resamples`` draws of ``n`` items with replacement, the same draw for both (paired).
    A draw where a statistic is undefined (NaN) is skipped; no items: None and None."""
    import numpy as np

    if n == 0:
        return {"difference": None, "ci95": None}
    everything = np.arange(n)
    point = second(everything) - first(everything)
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, n, n) for _ in range(resamples)]
    spread = np.array([second(d) - first(d) for d in draws], dtype=float)
    spread = spread[~np.isnan(spread)]
    low, high = np.percentile(spread, [2.5, 97.5]) if len(spread) else (math.nan, math.nan)
    valid = not (math.isnan(point) or math.isnan(low))
    return {
        "difference": round(float(point), 4) if not math.isnan(point) else None,
        "ci95": [round(float(low), 4), round(float(high), 4)] if valid else None,
    }
