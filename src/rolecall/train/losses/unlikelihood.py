"""MLE on positive responses plus unlikelihood on negative ones, the generator's loss.

The role-specified dialogue paper (NAACL 2022, §4.4) fine-tunes its generator on the
judged examples: in-bounds (positive) responses by maximum likelihood, out-of-bounds
(negative) responses by **unlikelihood** (Welleck et al., ICLR 2020, "Neural Text
Generation with Unlikelihood Training"; Li et al., ACL 2020, "Don't Say That!"), which
pushes down the probability of every token of a response the bot must not say:

    L = MLE(positives) + alpha * UL(negatives)
    MLE = -sum_t log p(y_t | x, y_<t)            over positive response tokens
    UL  = -sum_t log(1 - p(y-_t | x, y-_<t))     over negative response tokens

Each sum is averaged over its own tokens (so ``alpha`` weighs a mean negative token against
a mean positive one, whatever the mix of the batch); a batch without positives (negatives)
has MLE (UL) = 0. Prompt and padding tokens are masked out of both terms by label -100, the
transformers convention; labels are the input ids, the shift to next-token prediction
happens in ``next_token_targets``.

Subtle: ``log(1 - p)`` is computed as ``log(-expm1(log p))``, exact where ``p`` is tiny
(the usual case: most negative tokens are already unlikely) and finite where ``p`` -> 1,
where ``1 - exp(log p)`` would round to 0 and give -inf (clamped to 1 - p >= 1e-6).
"""

from __future__ import annotations

import torch
from torch import nn

IGNORE = -100


def next_token_targets(labels, negative):
    """Where the loss looks, from ``[B, T]`` labels (-100 = prompt or padding) and ``[B]``
    negative flags: ``(positions [B, T] bool, targets [N], negative [N] bool)``.

    ``positions[b, t]`` is True when the model's output at ``t`` predicts a counted label
    at ``t + 1``; ``targets`` and ``negative`` list those tokens in row-major order, so
    ``logits[positions]`` (or the LM head over ``hidden[positions]``, far smaller than the
    whole ``[B, T, V]`` with a 262k vocabulary) lines up with them.
    """
    following = labels[:, 1:]
    counted = following != IGNORE
    positions = torch.zeros_like(labels, dtype=torch.bool)
    positions[:, :-1] = counted
    rows = negative.to(labels.device).bool().unsqueeze(1).expand_as(following)
    return positions, following[counted], rows[counted]


class MleUnlikelihoodLoss(nn.Module):
    """``forward(logits [N, V], targets [N], negative [N])`` -> (loss, {"mle", "ul"}).

    One row per counted response token (``next_token_targets``); ``negative`` is True for
    a token of a response that must be unlearned.
    """

    def __init__(self, alpha: float = 1.0, min_complement: float = 1e-6):
        super().__init__()
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        self.alpha, self.min_complement = alpha, min_complement

    def forward(self, logits, targets, negative):
        log_p = (
            torch.log_softmax(logits.float(), dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        )
        negative = negative.bool()
        zero = log_p.new_zeros(())
        mle = -log_p[~negative].mean() if (~negative).any() else zero
        if negative.any() and self.alpha > 0:  # alpha 0 is plain MLE: no UL work at all
            complement = -torch.expm1(log_p[negative].clamp(max=0.0))
            ul = -torch.log(complement.clamp(min=self.min_complement)).mean()
        else:
            ul = zero
        return mle + self.alpha * ul, {"mle": float(mle.detach()), "ul": float(ul.detach())}
