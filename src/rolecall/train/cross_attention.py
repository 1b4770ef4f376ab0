"""The reranker's cross-attention head: context and candidate meet in the head, not the
backbone.

A cross-encoder proper reads ``[CLS] context [SEP] candidate [SEP]`` through the backbone,
one full pass per candidate: with the embedded Gemma on two CPU cores that is ~40 ms per
candidate, far over a 150 ms turn for ten of them. With a *frozen* backbone those passes
teach nothing anyway (only the head trains), so this head takes the backbone's states of
the context and of the candidate computed **separately**: the context's once per turn
(shared with the retriever, ``serve/selection.py``), each candidate's once for good
(cached with the index, ``features.py``). The interaction is learned here, token by token:

1. each side through its own ``TokenProjection`` (LayerNorm, 2-layer MLP into ``dim``);
2. every candidate token attends over the context tokens (multi-head attention);
3. the candidate's mean token ``r``, the mean of what it attended to ``a``, their
   token-wise agreement ``mean(r_t * a_t)`` and ``mean(context) * r`` are joined (ESIM-style
   matching features) and an MLP with dropout (what MC dropout samples) gives one logit,
   added to the scaled dot product of the two mean vectors (a bi-encoder's score: without
   it, on chatbot_data, the head learned far more slowly and ended worse after the same
   steps).

Shapes: contexts ``[B, Tc, H]`` with masks ``[B, Tc]``; candidates ``[B * G, Tr, H]``, the
``G`` candidates of each context in a row (``G = 1`` for plain pairs).
"""

from __future__ import annotations

import torch
from torch import nn

from rolecall.train.backbones.features import mean_pool
from rolecall.train.retriever import TokenProjection


class CrossAttentionHead(nn.Module):
    """One logit per (context, candidate): higher = the candidate fits the context better."""

    def __init__(self, hidden: int, dim: int, heads: int, width: int, dropout: float):
        super().__init__()
        if dim % heads:
            raise ValueError(f"the attention width {dim} must be a multiple of its {heads} heads")
        self.context = TokenProjection(hidden, dim, dropout)
        self.candidate = TokenProjection(hidden, dim, dropout)
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        # no LayerNorm here: the projections already start from normalised states, and
        # one over the joined features kept the logits equal for many steps at the start
        # (a plateau at log G seen on the tiny test backbone)
        self.scale = dim**0.5
        self.score = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(4 * dim, width),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(width, 1),
        )

    def forward(self, context_hidden, context_mask, candidate_hidden, candidate_mask):
        """[B*G, 1] logits (the same shape as the pair head's, so both score alike)."""
        group, rest = divmod(len(candidate_hidden), max(len(context_hidden), 1))
        if rest or not group:
            raise ValueError(
                f"{len(candidate_hidden)} candidates do not split evenly over "
                f"{len(context_hidden)} contexts"
            )
        context = self.context(context_hidden).repeat_interleave(group, dim=0)
        context_mask = context_mask.repeat_interleave(group, dim=0)
        candidate = self.candidate(candidate_hidden)
        attended, _ = self.attention(
            candidate, context, context, key_padding_mask=~context_mask, need_weights=False
        )
        own = mean_pool(candidate, candidate_mask)
        matched = mean_pool(attended, candidate_mask)
        agreement = mean_pool(candidate * attended, candidate_mask)
        overall = mean_pool(context, context_mask) * own
        similarity = overall.sum(-1, keepdim=True) / self.scale
        return similarity + self.score(torch.cat([own, matched, agreement, overall], dim=-1))
