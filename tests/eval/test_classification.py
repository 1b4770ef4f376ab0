import numpy as np
import pytest

from rolecall.eval.classification import accuracy, precision_recall_f1

# index:  0  1  2  3  4  5  6  7  8  9
Y_TRUE = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
Y_PRED = [1, 1, 1, 0, 1, 1, 0, 0, 0, 0]
# class 1: TP = 3 (0,1,2), FN = 1 (3), FP = 2 (4,5), TN = 4 (6..9)


def test_accuracy_hand_computed():
    assert accuracy(Y_TRUE, Y_PRED) == pytest.approx(7 / 10)  # TP 3 + TN 4 of 10


def test_precision_recall_f1_hand_computed():
    p, r, f1 = precision_recall_f1(Y_TRUE, Y_PRED)
    assert p == pytest.approx(3 / 5)  # TP / (TP + FP) = 3 / 5
    assert r == pytest.approx(3 / 4)  # TP / (TP + FN) = 3 / 4
    assert f1 == pytest.approx(2 / 3)  # 2*0.6*0.75 / 1.35 = 0.9 / 1.35 = 2/3
    # class 0 as the positive: TP = 4 (6..9), FP = 1 (3), FN = 2 (4,5)
    p, r, f1 = precision_recall_f1(Y_TRUE, Y_PRED, positive=0)
    assert (p, r) == (pytest.approx(4 / 5), pytest.approx(4 / 6))
    assert f1 == pytest.approx(8 / 11)  # 2TP / (2TP + FP + FN) = 8 / (8 + 1 + 2)


def test_zero_over_zero_is_zero():
    # no positive predictions: precision 0/0 -> 0.0; recall 0/2; F1 0/(0+0+2)
    assert precision_recall_f1([1, 1, 0], [0, 0, 0]) == (0.0, 0.0, 0.0)
    # no positive labels and no positive predictions: everything 0/0 -> 0.0
    assert precision_recall_f1([0, 0], [0, 0]) == (0.0, 0.0, 0.0)


def test_string_and_bool_labels():
    y_true = ["oob", "ok", "oob", "ok"]
    y_pred = ["oob", "oob", "ok", "ok"]
    # TP = 1 (0), FP = 1 (1), FN = 1 (2)
    assert precision_recall_f1(y_true, y_pred, positive="oob") == (0.5, 0.5, 0.5)
    assert precision_recall_f1([True, False], [True, True]) == (0.5, 1.0, pytest.approx(2 / 3))
    with pytest.raises(ValueError, match="cannot match labels"):
        precision_recall_f1(y_true, y_pred)  # positive=1 never equals a string


def test_more_than_two_classes_is_positive_against_the_rest():
    # "oob" vs the rest: TP 1 (0), FP 0, FN 1 (3); "ok" and "other" confused but negative
    y_true, y_pred = ["oob", "ok", "other", "oob"], ["oob", "other", "ok", "ok"]
    assert precision_recall_f1(y_true, y_pred, positive="oob") == (1.0, 0.5, pytest.approx(2 / 3))
    assert accuracy(y_true, y_pred) == 0.25


@pytest.mark.parametrize("y_true, y_pred", [([], []), ([1, 0], [1]), ([[1]], [[1]])])
def test_bad_inputs(y_true, y_pred):
    with pytest.raises(ValueError):
        accuracy(y_true, y_pred)
    with pytest.raises(ValueError):
        precision_recall_f1(y_true, y_pred)


def test_matches_counting_on_random_labels():
    rng = np.random.default_rng(0)
    for _ in range(5):
        y_true, y_pred = rng.integers(0, 3, 50), rng.integers(0, 3, 50)  # 1 vs 0 and 2
        tp = int(((y_true == 1) & (y_pred == 1)).sum())
        fp, fn = int((y_pred == 1).sum()) - tp, int((y_true == 1).sum()) - tp
        expected = (tp / (tp + fp), tp / (tp + fn), 2 * tp / (2 * tp + fp + fn))
        assert precision_recall_f1(y_true, y_pred) == pytest.approx(expected)
        assert accuracy(y_true, y_pred) == pytest.approx((y_true == y_pred).mean())
