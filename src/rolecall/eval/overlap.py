"""chrF and BLEU of outputs against references (one reference per output), by sacrebleu.

Used for the detox model (K/DA reports chrF and BLEU of rewrites against the neutral
references). Both are corpus-level: statistics are summed over all sentence pairs, then
scored once.

chrF (Popovic, WMT 2015) is sacrebleu's ``CHRF`` with its defaults: character n-grams of
orders 1..6 with spaces removed, beta = 2 (recall weighs more), no word n-grams (chrF, not
chrF++). Per order, precision = matches / output n-grams and recall = matches / reference
n-grams; precision and recall are each averaged over the orders that occur in both output
and reference, and the score is the F-beta of the two averages, times 100.

subtle: until issue 15 the hand-written chrF here averaged the per-order F-beta scores
instead (what sacrebleu does only with ``eps_smoothing=True``). The two agree whenever
precision equals recall in every order, and whenever only one order is used, which is all
the old hand-checked tests pinned; they differ otherwise (for "abcd" against "abcdef",
orders 1..2: P 1, R 4/6 and P 1, R 3/5 give F of the averages 68.35 now, the average F
68.32 before). On bench/detox_quality.py's held-out K/DA pairs the baselines in
docs/benchmarks.md moved by a hundredth.

BLEU (Papineni et al., 2002) is sacrebleu's ``BLEU`` with its defaults (4-gram, ``exp``
smoothing, brevity penalty) and the ``intl`` tokenizer, which splits every Unicode
punctuation character off, as the hand-written tokenizer here did, and also every symbol
(``~``, ``♥``, ``+``; the old one kept them on the word); punctuation between two digits
("3.5", "1,000") stays in the number. sacrebleu's default ``13a`` tokenizer splits only
ASCII punctuation, which would leave "…" or "“" glued to Korean words. The tokenizer
change moved the BLEU baselines of docs/benchmarks.md by a few hundredths.
"""

from __future__ import annotations

from collections.abc import Sequence

from sacrebleu.metrics import BLEU, CHRF

ORDER, BETA = 6, 2.0
BLEU_ORDER = 4
BLEU_TOKENIZER = "intl"


def _check(outputs: Sequence[str], references: Sequence[str]) -> None:
    if len(outputs) != len(references):
        raise ValueError(
            f"{len(outputs)} outputs but {len(references)} references: "
            "give one reference per output"
        )


def chrf(
    outputs: Sequence[str], references: Sequence[str], order: int = ORDER, beta: float = BETA
) -> float:
    """Corpus chrF in [0, 100] (0 for an empty corpus)."""
    _check(outputs, references)
    if not outputs:  # sacrebleu raises IndexError on an empty corpus
        return 0.0
    metric = CHRF(char_order=order, word_order=0, beta=beta)
    return float(metric.corpus_score(list(outputs), [list(references)]).score)


def bleu(outputs: Sequence[str], references: Sequence[str], order: int = BLEU_ORDER) -> float:
    """Corpus BLEU in [0, 100] as sacrebleu computes it by default (clipped n-gram matches of
    orders 1..order summed over the corpus, geometric mean of the precisions, brevity
    penalty exp(1 - r/c) when the outputs are shorter; an order without any match gets the
    ``exp`` smoothing: precision 1 / (2^k x its n-gram count), k counting such orders), with
    the ``intl`` tokenizer. 0 for an empty corpus, empty outputs, or a corpus too short to
    have an n-gram of every order."""
    _check(outputs, references)
    if not outputs:  # sacrebleu raises IndexError on an empty corpus
        return 0.0
    metric = BLEU(max_ngram_order=order, tokenize=BLEU_TOKENIZER)
    return float(metric.corpus_score(list(outputs), [list(references)]).score)


def against_copying(
    inputs: Sequence[str], outputs: Sequence[str], references: Sequence[str]
) -> dict[str, float]:
    """chrF and BLEU of ``outputs`` and of the ``inputs`` copied unchanged (the baseline a
    rewriter must beat), against ``references``, rounded to 2 places."""
    return {
        "chrf": round(chrf(outputs, references), 2),
        "bleu": round(bleu(outputs, references), 2),
        "chrf_copy_input": round(chrf(inputs, references), 2),
        "bleu_copy_input": round(bleu(inputs, references), 2),
    }
