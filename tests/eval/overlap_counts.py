"""What chrF and BLEU count, for checking rolecall.eval.overlap by hand: the n-gram
statistics of sacrebleu's chrF and the tokens its ``intl`` BLEU tokenizer makes."""

from __future__ import annotations

from sacrebleu.metrics.helpers import extract_all_char_ngrams
from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International

from rolecall.eval.overlap import ORDER

_INTL = TokenizerV14International()


def chrf_statistics(output: str, reference: str, order: int = ORDER) -> list[tuple[int, int, int]]:
    """Per order n = 1..order: (output n-grams, reference n-grams, matched n-grams)."""
    hyp = extract_all_char_ngrams(output, order)
    ref = extract_all_char_ngrams(reference, order)
    return [
        (sum(h.values()), sum(r.values()), sum((h & r).values()))
        for h, r in zip(hyp, ref, strict=True)
    ]


def bleu_tokens(text: str) -> list[str]:
    """The tokens BLEU counts: sacrebleu's ``intl`` tokenizer, split on spaces."""
    return _INTL(text).split()
