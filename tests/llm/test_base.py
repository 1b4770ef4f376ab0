"""The helpers every in-process backend shares (``llm/base.py``)."""

from __future__ import annotations

from rolecall.llm.base import common_prefix, first_stop


def test_first_stop_is_the_earliest_stop_string():
    assert first_stop("a\nb###c", ("###", "\n")) == 1
    assert first_stop("abc", ("x", "y")) is None
    assert first_stop("abc", ()) is None
    assert first_stop("abc", ("", "c")) == 2  # an empty stop string never matches


def test_common_prefix_counts_the_prompt_tokens_before_a_merge():
    assert common_prefix([1, 5, 6], [1, 5, 6, 7]) == 3  # the ordinary case
    assert common_prefix([1, 5], [1, 9, 7]) == 1  # a merge at the boundary
    assert common_prefix([], [1, 2]) == 0
