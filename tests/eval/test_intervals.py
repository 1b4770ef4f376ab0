import pytest

from rolecall.eval.intervals import newcombe_interval, wilson_interval


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


@pytest.mark.parametrize(
    ("counts", "published"),
    [
        ((56, 70, 48, 80), (0.0524, 0.3339)),
        ((9, 10, 3, 10), (0.1705, 0.8090)),
        ((6, 7, 2, 7), (0.0582, 0.8062)),
        ((5, 56, 0, 29), (-0.0381, 0.1926)),
        ((0, 10, 0, 20), (-0.1611, 0.2775)),
        ((0, 10, 0, 10), (-0.2775, 0.2775)),
    ],
)
def test_newcombe_interval_matches_newcombe_1998_method_10(counts, published):
    """Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10 (score,
    no continuity correction), examples (a)-(f). By hand for (a): p1 = 0.8, p2 = 0.6,
    Wilson 56/70 = [0.6918, 0.8770], 48/80 = [0.4905, 0.7004];
    low = 0.2 - sqrt(0.1082^2 + 0.1004^2) = 0.0524,
    high = 0.2 + sqrt(0.0770^2 + 0.1095^2) = 0.3339."""
    assert newcombe_interval(*counts) == pytest.approx(published, abs=1e-4)


def test_newcombe_interval_is_antisymmetric_and_none_without_counts():
    low, high = newcombe_interval(3, 12, 7, 15)
    assert newcombe_interval(7, 15, 3, 12) == pytest.approx((-high, -low))
    assert newcombe_interval(1, 2, 0, 0) is None
    assert newcombe_interval(20, 20, 0, 20)[1] <= 1.0


def test_paired_bootstrap_difference_and_interval():
    """Two systems on the same 200 items: the second right on 30 more. The interval of the
    paired difference holds the point and excludes 0; equal systems give 0 with an interval
    of 0; no items, nothing."""
    import numpy as np

    from rolecall.eval.intervals import paired_bootstrap

    first = np.array([1] * 100 + [0] * 100)
    second = np.array([1] * 130 + [0] * 70)
    found = paired_bootstrap(lambda i: first[i].mean(), lambda i: second[i].mean(), 200)
    assert found["difference"] == 0.15
    low, high = found["ci95"]
    assert 0 < low < 0.15 < high < 0.25
    same = paired_bootstrap(lambda i: first[i].mean(), lambda i: first[i].mean(), 200)
    assert same == {"difference": 0.0, "ci95": [0.0, 0.0]}
    assert paired_bootstrap(len, len, 0) == {"difference": None, "ci95": None}
