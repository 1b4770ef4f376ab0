"""The response retriever: a bi- or poly-encoder head over a ``Backbone`` (NAACL 2022 §4.2).

The role-specified dialogue system answers by *retrieving* one of the unique positive
system turns for the dialogue so far. Two heads, both after Humeau et al. 2020
("Poly-encoders", ICLR 2020), trained with in-batch negatives (``losses/``):

- **bi-encoder**: context vector = the context's token states through a trainable
  projection, mean-pooled; candidate vector likewise with its own projection; score = their
  dot product. One vector per side, so candidates are indexed once (``serve/
  candidates.py``) and searched with FAISS.
- **poly-encoder**: ``codes`` learned vectors attend over the projected context tokens and
  give ``codes`` context vectors; the candidate vector attends over those, and the score is
  the dot product of the attended context vector with the candidate vector. It sees more of
  the context than one pooled vector, at the price of a per-candidate attention.

With a frozen backbone (the embedded Gemma on a CPU: DESIGN.md) every bit of learning is in
the heads, so each side gets a real projection: LayerNorm, then a two-layer MLP into a
``dim``-dimensional space, applied per token before pooling or attention. Contexts are the
last ``max_turns`` turns (``data.context_text``) cut to ``context_max_tokens`` from the
*left* (the last utterance matters most); candidates to ``candidate_max_tokens`` from the
right. Frozen states come from ``Features``, computed once and cached on disk.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from rolecall.errors import ConfigError
from rolecall.progress import progress_bar
from rolecall.train import distributed
from rolecall.train.backbones.base import Backbone
from rolecall.train.backbones.features import Features, last_index, mean_pool
from rolecall.train.backbones.load import load_backbone
from rolecall.train.checkpoints import Checkpoints
from rolecall.train.data import (
    read_examples,
    selection_pairs,
    unique_candidates,
)
from rolecall.train.loop import TrainConfig, fit, read_model, save_model
from rolecall.train.losses import InBatchNegativesLoss, duplicate_mask
from rolecall.train.settings import RetrieverSettings as RetrieverSettings  # re-exported

KIND = "retriever"
ENCODE_BATCH = 64  # texts per head forward when encoding for search or evaluation
SCORE_ROWS = 256  # contexts per scoring step: bounds the [rows, K, dim] gather


class TokenProjection(nn.Module):
    """Per token: LayerNorm, Linear(hidden, dim), GELU, dropout, Linear(dim, dim).

    Subtle: the frozen Gemma's last states have norms near 100 with a few huge dimensions;
    the LayerNorm first puts any backbone on one scale, or the dot products start huge and
    the in-batch softmax saturates at the first step.
    """

    def __init__(self, hidden: int, dim: int, dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(
            nn.Linear(hidden, dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(dim, dim)
        )

    def forward(self, hidden):
        return self.mlp(self.norm(hidden))


class BiEncoderHead(nn.Module):
    """Contexts [B, dim], candidates [B, dim]; score = dot product."""

    def __init__(self, hidden: int, settings: RetrieverSettings):
        super().__init__()
        self.context = TokenProjection(hidden, settings.dim, settings.dropout)
        self.candidate = TokenProjection(hidden, settings.dim, settings.dropout)

    def contexts(self, hidden, mask):
        return mean_pool(self.context(hidden), mask)

    def candidates(self, hidden, mask):
        return mean_pool(self.candidate(hidden), mask)

    def query(self, contexts):
        """The one vector per context that FAISS searches with (exact for a bi-encoder)."""
        return contexts

    def score(self, contexts, candidates):
        return dot_scores(contexts, candidates)


class PolyEncoderHead(nn.Module):
    """Contexts [B, codes, dim] (codes attending over tokens), candidates [B, dim]."""

    def __init__(self, hidden: int, settings: RetrieverSettings):
        super().__init__()
        self.context = TokenProjection(hidden, settings.dim, settings.dropout)
        self.candidate = TokenProjection(hidden, settings.dim, settings.dropout)
        # N(0, 1) codes: with the 1/sqrt(dim) attention scaling the logits' spread is the
        # states' own; smaller codes start with uniform attention, where every code gives
        # the same mean-pooled vector and the poly-encoder is a bi-encoder with no gradient
        # to tell its codes apart
        self.codes = nn.Parameter(torch.randn(settings.codes, settings.dim))

    def contexts(self, hidden, mask):
        states = self.context(hidden)  # [B, T, dim]
        logits = torch.einsum("md,btd->bmt", self.codes, states) / math.sqrt(states.shape[-1])
        logits = logits.masked_fill(~mask.unsqueeze(1), float("-inf"))
        return torch.softmax(logits, dim=-1) @ states  # [B, codes, dim]

    def candidates(self, hidden, mask):
        return mean_pool(self.candidate(hidden), mask)

    def query(self, contexts):
        """Codes averaged: the first stage of a search (see ``serve/candidates.py``).

        The full score is a softmax-weighted average of the per-code dot products, so it
        lies between their plain mean (this vector's score) and their maximum.
        """
        return contexts.mean(dim=1)

    def score(self, contexts, candidates):
        """[n, codes, dim] contexts against their own [n, K, dim] candidates, or all
        against the same [K, dim] ones -> [n, K]."""
        shared = candidates.dim() == 2
        per_code = torch.einsum("nmd,kd->nkm" if shared else "nmd,nkd->nkm", contexts, candidates)
        return (torch.softmax(per_code, dim=-1) * per_code).sum(-1)


class ResidualHead(nn.Module):
    """A sentence encoder's own cosine, adjusted: the context is its last state (the last
    turn) plus a linear map of its states' mean, the candidate its state plus a linear map
    of it, both sides normalised; score = a learned scale x their cosine. Both maps start
    at zero, so the untrained head ranks exactly as the encoder does zero-shot and training
    moves it only as far as the pairs pull. One vector per side, of the backbone's width
    (``dim`` is set to it), searched exactly like a bi-encoder's."""

    def __init__(self, hidden: int, settings: RetrieverSettings):
        super().__init__()
        self.turn, self.history, self.candidate = (nn.Linear(hidden, hidden) for _ in range(3))
        for layer in (self.turn, self.history, self.candidate):
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)
        self.dropout = nn.Dropout(settings.dropout)
        self.log_scale = nn.Parameter(torch.tensor(math.log(RESIDUAL_SCALE)))

    def contexts(self, hidden, mask):
        last = hidden[torch.arange(len(hidden), device=hidden.device), last_index(mask)]
        moved = self.turn(self.dropout(last)) + self.history(self.dropout(mean_pool(hidden, mask)))
        return nn.functional.normalize(last + moved, dim=-1) * self.log_scale.exp()

    def candidates(self, hidden, mask):
        vector = mean_pool(hidden, mask)
        moved = vector + self.candidate(self.dropout(vector))
        return nn.functional.normalize(moved, dim=-1)

    def query(self, contexts):
        return contexts

    def score(self, contexts, candidates):
        return dot_scores(contexts, candidates)


# where the residual head's softmax temperature starts: cosines lie in [-1, 1], and a
# softmax over in-batch candidates needs logits spread over several units to learn
RESIDUAL_SCALE = 20.0


def make_head(settings: RetrieverSettings, hidden_size: int) -> nn.Module:
    head = {"bi": BiEncoderHead, "poly": PolyEncoderHead, "residual": ResidualHead}
    return head[settings.kind](hidden_size, settings)


def dot_scores(contexts, candidates):
    """[n, dim] contexts against their own [n, K, dim] candidates, or all against the same
    [K, dim] ones -> [n, K]: dot products."""
    if candidates.dim() == 2:
        return contexts @ candidates.T
    return torch.einsum("nd,nkd->nk", contexts, candidates)


def score_all(head: nn.Module, contexts, candidates):
    """Every context against every candidate [N, dim] -> [n, N] (the in-batch matrix), the
    candidates shared, not copied per context: the gradient of a copy takes n x N x dim
    floats (at 512 pairs a batch, 0.9 s of every step)."""
    return head.score(contexts, candidates)


class Retriever:
    """A trained head, its backbone and settings: encodes, scores, saves and loads."""

    def __init__(
        self,
        head: nn.Module,
        backbone: Backbone,
        settings: RetrieverSettings,
        cache_dir: Path | None = None,
        path: Path | None = None,
    ):
        self.head, self.backbone, self.settings, self.path = head, backbone, settings, path
        self.features = Features(backbone, cache_dir)
        self.loss_fn = InBatchNegativesLoss()

    @classmethod
    def new(
        cls,
        backbone: Backbone,
        settings: RetrieverSettings,
        seed: int = 0,
        cache_dir: Path | None = None,
    ) -> Retriever:
        torch.manual_seed(seed)  # the head's initial weights, reproducibly
        return cls(make_head(settings, backbone.hidden_size), backbone, settings, cache_dir)

    def _states(self, texts: Sequence[str], candidates: bool):
        if candidates:
            return self.features.texts(texts, self.settings.candidate_max_tokens, "right")
        return self.features.texts(texts, self.settings.context_max_tokens, "left")

    def loss(self, batch: Sequence[tuple[str, str]]):
        """In-batch negatives loss of (context, response) pairs (what ``fit`` calls)."""
        contexts = self.head.contexts(*self._states([c for c, _ in batch], False))
        responses = [r for _, r in batch]
        candidates = self.head.candidates(*self._states(responses, True))
        return self.loss_fn(score_all(self.head, contexts, candidates), duplicate_mask(responses))

    def precompute(self, pairs: Sequence[tuple[str, str]], progress: bool = True) -> None:
        """Run a frozen backbone once over every training text, with progress bars."""
        if not self.backbone.frozen:
            return
        s, progress = self.settings, distributed.shows_progress(progress)
        contexts = list(dict.fromkeys(c for c, _ in pairs))
        responses = list(dict.fromkeys(r for _, r in pairs))

        def fill(features: Features) -> None:
            features.precompute("texts", contexts, s.context_max_tokens, progress, side="left")
            features.precompute("texts", responses, s.candidate_max_tokens, progress, side="right")

        # launched on several processes, rank 0 alone writes the cache (distributed.py)
        self.features, _ = distributed.filled_by_rank0(self.features, fill)

    def _encode(self, texts: Sequence[str], candidates: bool, progress: bool):
        self.head.eval()
        self.backbone.train(False)
        rows = []
        what = "candidates" if candidates else "contexts"
        with (
            torch.no_grad(),
            progress_bar(len(texts), f"encoding {what}", enabled=progress) as advance,
        ):
            for start in range(0, len(texts), ENCODE_BATCH):
                chunk = list(texts[start : start + ENCODE_BATCH])
                states = self._states(chunk, candidates)
                encode = self.head.candidates if candidates else self.head.contexts
                rows.append(encode(*states))
                advance(len(chunk))
        self.features.flush()
        if not rows:
            return torch.zeros((0, self.settings.dim))
        return torch.cat(rows)

    def encode_contexts(self, texts: Sequence[str], progress: bool = False):
        """Context vectors: [n, dim] (bi) or [n, codes, dim] (poly), a torch tensor."""
        return self._encode(texts, False, progress)

    def context_states(self, texts: Sequence[str]):
        """Backbone states of contexts as this retriever cuts them, straight from the
        backbone (never cached: a live turn's context is new)."""
        self.backbone.train(False)
        with torch.no_grad():
            return self.backbone.encode(list(texts), self.settings.context_max_tokens, "left")

    def contexts_from_states(self, hidden, mask):
        """Context vectors from backbone states (``context_states``), as ``encode_contexts``
        gives them."""
        self.head.eval()
        with torch.no_grad():
            return self.head.contexts(hidden, mask)

    def encode_candidates(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Candidate vectors [n, dim], float32, contiguous (ready for FAISS)."""
        vectors = self._encode(texts, True, progress)
        return np.ascontiguousarray(vectors.numpy(), dtype=np.float32)

    def query_vectors(self, contexts) -> np.ndarray:
        """One float32 vector per encoded context, for a FAISS first stage."""
        return np.ascontiguousarray(self.head.query(contexts).numpy(), dtype=np.float32)

    def score_vectors(self, contexts, candidates: np.ndarray | torch.Tensor) -> np.ndarray:
        """Encoded contexts [n, ...] against their own candidate vectors [n, K, dim]."""
        candidates = torch.as_tensor(candidates)
        with torch.no_grad():
            parts = [
                self.head.score(contexts[i : i + SCORE_ROWS], candidates[i : i + SCORE_ROWS])
                for i in range(0, len(contexts), SCORE_ROWS)
            ]
        return torch.cat(parts).numpy() if parts else np.zeros((0, candidates.shape[1]))

    def score(
        self, contexts: Sequence[str], candidates: Sequence[Sequence[str]], progress: bool = False
    ) -> np.ndarray:
        """[n, K] scores: each context against its own K candidate texts (Hits@1/K).

        Each distinct candidate text is encoded once, however many rows it appears in.
        """
        if len(contexts) != len(candidates):
            raise ValueError(f"{len(contexts)} contexts but {len(candidates)} candidate rows")
        if len({len(row) for row in candidates}) > 1:
            raise ValueError("every context needs the same number of candidates")
        if not contexts:
            return np.zeros((0, 0), dtype=np.float32)
        pool = list(dict.fromkeys(text for row in candidates for text in row))
        position = {text: number for number, text in enumerate(pool)}
        vectors = torch.from_numpy(self.encode_candidates(pool, progress))
        index = torch.tensor([[position[text] for text in row] for row in candidates])
        return self.score_vectors(self.encode_contexts(contexts, progress), vectors[index])

    def save(self, directory: str | Path, metrics: dict | None = None) -> Path:
        directory = Path(directory)
        save_model(directory, KIND, self.settings.model_dump(), self.head, self.backbone, metrics)
        self.path = directory.resolve()
        return directory

    @classmethod
    def load(cls, directory: str | Path, cache_dir: Path | None = None) -> Retriever:
        """A retriever saved by ``save`` / ``train_retriever``; scores as it did then."""
        settings, state, backbone = read_model(directory, KIND)
        settings = RetrieverSettings(**settings)
        head = make_head(settings, backbone.hidden_size)
        head.load_state_dict(state)
        head.eval()
        backbone.train(False)
        return cls(head, backbone, settings, cache_dir, Path(directory).resolve())


def _pairs(
    examples: str | Path | Sequence[tuple[str, str]], max_turns: int
) -> list[tuple[str, str]]:
    if isinstance(examples, (str, Path)):
        return selection_pairs(read_examples(examples), max_turns)
    pairs = [(str(context), str(response).strip()) for context, response in examples]
    pairs = [(context, response) for context, response in pairs if response]
    if not pairs:
        raise ConfigError(
            "no (context, response) pairs to train the retriever on",
            fix="pass an examples JSONL file with positive examples, or non-empty pairs",
        )
    return pairs


def _backbone(backbone: Backbone | str | None, settings: RetrieverSettings) -> Backbone:
    if isinstance(backbone, Backbone):
        return backbone
    return load_backbone(backbone or settings.backbone, frozen=settings.frozen)


def fit_retriever(
    pairs: Sequence[tuple[str, str]],
    backbone: Backbone,
    settings: RetrieverSettings | None = None,
    config: TrainConfig | None = None,
    progress: bool = True,
    cache_dir: Path | None = None,
    checkpoints: Checkpoints | None = None,
) -> tuple[Retriever, dict]:
    """Train a retriever in memory on (context, response) pairs; (retriever, history).

    The settings record the backbone actually used (its source, whether it is frozen).
    With ``checkpoints`` a killed run goes on from the last one.
    """
    config = config or TrainConfig()
    settings = settings or RetrieverSettings()
    used = {"backbone": backbone.source, "frozen": backbone.frozen}
    if settings.kind == "residual":  # its vectors are the backbone's own
        used["dim"] = backbone.hidden_size
    settings = settings.model_copy(update=used)
    retriever = Retriever.new(backbone, settings, config.seed, cache_dir)
    retriever.precompute(pairs, progress)
    history = fit(
        retriever.head,
        backbone,
        list(pairs),
        retriever.loss,
        config,
        progress,
        f"training {settings.kind}-encoder",
        checkpoints,
    )
    return retriever, history


def train_retriever(
    examples: str | Path | Sequence[tuple[str, str]],
    out_dir: str | Path,
    backbone: Backbone | str | None = None,
    settings: RetrieverSettings | None = None,
    config: TrainConfig | None = None,
    progress: bool = True,
    cache_dir: Path | None = None,
    checkpoints: Checkpoints | None = None,
) -> dict:
    """Train on an examples file (its positives) or on pairs, save to ``out_dir``.

    ``backbone`` is a loaded ``Backbone``, a name for ``load_backbone`` or None for
    ``settings.backbone``. Returns the metrics (also stored in ``model.json``) plus the loss
    of every step and the model directory. Input errors (an empty examples file, a missing
    backbone directory) surface as ``InputFileError`` before any training. ``checkpoints``
    are removed once the model is saved.
    """
    settings = settings or RetrieverSettings()
    pairs = _pairs(examples, settings.max_turns)
    started = time.perf_counter()
    retriever, history = fit_retriever(
        pairs, _backbone(backbone, settings), settings, config, progress, cache_dir, checkpoints
    )
    metrics = {
        "kind": retriever.settings.kind,
        "pairs": len(pairs),
        "candidates": len(unique_candidates(r for _, r in pairs)),
        "steps": history["steps"],
        "first_loss": round(history["first_loss"], 5),
        "last_loss": round(history["last_loss"], 5),
        "epoch_losses": history["epoch_losses"],
        "seconds": round(time.perf_counter() - started, 2),
    }
    retriever.save(out_dir, metrics)
    if checkpoints is not None:
        checkpoints.clear()
    return {**metrics, "losses": history["losses"], "model_dir": str(Path(out_dir))}
