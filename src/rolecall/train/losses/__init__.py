"""Training losses, one ``nn.Module`` per file; a model module builds one and only calls it."""

from rolecall.train.losses.in_batch_negatives import (
    InBatchNegativesLoss,
    duplicate_mask,
)

__all__ = ["InBatchNegativesLoss", "duplicate_mask"]
