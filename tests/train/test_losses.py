"""In-batch negatives: the loss by hand, and duplicates masked out as false negatives."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from rolecall.train.losses import InBatchNegativesLoss, duplicate_mask  # noqa: E402


def test_loss_equals_the_hand_computed_cross_entropy_2x2():
    scores = torch.tensor([[2.0, 0.0], [1.0, 1.0]])
    row0 = -math.log(math.exp(2) / (math.exp(2) + 1))
    row1 = -math.log(0.5)
    assert InBatchNegativesLoss()(scores).item() == pytest.approx((row0 + row1) / 2)
    scaled = InBatchNegativesLoss(scale=2.0)(scores).item()
    assert scaled == pytest.approx((-math.log(math.exp(4) / (math.exp(4) + 1)) - math.log(0.5)) / 2)


def test_duplicate_responses_are_not_negatives_3x3():
    responses = ["네", "아니요", " 네"]
    mask = duplicate_mask(responses)
    assert mask.tolist() == [[False, False, True], [False, False, False], [True, False, False]]
    scores = torch.tensor([[1.0, 0.0, 5.0], [0.0, 1.0, 0.0], [5.0, 0.0, 1.0]])
    # with the duplicate masked, rows 0 and 2 are softmax over (1, 0) only
    two = -math.log(math.e / (math.e + 1))
    three = -math.log(math.e / (math.e + 2))
    masked = InBatchNegativesLoss()(scores, mask).item()
    assert masked == pytest.approx((two + three + two) / 3)
    assert InBatchNegativesLoss()(scores).item() > masked + 1  # unmasked: punished for it


def test_the_diagonal_is_never_masked_and_shapes_are_checked():
    scores = torch.zeros(2, 2)
    everything = torch.ones(2, 2, dtype=torch.bool)
    assert InBatchNegativesLoss()(scores, everything).item() == pytest.approx(0.0)
    with pytest.raises(ValueError, match="square"):
        InBatchNegativesLoss()(torch.zeros(2, 3))
