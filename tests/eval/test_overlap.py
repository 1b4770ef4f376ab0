"""chrF against values computed by hand."""

from __future__ import annotations

import pytest

from rolecall.eval.overlap import chrf, chrf_statistics


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
