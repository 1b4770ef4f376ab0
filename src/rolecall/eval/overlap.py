"""chrF and BLEU of outputs against references (one reference per output).

Used for the detox model (K/DA reports chrF and BLEU of rewrites against the neutral
references).

chrF, the character n-gram F-score (Popovic, WMT 2015),
Corpus-level, as sacrebleu computes it by default: spaces are removed, character n-grams of
orders 1..6 are counted per sentence pair and summed over the corpus; per order, precision
= matches / output n-grams and recall = matches / reference n-grams; the F-beta score
(beta = 2: recall weighs more) of each order is averaged over the orders that occur in both
output and reference, times 100.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from collections.abc import Sequence

ORDER, BETA = 6, 2.0
BLEU_ORDER = 4


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


def bleu_tokens(text: str) -> list[str]:
    """Whitespace tokens with every punctuation character split off (as sacrebleu's 13a
    tokenizer does for ASCII; here for any Unicode punctuation)."""
    spaced = "".join(f" {c} " if unicodedata.category(c).startswith("P") else c
                     for c in text)
    return spaced.split()


def _word_ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def bleu(outputs: Sequence[str], references: Sequence[str], order: int = BLEU_ORDER) -> float:
    """Corpus BLEU in [0, 100] (Papineni et al., 2002) as sacrebleu computes it by default:
    clipped n-gram matches of orders 1..order summed over the corpus, geometric mean of the
    precisions, brevity penalty exp(1 - r/c) when the outputs are shorter than the
    references; an order without any match gets sacrebleu's ``exp`` smoothing (its
    precision is 1 / (2^k x its n-gram count), k counting such orders). 0 for an empty
    corpus or empty outputs."""
    if len(outputs) != len(references):
        raise ValueError(f"{len(outputs)} outputs but {len(references)} references")
    matches, totals = [0] * order, [0] * order
    out_length = ref_length = 0
    for output, reference in zip(outputs, references, strict=True):
        hyp, ref = bleu_tokens(output), bleu_tokens(reference)
        out_length, ref_length = out_length + len(hyp), ref_length + len(ref)
        for n in range(1, order + 1):
            hyp_ngrams, ref_ngrams = _word_ngrams(hyp, n), _word_ngrams(ref, n)
            matches[n - 1] += sum((hyp_ngrams & ref_ngrams).values())
            totals[n - 1] += sum(hyp_ngrams.values())
    if out_length == 0 or any(t == 0 for t in totals):
        return 0.0
    log_precision, doubling = 0.0, 1.0
    for matched, total in zip(matches, totals, strict=True):
        if matched == 0:
            doubling *= 2
            log_precision += math.log(1 / (doubling * total))
        else:
            log_precision += math.log(matched / total)
    penalty = 1.0 if out_length >= ref_length else math.exp(1 - ref_length / out_length)
    return 100.0 * penalty * math.exp(log_precision / order)
