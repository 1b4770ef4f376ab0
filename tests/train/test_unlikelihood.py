"""The MLE + unlikelihood loss against values computed by hand."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from rolecall.train.losses import MleUnlikelihoodLoss  # noqa: E402
from rolecall.train.losses.unlikelihood import IGNORE, next_token_targets  # noqa: E402


def softmax(row):
    total = sum(math.exp(x) for x in row)
    return [math.exp(x) / total for x in row]


# two rows of three tokens over a vocabulary of three: [prompt, response, response]; the
# first position predicts the second token, the second the third
LOGITS = torch.tensor(
    [
        [[1.0, 2.0, 0.0], [0.5, 0.0, 1.5], [9.0, 9.0, 9.0]],
        [[0.0, 1.0, 3.0], [2.0, 0.0, 0.0], [9.0, 9.0, 9.0]],
    ]
)
LABELS = torch.tensor([[IGNORE, 1, 2], [IGNORE, 2, 0]])


def test_mle_plus_alpha_unlikelihood_matches_the_hand_computed_value():
    p = [softmax(LOGITS[0, 0].tolist())[1], softmax(LOGITS[0, 1].tolist())[2]]
    q = [softmax(LOGITS[1, 0].tolist())[2], softmax(LOGITS[1, 1].tolist())[0]]
    mle = -(math.log(p[0]) + math.log(p[1])) / 2
    ul = -(math.log(1 - q[0]) + math.log(1 - q[1])) / 2
    positions, targets, negative = next_token_targets(LABELS, torch.tensor([False, True]))
    assert positions.tolist() == [[True, True, False], [True, True, False]]
    assert targets.tolist() == [1, 2, 2, 0] and negative.tolist() == [False, False, True, True]
    value, parts = MleUnlikelihoodLoss(alpha=0.5)(LOGITS[positions], targets, negative)
    assert value.item() == pytest.approx(mle + 0.5 * ul, rel=1e-6)
    assert parts == {"mle": pytest.approx(mle, rel=1e-6), "ul": pytest.approx(ul, rel=1e-6)}


def test_masked_tokens_count_in_neither_term_and_missing_terms_are_zero():
    labels = LABELS.clone()
    labels[1, 2] = IGNORE  # padding: only the negative row's first response token counts
    q = softmax(LOGITS[1, 0].tolist())[2]
    positions, targets, negative = next_token_targets(labels, torch.tensor([True, True]))
    assert positions.tolist() == [[True, True, False], [True, False, False]]
    value, parts = MleUnlikelihoodLoss(alpha=2.0)(LOGITS[positions], targets, negative)
    # both rows negative: no MLE term at all
    p0 = softmax(LOGITS[0, 0].tolist())[1]
    p1 = softmax(LOGITS[0, 1].tolist())[2]
    ul = -(math.log(1 - p0) + math.log(1 - p1) + math.log(1 - q)) / 3
    assert parts["mle"] == 0 and value.item() == pytest.approx(2.0 * ul, rel=1e-6)
    positions, targets, negative = next_token_targets(labels, torch.tensor([False, False]))
    _, parts = MleUnlikelihoodLoss()(LOGITS[positions], targets, negative)
    assert parts["ul"] == 0


def test_a_certain_negative_token_gives_a_large_finite_loss():
    logits = torch.tensor([[0.0, 60.0, 0.0]])  # p(token 1) rounds to 1 in float32
    value, _ = MleUnlikelihoodLoss()(logits, torch.tensor([1]), torch.tensor([True]))
    assert math.isfinite(value.item()) and value.item() == pytest.approx(-math.log(1e-6))
    with pytest.raises(ValueError, match="alpha"):
        MleUnlikelihoodLoss(alpha=-1)
