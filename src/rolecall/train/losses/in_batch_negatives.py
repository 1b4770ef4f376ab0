"""Cross-entropy over in-batch negatives, the retriever's loss (Humeau et al. 2020).

Poly-encoders (Humeau, Shuster, Lachaux and Weston, ICLR 2020, "Poly-encoders:
Architectures and Pre-training Strategies for Fast and Accurate Multi-sentence Scoring")
train bi- and poly-encoders with the other responses of the batch as negatives: a batch of
B (context, response) pairs gives a [B, B] score matrix whose diagonal holds the positives,
and the loss is the cross-entropy of each row against its own column. The NAACL 2022
role-specified dialogue paper trains its retriever the same way. Same idea as
sentence-transformers' ``MultipleNegativesRankingLoss``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F


def duplicate_mask(responses: Sequence[str]):
    """[B, B] bool: True where response j is the same text as response i and j != i.

    Subtle: role-specified bots repeat themselves ("네, 알겠습니다."), so one batch often
    holds the same response twice; the copy in column j != i is then a *false* negative
    (it is as right for context i as the diagonal) and must not be pushed down.
    """
    ids: dict[str, int] = {}
    codes = torch.tensor([ids.setdefault(text.strip(), len(ids)) for text in responses])
    same = codes.unsqueeze(0) == codes.unsqueeze(1)
    return same & ~torch.eye(len(codes), dtype=torch.bool)


class InBatchNegativesLoss(nn.Module):
    """Mean cross-entropy of each context's positive against the batch's other responses.

    Inputs of ``forward``:

    - ``scores``: float [B, B], ``scores[i, j]`` = score of context i with response j; the
      diagonal are the positives, every other column a negative (for at least 2 rows);
    - ``ignore``: optional bool [B, B], True where column j must not count as a negative
      for row i (duplicates: ``duplicate_mask``); those scores become -inf. The diagonal is
      never masked, so every row keeps its positive and the loss stays finite.

    ``scale`` multiplies the scores first (a temperature; 1.0 for raw dot products).
    """

    def __init__(self, scale: float = 1.0):
        super().__init__()
        self.scale = scale

    def forward(self, scores, ignore=None):
        if scores.dim() != 2 or scores.shape[0] != scores.shape[1]:
            raise ValueError(f"scores must be a square [B, B] matrix, got {tuple(scores.shape)}")
        size = scores.shape[0]
        scores = scores * self.scale
        if ignore is not None:
            ignore = ignore.to(scores.device).bool()
            ignore = ignore & ~torch.eye(size, dtype=torch.bool, device=scores.device)
            scores = scores.masked_fill(ignore, float("-inf"))
        targets = torch.arange(size, device=scores.device)
        return F.cross_entropy(scores, targets)
