"""chrF and BLEU against values computed by hand."""

from __future__ import annotations

import math

import pytest

from rolecall.eval.overlap import bleu, chrf
from tests.eval.overlap_counts import bleu_tokens, chrf_statistics


def test_identical_and_disjoint_texts():
    assert chrf(["오늘 날씨 좋다"], ["오늘 날씨 좋다"]) == pytest.approx(100.0)
    assert chrf(["가나다"], ["라마바"]) == 0.0
    assert chrf([], []) == 0.0


def test_a_partial_match_by_hand():
    # "abcd" vs "abce", spaces removed; order 2 only and order 1 only, beta 2
    assert chrf_statistics("ab cd", "abce", order=2) == [(4, 4, 3), (3, 3, 2)]
    p1 = r1 = 3 / 4
    p2 = r2 = 2 / 3
    f = lambda p, r: 5 * p * r / (4 * p + r)  # noqa: E731
    assert chrf(["ab cd"], ["abce"], order=2) == pytest.approx(100 * (f(p1, r1) + f(p2, r2)) / 2)
    # recall weighs more: a short output matching part of the reference
    assert chrf_statistics("ab", "abcd", order=1) == [(2, 4, 2)]
    assert chrf(["ab"], ["abcd"], order=1) == pytest.approx(100 * f(1.0, 0.5))


def test_statistics_are_summed_over_the_corpus_before_scoring():
    corpus = chrf(["ab", "cd"], ["ab", "ce"], order=1)
    # order 1: output 4, reference 4, matched 3 -> p = r = 0.75
    assert corpus == pytest.approx(75.0)
    with pytest.raises(ValueError, match="references"):
        chrf(["a"], [])


def test_bleu_by_hand():
    # matches per order: 5/6, 3/5, 2/4, 1/3; equal lengths -> no brevity penalty
    expected = 100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert bleu(["the cat sat on the mat"], ["the cat sat on a mat"]) == pytest.approx(expected)
    assert bleu(["오늘 날씨 정말 좋다"], ["오늘 날씨 정말 좋다"]) == pytest.approx(100.0)
    assert bleu([], []) == 0.0 and bleu([""], ["가 나"]) == 0.0


def test_bleu_smooths_an_order_without_matches_and_penalises_brevity():
    # 4-grams: 0 of 1 -> 1 / (2 x 1)
    assert bleu(["a b c d"], ["a b c e"]) == pytest.approx(
        100 * (3 / 4 * 2 / 3 * 1 / 2 * 1 / 2) ** 0.25
    )
    assert bleu(["a b c d"], ["a b c d e f"]) == pytest.approx(100 * math.exp(1 - 6 / 4))
    # too short for 4-grams anywhere in the corpus
    assert bleu(["a b"], ["a b"]) == 0.0
    with pytest.raises(ValueError, match="references"):
        bleu(["a"], [])


def test_bleu_splits_punctuation_off():
    assert bleu_tokens("안녕, 친구!  잘 지내?") == ["안녕", ",", "친구", "!", "잘", "지내", "?"]


def test_chrf_is_the_f_score_of_averaged_precision_and_recall():
    # sacrebleu's default chrF (issue 15; the hand-written one averaged per-order F):
    # "abcd" vs "abcdef", orders 1..2: P 4/4, R 4/6 and P 3/3, R 3/5
    assert chrf_statistics("abcd", "abcdef", order=2) == [(4, 6, 4), (3, 5, 3)]
    f = lambda p, r: 5 * p * r / (4 * p + r)  # noqa: E731
    now = 100 * f(1.0, (4 / 6 + 3 / 5) / 2)
    before = 100 * (f(1.0, 4 / 6) + f(1.0, 3 / 5)) / 2
    assert chrf(["abcd"], ["abcdef"], order=2) == pytest.approx(now)
    assert round(now, 2) == 68.35 and round(before, 2) == 68.32


def test_bleu_tokens_split_symbols_but_not_numbers():
    # sacrebleu's intl tokenizer: symbols split off too ("~" is Sm, the old tokenizer kept
    # it on the word); punctuation between two digits stays in the number
    assert bleu_tokens("안녕~ 3.5점, 1,000원! “좋아”…") == [
        "안녕",
        "~",
        "3.5점",
        ",",
        "1,000원",
        "!",
        "“",
        "좋아",
        "”",
        "…",
    ]
    # so "안녕~" now matches "안녕": unigrams 2/3 (안녕 ~ 친구), bigrams 0/2 -> 1 / (2 x 2);
    # output longer than the reference, no penalty. The old tokenizer gave 50.0
    # (unigrams 1/2: "안녕~" matched nothing; bigrams 0/1 -> 1/2).
    assert bleu(["안녕~ 친구"], ["안녕 친구"], order=2) == pytest.approx(
        100 * (2 / 3 * 1 / 4) ** 0.5
    )
