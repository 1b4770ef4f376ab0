"""Training losses, one ``nn.Module`` per file; a model module builds one and only calls it."""

from rolecall.train.losses.in_batch_negatives import (
    InBatchNegativesLoss,
    duplicate_mask,
)
from rolecall.train.losses.unlikelihood import MleUnlikelihoodLoss

__all__ = ["InBatchNegativesLoss", "MleUnlikelihoodLoss", "duplicate_mask"]
