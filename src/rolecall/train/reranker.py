"""The reranker (NAACL 2022, section 4.3).

The retriever (a poly-encoder) proposes candidates from the unique positive system turns;
the reranker lets context and candidate attend to each other and gives each pair one
score: either through the backbone, reading each ``[CLS] context [SEP] candidate [SEP]``
pair whole (``joint``, the paper's cross-encoder), or in a cross-attention head over their
separately computed states (``attention``, ``cross_attention.py``: what makes a frozen
backbone on a CPU fast enough for a live turn). It is trained per context on the
gold response and ``negatives`` (7) others with softmax cross-entropy over the 8 scores,
gold first; how the negatives are drawn (random, hard, fixed or afresh at every step) is
in ``negatives.py``.

The head has dropout, so with dropout switched on the scores vary: ``mc_dropout`` samples
them for the unanswerable-context detector (``serve/unanswerable.py``); ``score`` is
deterministic.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rolecall.errors import InputFileError
from rolecall.records import Example
from rolecall.train import distributed
from rolecall.train.backbones.base import Backbone, torch_module
from rolecall.train.backbones.features import Features
from rolecall.train.checkpoints import Checkpoints
from rolecall.train.data import read_examples, unique_candidates
from rolecall.train.loop import TrainConfig, fit
from rolecall.train.negatives import HardNegatives, random_others, with_negatives
from rolecall.train.negatives import draw_negatives as draw_negatives  # re-exported
from rolecall.train.pairs import (
    Context,
    PairModel,
    as_context,
    encode_pairs,
    held_out,
    model_device,
    split_metrics,
    train_head,
)
from rolecall.train.settings import RerankerSettings as RerankerSettings  # re-exported

KIND = "reranker"


class Reranker(PairModel):
    """A trained (or new) reranker: head, backbone and settings.

    Two ways for context and candidate to meet (``settings.interaction``): ``joint``, the
    cross-encoder proper, reads each pair whole through the backbone (one backbone pass
    per candidate: the GPU user's path with a trainable backbone); ``attention`` takes
    their states computed separately and joins them in a cross-attention head
    (``cross_attention.py``: one context pass per turn, candidate states cached, a few
    milliseconds per turn on a CPU). ``auto`` picks ``attention`` for a frozen backbone,
    ``joint`` for a trainable one.
    """

    KIND = KIND
    SETTINGS = RerankerSettings
    OUTPUTS = 1

    @classmethod
    def resolve(cls, settings: RerankerSettings, backbone: Backbone) -> RerankerSettings:
        settings = super().resolve(settings, backbone)
        if settings.interaction == "auto":
            chosen = "attention" if backbone.frozen else "joint"
            settings = settings.model_copy(update={"interaction": chosen})
        return settings

    @classmethod
    def make_head(cls, backbone: Backbone, settings: RerankerSettings) -> Any:
        if settings.interaction != "attention":
            return super().make_head(backbone, settings)
        from rolecall.train.cross_attention import CrossAttentionHead

        head = CrossAttentionHead(
            backbone.hidden_size, settings.dim, settings.heads, settings.width, settings.dropout
        )
        return head.to(model_device(backbone))

    @property
    def joint(self) -> bool:
        return self.settings.interaction != "attention"

    # ---- what the head reads -----------------------------------------------------------

    def vectors(
        self, contexts: Sequence[Context], responses: Sequence[str], batch_size: int = 32
    ) -> Any:
        """The pooled pair vectors a joint head reads (backbone in eval mode, no grad)."""
        texts = [as_context(c, self.settings.max_turns) for c in contexts]
        return encode_pairs(
            self.backbone,
            self.features,
            texts,
            [r.strip() for r in responses],
            self.settings,
            batch_size,
        )

    def text_states(self, texts: Sequence[str], candidates: bool) -> tuple[Any, Any]:
        """Backbone states of contexts (cut from the left) or candidates (from the right),
        from the features cache when there is one, else straight from the backbone."""
        s = self.settings
        length, side = (
            (s.candidate_max_tokens, "right") if candidates else (s.context_max_tokens, "left")
        )
        if self.features is not None:
            return self.features.texts(list(texts), length, side)
        return self.backbone.encode(list(texts), length, side)

    def _inputs(self, contexts: Sequence[Context], responses: Sequence[str], batch_size: int):
        """Head inputs for pairs, chunk by chunk, without gradients."""
        torch = torch_module()
        if self.joint:
            yield (self.vectors(contexts, responses, batch_size),)
            return
        texts = [as_context(c, self.settings.max_turns) for c in contexts]
        self.backbone.train(False)
        with torch.no_grad():
            for start in range(0, len(texts), batch_size):
                chunk = slice(start, start + batch_size)
                yield (
                    *self.text_states(texts[chunk], False),
                    *self.text_states([r.strip() for r in responses[chunk]], True),
                )
        if self.features is not None:
            self.features.flush()

    def _run(self, inputs: Any, passes: int | None, seed: int) -> Any:
        """[N] logits with dropout off (``passes`` None), else [N, passes] with it on,
        seeded in a forked RNG so the caller's random state is left as it was."""
        torch = torch_module()
        if passes is None:
            self.head.eval()
            with torch.no_grad():
                return torch.cat([self.head(*part)[:, 0] for part in inputs])
        device = model_device(self.backbone)
        devices = [device.index or 0] if device.type == "cuda" else []
        self.head.train()
        try:
            with torch.random.fork_rng(devices=devices), torch.no_grad():
                torch.manual_seed(seed)
                runs = [
                    torch.stack([self.head(*part)[:, 0] for _ in range(passes)], dim=1)
                    for part in inputs
                ]
        finally:
            self.head.eval()
        return torch.cat(runs)

    # ---- scoring ----------------------------------------------------------------------

    def score_pairs(
        self, contexts: Sequence[Context], responses: Sequence[str], batch_size: int = 32
    ) -> np.ndarray:
        """[N] scores (logits; higher = fits better), dropout off: deterministic."""
        if len(contexts) != len(responses):
            raise ValueError(f"{len(contexts)} contexts but {len(responses)} responses")
        if not responses:
            return np.zeros(0, dtype=np.float32)
        inputs = list(self._inputs(contexts, responses, batch_size))
        return self._run(inputs, None, 0).cpu().numpy()

    def score(
        self,
        contexts: Sequence[Context],
        candidates_per_context: Sequence[Sequence[str]],
        batch_size: int = 32,
    ) -> np.ndarray:
        """[N, K] scores of each context's candidates; rows shorter than the longest are
        padded with ``-inf`` (ranked last, never chosen)."""
        if len(contexts) != len(candidates_per_context):
            raise ValueError(
                f"{len(contexts)} contexts but {len(candidates_per_context)} candidate lists"
            )
        widths = {len(row) for row in candidates_per_context}
        if not self.joint and len(widths) == 1 and 0 not in widths:
            return self._score_groups(contexts, candidates_per_context, batch_size)
        flat_c = [c for c, row in zip(contexts, candidates_per_context, strict=True) for _ in row]
        flat_r = [r for row in candidates_per_context for r in row]
        flat = self.score_pairs(flat_c, flat_r, batch_size)
        width = max((len(row) for row in candidates_per_context), default=0)
        out = np.full((len(contexts), width), -np.inf)
        start = 0
        for i, row in enumerate(candidates_per_context):
            out[i, : len(row)] = flat[start : start + len(row)]
            start += len(row)
        return out

    def _score_groups(
        self, contexts: Sequence[Context], rows: Sequence[Sequence[str]], batch_size: int
    ) -> np.ndarray:
        """``score`` for an attention head with K candidates per context: each context's
        states are read and projected once for its K candidates, not once per pair."""
        torch = torch_module()
        texts = [as_context(c, self.settings.max_turns) for c in contexts]
        width = len(rows[0])
        per_chunk = max(1, batch_size // width)
        device, parts = model_device(self.backbone), []
        self.backbone.train(False)
        with torch.no_grad():
            for start in range(0, len(texts), per_chunk):  # states of one chunk at a time
                chunk = slice(start, start + per_chunk)
                states = (
                    *self.text_states(texts[chunk], False),
                    *self.text_states([r.strip() for row in rows[chunk] for r in row], True),
                )
                inputs = [tuple(part.to(device) for part in states)]
                parts.append(self._run(inputs, None, 0).view(-1, width).cpu())
        if self.features is not None:
            self.features.flush()
        return torch.cat(parts).double().numpy()

    def mc_dropout(
        self,
        contexts: Sequence[Context],
        responses: Sequence[str],
        passes: int = 20,
        seed: int = 0,
        batch_size: int = 32,
    ) -> np.ndarray:
        """[N, passes] scores with the head's dropout on (the backbone stays in eval mode:
        its states are computed once and shared by every pass); repeatable for a seed."""
        if passes < 2:
            raise ValueError("MC dropout needs at least 2 passes to have a variance")
        inputs = list(self._inputs(contexts, responses, batch_size))
        return self._run(inputs, passes, seed).cpu().numpy()

    def score_states(
        self,
        context_states: tuple[Any, Any],
        responses: Sequence[str],
        passes: int | None = None,
        seed: int = 0,
    ) -> np.ndarray:
        """One context's candidates scored from its backbone states ``(hidden [1, T, H],
        mask [1, T])``, as the retriever got them (``attention`` only): [K] logits, or
        [K, passes] MC-dropout samples with ``passes``."""
        if self.joint:
            raise ValueError(
                "a joint reranker reads each pair whole through the backbone; "
                "only an attention reranker scores from context states"
            )
        if passes is not None and passes < 2:
            raise ValueError("MC dropout needs at least 2 passes to have a variance")
        if not responses:
            return np.zeros((0,) if passes is None else (0, passes), dtype=np.float32)
        torch = torch_module()
        device = model_device(self.backbone)
        with torch.no_grad():
            candidates = self.text_states([r.strip() for r in responses], True)
        inputs = [
            (
                *(part.to(device) for part in context_states),
                *(part.to(device) for part in candidates),
            )
        ]
        return self._run(inputs, passes, seed).cpu().numpy()

    # ---- training ---------------------------------------------------------------------

    def fit(
        self,
        examples: Sequence[Example],
        config: TrainConfig,
        hard_negatives: HardNegatives | None = None,
        progress: bool = True,
        checkpoints: Checkpoints | None = None,
    ) -> dict[str, Any]:
        """Train on the positive examples: each gold against its drawn negatives. With
        ``checkpoints`` a killed run goes on from the last one (the attention head's
        random negatives, drawn at every step, are then drawn afresh)."""
        torch = torch_module()
        if self.features is None:
            self.features = Features(self.backbone, batch_size=config.batch_size)
        positives = [e for e in examples if e.label == "positive"]
        pool = unique_candidates(e.response for e in positives)
        if len(pool) < 2:
            raise ValueError("the reranker needs at least 2 distinct positive responses")
        k = min(self.settings.negatives, len(pool) - 1)
        rng = random.Random(config.seed)
        loss = torch.nn.CrossEntropyLoss()
        s = self.settings
        if not self.joint:  # the hard negatives now, the random ones at every step
            hard = min(s.hard_count, k)
            items = with_negatives(
                positives, s.max_turns, [], hard, rng, hard_negatives, s.hard_count
            )
            return self._fit_attention(items, pool, k, loss, config, progress, checkpoints)
        items = with_negatives(positives, s.max_turns, pool, k, rng, hard_negatives, s.hard_count)
        groups = [[(c, gold)] + [(c, n) for n in negatives] for c, gold, negatives in items]
        return train_head(
            self.head,
            self.backbone,
            self.features,
            groups,
            [0] * len(groups),
            self.settings,
            config,
            lambda out, y: loss(out[..., 0], y),
            progress,
            "training reranker",
            checkpoints,
        )

    def _fit_attention(
        self,
        items: list[tuple[str, str, list[str]]],
        pool: list[str],
        k: int,
        loss: Any,
        config: TrainConfig,
        progress: bool,
        checkpoints: Checkpoints | None = None,
    ) -> dict[str, Any]:
        """Each context against its gold, its hard negatives and random others drawn afresh
        at every step (candidate states are per text, so a new negative costs nothing);
        softmax cross-entropy with the gold first. A frozen backbone's states are cached
        first."""
        torch = torch_module()
        s = self.settings
        if self.backbone.frozen:
            shown = distributed.shows_progress(progress)

            def fill(features: Features) -> None:
                features.precompute(
                    "texts",
                    list(dict.fromkeys(c for c, _, _ in items)),
                    s.context_max_tokens,
                    shown,
                    side="left",
                )
                features.precompute(
                    "texts",
                    list(dict.fromkeys([*pool, *(h for _, _, hard in items for h in hard)])),
                    s.candidate_max_tokens,
                    shown,
                    side="right",
                )

            # launched on several processes, rank 0 alone writes the cache (distributed.py)
            self.features, _ = distributed.filled_by_rank0(self.features, fill)
        device = model_device(self.backbone)
        rng = random.Random(config.seed + 1)

        def loss_of(batch: list[tuple[str, str, list[str]]]) -> Any:
            candidates = []
            for _, gold, hard in batch:
                candidates += [
                    gold,
                    *hard,
                    *random_others(pool, {gold, *hard}, k - len(hard), rng),
                ]
            contexts = self.text_states([c for c, _, _ in batch], False)
            states = self.text_states(candidates, True)
            parts = [part.to(device) for part in (*contexts, *states)]
            logits = self.head(*parts)[:, 0].view(len(batch), k + 1)
            return loss(logits, torch.zeros(len(batch), dtype=torch.long, device=device))

        history = fit(
            self.head,
            self.backbone,
            items,
            loss_of,
            config,
            progress,
            "training reranker",
            checkpoints,
        )
        self.features.flush()
        return history

    def evaluate(
        self, examples: Sequence[Example], pool: Sequence[str], seed: int = 0
    ) -> dict[str, float]:
        """Hits@1/K on held-out positives: each gold among K-1 random pool responses."""
        from rolecall.eval.retrieval import HitsEvaluator

        positives = [e for e in examples if e.label == "positive"]
        K = min(self.settings.eval_candidates, len(pool))
        if not positives or K < 2:
            return {}
        index = {response: i for i, response in enumerate(pool)}
        contexts = [as_context(e.history, self.settings.max_turns) for e in positives]

        def score_fn(queries: Sequence[str], rows: np.ndarray) -> np.ndarray:
            return self.score(queries, [[pool[j] for j in row] for row in rows])

        gold = [index[e.response.strip()] for e in positives]
        return HitsEvaluator(ks=(K,), seed=seed)(score_fn, contexts, pool, gold)


def train_reranker(
    examples_path: str | Path,
    out_dir: str | Path,
    backbone: Backbone | str,
    settings: RerankerSettings | None = None,
    config: TrainConfig | None = None,
    hard_negatives: HardNegatives | None = None,
    test_share: float = 0.1,
    progress: bool = True,
    cache_dir: Path | None = None,
    checkpoints: Checkpoints | None = None,
) -> dict[str, Any]:
    """Train on the positive examples of a file, evaluate Hits@1/K on held-out dialogues,
    save to ``out_dir``; returns the metrics (also written into ``model.json``).

    Negative examples are not used: a reranker only ever ranks in-bounds responses. The
    Hits@1/K pool is every unique positive response (train and test), as at serve time.
    """
    config = config or TrainConfig()
    examples = [e for e in read_examples(examples_path) if e.label == "positive"]
    train, test = held_out(examples, test_share, config.seed, examples_path)
    if len(unique_candidates(e.response for e in train)) < 2:
        raise InputFileError(
            examples_path,
            "the training split has fewer than 2 distinct "
            "positive responses: there is nothing to rank against",
            fix="add dialogues, or lower the test share",
        )
    model = Reranker.for_training(backbone, settings, config, cache_dir)
    history = model.fit(train, config, hard_negatives, progress, checkpoints)
    pool = unique_candidates(e.response for e in examples)
    counts = {
        "negatives": min(model.settings.negatives, len(pool) - 1),
        "hard_negatives": hard_negatives is not None,
    }
    metrics = {
        **split_metrics(train, test, history, **counts),
        **model.evaluate(test, pool, config.seed),
    }
    model.save(out_dir, metrics)
    if checkpoints is not None:
        checkpoints.clear()
    return metrics
