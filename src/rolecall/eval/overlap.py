"""chrF: character n-gram F-score of outputs against references (Popovic, WMT 2015).

Used for the detox model (K/DA reports chrF of rewrites against the neutral references).
Corpus-level, as sacrebleu computes it by default: spaces are removed, character n-grams of
orders 1..6 are counted per sentence pair and summed over the corpus; per order, precision
= matches / output n-grams and recall = matches / reference n-grams; the F-beta score
(beta = 2: recall weighs more) of each order is averaged over the orders that occur in both
output and reference, times 100.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

ORDER, BETA = 6, 2.0


def _ngrams(text: str, n: int) -> Counter:
    text = "".join(text.split())
    return Counter(text[i:i + n] for i in range(len(text) - n + 1))


def chrf_statistics(output: str, reference: str, order: int = ORDER) -> list[tuple[int, int,
                                                                                      int]]:
    """Per order n = 1..order: (output n-grams, reference n-grams, matched n-grams)."""
    stats = []
    for n in range(1, order + 1):
        hyp, ref = _ngrams(output, n), _ngrams(reference, n)
        stats.append((sum(hyp.values()), sum(ref.values()), sum((hyp & ref).values())))
    return stats


def chrf(outputs: Sequence[str], references: Sequence[str], order: int = ORDER,
         beta: float = BETA) -> float:
    """Corpus chrF in [0, 100] (0 for an empty corpus)."""
    if len(outputs) != len(references):
        raise ValueError(f"{len(outputs)} outputs but {len(references)} references")
    totals = [[0, 0, 0] for _ in range(order)]
    for output, reference in zip(outputs, references, strict=True):
        for n, stats in enumerate(chrf_statistics(output, reference, order)):
            for i in range(3):
                totals[n][i] += stats[i]
    factor, score, counted = beta ** 2, 0.0, 0
    for n_hyp, n_ref, n_match in totals:
        if n_hyp == 0 or n_ref == 0:
            continue
        counted += 1
        precision, recall = n_match / n_hyp, n_match / n_ref
        if precision + recall > 0:
            score += (1 + factor) * precision * recall / (factor * precision + recall)
    return 100.0 * score / counted if counted else 0.0
