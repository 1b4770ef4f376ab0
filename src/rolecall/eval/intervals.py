"""Confidence intervals of rates.

``wilson_interval(k, n)``: the Wilson score interval of a proportion k/n (Wilson 1927).
Chosen over the normal ("Wald") interval because red-team rates are small and counts are
few: the Wald interval of 0/20 is [0, 0], which claims certainty, while Wilson's is
[0, 0.16]. It never leaves [0, 1]. ``n = 0`` has no interval (None).
"""

from __future__ import annotations

import math

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
