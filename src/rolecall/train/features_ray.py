"""A frozen backbone's features extracted as a Ray Data job (#18): many texts, many workers.

``precompute_on_ray`` fills the same on-disk cache as ``Features.precompute``, with the
same keys: the driver asks its cache which inputs are ``missing`` and sends only those,
``ray.data.from_items(...).map_batches(...)`` over a pool of actors that each load the
backbone once (``load_backbone(name, frozen=True, **backbone_options)``) and return, per
input, its key and its float16 states as bytes; the driver ``add``s them to the cache as
batches arrive (a shard whenever ``SHARD`` are pending, as locally), so a killed job keeps
its finished shards and the next one sends only the rest. Every actor's backbone must have
the driver's identity (the same model at the same path, the same options): otherwise the
keys would differ, and the job stops with an error saying so.

``training_inputs`` lists what a ``rolecall train classifier / retriever / reranker`` run
reads from the cache, so that ``--engine ray`` extracts it on Ray before training here.
Anything it does not list (a joint reranker's random negatives) is computed in this
process when training asks for it, as without Ray.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from rolecall.errors import ConfigError, InputFileError
from rolecall.progress import progress_bar
from rolecall.train.backbones.base import Backbone
from rolecall.train.backbones.features import Features
from rolecall.train.backbones.load import load_backbone

KINDS = ("texts", "pairs")


class Inputs(NamedTuple):
    """One ``precompute`` call's worth: ``kind``, its ``items``, ``max_length`` and the
    options (``side`` for texts, ``second_max`` for pairs)."""

    kind: str
    items: list[Any]
    max_length: int
    options: dict[str, Any]


class Extractor:
    """One actor: a frozen backbone loaded once, states of each batch it is given."""

    def __init__(self, name: str, backbone_options: dict, kind: str, max_length: int, **options):
        self.backbone = load_backbone(name, frozen=True, **backbone_options)
        self.kind, self.max_length, self.options = kind, max_length, options

    def __call__(self, batch: dict) -> dict:
        # a fresh Features per batch: its memory holds this batch's states only
        features = Features(self.backbone, None)
        firsts = [str(t) for t in batch["first"]]
        items: list[Any] = firsts
        if self.kind == "pairs":
            items = list(zip(firsts, (str(t) for t in batch["second"])))
        # this actor's own keys (its identity): the driver checks them against its own;
        # subtle: ``missing`` drops duplicates, and the driver sends none
        keys = list(features.missing(self.kind, items, self.max_length, **self.options))
        if self.kind == "texts":
            hidden, mask = features.texts(items, self.max_length, **self.options)
        else:
            hidden, mask = features.pairs(
                firsts, [b for _, b in items], self.max_length, **self.options
            )
        states = [hidden[row][mask[row]].numpy().astype(np.float16) for row in range(len(items))]
        return {
            "key": np.array(keys, dtype=object),
            "states": np.array([s.tobytes() for s in states], dtype=object),
            "tokens": np.array([len(s) for s in states], dtype=np.int64),
            "identity": np.array([self.backbone.identity] * len(items), dtype=object),
        }


def ray_batch_size(items: int, workers: int, batch_size: int) -> int:
    """Inputs per ``map_batches`` batch: 8 backbone batches (what ``precompute`` runs
    between progress updates), but no more than an even share so every actor works."""
    share = -(-items // max(1, workers))
    return max(1, min(8 * batch_size, share))


def extract_on_ray(
    features: Features,
    backbone_name: str,
    backbone_options: dict[str, Any],
    kind: str,
    items: Sequence[Any],
    max_length: int,
    *,
    workers: int = 2,
    address: str | None = None,
    batch_size: int | None = None,
    progress: bool = False,
    **options: Any,
) -> int:
    """Compute on Ray the states of the ``items`` missing from ``features``' cache and
    write them to it; returns how many were sent (0 when all were cached: Ray is not
    started). They are not kept in ``features``' memory: open the cache again to read them."""
    from rolecall.engines import ray_address
    from rolecall.engines.ray import start_ray

    if kind not in KINDS:
        raise ConfigError(f"unknown feature kind '{kind}'", fix="use texts or pairs")
    if not features.backbone.frozen or features.cache_dir is None:
        raise ConfigError(
            "features are extracted on Ray for a frozen backbone with a cache folder only",
            fix="freeze the backbone (--frozen) and give --features-cache, or use --engine local",
        )
    missing = features.missing(kind, items, max_length, **options)
    if not missing:
        return 0
    workers = max(1, workers)
    ray = start_ray(ray_address(address), num_cpus=max(2, workers))
    ray.data.DataContext.get_current().enable_progress_bars = False
    rows = [
        {"first": item, "second": ""} if kind == "texts" else {"first": item[0], "second": item[1]}
        for item in missing.values()
    ]
    dataset = ray.data.from_items(rows).map_batches(
        Extractor,
        fn_constructor_kwargs={
            "name": backbone_name,
            "backbone_options": dict(backbone_options),
            "kind": kind,
            "max_length": max_length,
            **options,
        },
        compute=ray.data.ActorPoolStrategy(size=min(workers, len(rows))),
        batch_size=batch_size or ray_batch_size(len(rows), workers, features.batch_size),
    )
    with progress_bar(len(rows), f"features ({kind}) on ray", enabled=progress) as bar:
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            states = received(batch, missing, features.backbone)
            features.add(states, keep=False)  # the driver holds at most a shard's worth
            bar(len(states))
    features.flush()
    return len(rows)


def received(batch: dict, asked: dict[str, Any], backbone: Backbone) -> dict[str, np.ndarray]:
    """{key: float16 states [tokens, H]} of an actor's output ``batch``, each key one the
    driver ``asked`` for (else the actor's backbone is another one: a clear error)."""
    states = {}
    for key, raw, tokens, identity in zip(
        batch["key"], batch["states"], batch["tokens"], batch["identity"]
    ):
        if key not in asked:
            _mismatch(backbone, str(identity))
        shape = (int(tokens), backbone.hidden_size)
        states[str(key)] = np.frombuffer(raw, dtype=np.float16).reshape(shape)
    return states


def _mismatch(backbone: Backbone, theirs: str) -> None:
    if theirs != backbone.identity:
        raise ConfigError(
            f"the Ray workers' backbone is '{theirs}', this process's is "
            f"'{backbone.identity}': their features would be cached under other keys",
            fix="give every node the same model at the same path (and the same backbone "
            "options), or use --engine local",
        )
    raise ConfigError(
        "a Ray worker returned features this process did not ask for",
        fix="run the same rolecall version on every node of the cluster",
    )


def precompute_on_ray(
    backbone_name: str,
    backbone_options: dict[str, Any],
    kind: str,
    items: Sequence[Any],
    max_length: int,
    cache_dir: Path,
    *,
    workers: int = 2,
    address: str | None = None,
    batch_size: int = 32,
    progress: bool = False,
    **options: Any,
) -> int:
    """``Features.precompute`` on Ray: fill ``cache_dir`` with the states of ``items``
    (``texts``, or ``pairs`` of (first, second)); returns how many inputs were sent."""
    return extract_for_training(
        [Inputs(kind, list(items), max_length, options)],
        load_backbone(backbone_name, frozen=True, **backbone_options),
        backbone_name,
        backbone_options,
        cache_dir,
        workers=workers,
        address=address,
        batch_size=batch_size,
        progress=progress,
    )


def read_texts(path: Path) -> list[str]:
    """The non-blank lines of a UTF-8 text file, stripped, in order (``textfiles``' checks:
    encoding with a conversion hint, binary and missing files)."""
    from rolecall.textfiles import input_lines

    texts = input_lines(path)
    if not texts:
        raise InputFileError(path, "holds no text", fix="give one text a line")
    return texts


# ---- what each training command reads ---------------------------------------------------


def training_inputs(
    model: str,
    examples_path: str | Path,
    settings: Any,
    backbone: Backbone,
    hard_negatives: Any = None,
) -> list[Inputs]:
    """The cached inputs ``train_<model>`` reads for ``examples_path`` (held-out ones
    included: the metrics read them too), in the keys its own ``Features`` uses."""
    from rolecall.train.data import read_examples, selection_pairs, unique_candidates
    from rolecall.train.pairs import as_context

    examples = read_examples(examples_path)
    if model == "classifier":
        pairs = [(as_context(e.history, settings.max_turns), e.response.strip()) for e in examples]
        return [Inputs("pairs", pairs, settings.max_length, {"second_max": settings.response_max})]
    positives = [e for e in examples if e.label == "positive"]
    if model == "retriever":
        pairs = selection_pairs(positives, settings.max_turns)
        return [
            Inputs("texts", [c for c, _ in pairs], settings.context_max_tokens, {"side": "left"}),
            Inputs(
                "texts", [r for _, r in pairs], settings.candidate_max_tokens, {"side": "right"}
            ),
        ]
    if model != "reranker":
        raise ConfigError(
            f"no feature inputs for '{model}'", fix="use classifier, retriever or reranker"
        )
    from rolecall.train.negatives import prepare_mining
    from rolecall.train.reranker import Reranker

    s = Reranker.resolve(settings, backbone)
    contexts = [as_context(e.history, s.max_turns) for e in positives]
    pool = unique_candidates(e.response for e in positives)
    if s.interaction == "joint":  # the golds; the drawn negatives are computed here
        pairs = [(c, e.response.strip()) for c, e in zip(contexts, positives)]
        return [Inputs("pairs", pairs, s.max_length, {"second_max": s.response_max})]
    if hard_negatives is not None and s.hard_count > 0:  # as draw_negatives asks for them
        prepare_mining(hard_negatives, contexts, s.hard_count)
        for context, example in zip(contexts, positives):
            pool += hard_negatives(context, example.response.strip(), s.hard_count + 1)
    return [
        Inputs("texts", contexts, s.context_max_tokens, {"side": "left"}),
        Inputs("texts", pool, s.candidate_max_tokens, {"side": "right"}),
    ]


def extract_for_training(
    inputs: Sequence[Inputs],
    backbone: Backbone,
    backbone_name: str,
    backbone_options: dict[str, Any],
    cache_dir: Path,
    *,
    workers: int = 2,
    address: str | None = None,
    batch_size: int = 32,
    progress: bool = False,
) -> int:
    """Every ``inputs`` extracted on Ray into ``cache_dir`` with the driver's ``backbone``
    (already loaded for training); returns how many inputs were sent."""
    return sum(
        extract_on_ray(
            Features(backbone, Path(cache_dir), batch_size),  # it sees the shards written
            backbone_name,
            backbone_options,
            one.kind,
            one.items,
            one.max_length,
            workers=workers,
            address=address,
            progress=progress,
            **one.options,
        )
        for one in inputs
    )
