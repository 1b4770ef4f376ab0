import pytest

from rolecall.eval.intervals import wilson_interval


def test_wilson_interval_matches_known_values():
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and high == pytest.approx(0.1611, abs=1e-4)
    low, high = wilson_interval(5, 10)
    assert (low, high) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    low, high = wilson_interval(10, 10)
    assert low == pytest.approx(0.7225, abs=1e-4) and high == pytest.approx(1.0)


def test_wilson_interval_of_nothing_is_none_and_bad_counts_are_refused():
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
