"""One function per trained model, the whole job: what ``rolecall train classifier|
retriever|reranker|generator|implicit-judge|consistency-judge`` run, and what the demo and
the benches call, so that all of them train the same way.

Each job takes typed settings: the model's own (``ClassifierSettings`` ...), a
``TrainConfig``, for the backbone-trained ones a ``BackboneChoice`` (which backbone, the
layer it is cut after, frozen, trained whole or its top layers tuned) and a ``Job`` (the
examples, the model directory, the features cache, where frozen features are extracted,
checkpoints, progress bars). The backbone policy is ``BackboneChoice.resolved``: what the
caller gives, else the bundled backbone's measured default for the kind of model
(``backbone.HEAD_DEFAULTS``: on the embedded Gemma the classifier tunes its top 4 of 7
layers, on the sentence encoder the retriever tunes its dense top), else frozen for the
embedded model and the sentence encoder and trained whole for a model directory.

The candidate index of a retriever and the hard negatives of a reranker come from
``serve/candidates.py`` (a floor up): their callers build them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rolecall import config as settings_file
from rolecall.errors import ConfigError
from rolecall.train.backbones.base import E5, EMBEDDED, HEAD_DEFAULTS, SENTENCE, HeadDefaults
from rolecall.train.settings import (
    RETRIEVER_TRAINING,
    ClassifierSettings,
    DetoxSettings,
    GeneratorSettings,
    RerankerSettings,
    RetrieverSettings,
    TrainConfig,
    classifier_training,
)

FROZEN_BY_DEFAULT = (EMBEDDED, SENTENCE, E5)
ENGINES = ("local", "ray")


def features_cache(given: Path | None = None) -> Path:
    """Where frozen backbones' states are kept: ``given``, else ROLECALL_HOME/features."""
    return given or settings_file.home() / "features"


@dataclass(frozen=True)
class BackboneChoice:
    """Which backbone a model reads and how much of it trains. ``None``: the policy."""

    name: str = EMBEDDED
    frozen: bool | None = None
    layer: int | None = None
    tune_layers: int | None = None

    def resolved(self, kind: str | None) -> tuple[int | None, bool, int | None]:
        """(layer kept, frozen, top layers tuned) for a model of ``kind`` ("classifier",
        "retriever", ...; None: no kind's defaults)."""
        if self.tune_layers is not None and self.frozen is not None:
            raise ConfigError(
                "--tune-layers and --frozen/--trainable both say what trains",
                fix="give one of them (--tune-layers 0 is frozen)",
            )
        layer, tune = self.layer, self.tune_layers
        default = self.default(kind)
        if default is not None:
            layer = default.layer if layer is None else layer
            if tune is None and self.frozen is None:
                tune = min(default.tune, layer) if layer else default.tune
        if tune is not None:
            return layer, True, tune
        frozen = self.name in FROZEN_BY_DEFAULT if self.frozen is None else self.frozen
        return layer, frozen, None

    def default(self, kind: str | None) -> HeadDefaults | None:
        """The bundled backbone's measured default for a model of ``kind``, if any."""
        return HEAD_DEFAULTS.get(self.name, {}).get(kind or "")

    def backbone_lr(self, kind: str | None) -> float | None:
        """The learning rate the policy's default gives tuned layers (None: no default
        here, or nothing tuned)."""
        default = self.default(kind)
        return default.backbone_lr if default is not None and self.resolved(kind)[2] else None

    def load_options(self, kind: str | None) -> dict[str, Any]:
        """``load_backbone``'s options beyond ``frozen``: what every Ray actor loads too."""
        layer = self.resolved(kind)[0]
        return {"layer": layer} if layer is not None else {}

    def load(self, kind: str | None):
        """The backbone, loaded and with its top layers set to train as resolved."""
        from rolecall.train.backbones.load import load_backbone

        layer, frozen, tune = self.resolved(kind)
        backbone = load_backbone(self.name, frozen, layer)
        if tune is not None:
            backbone.tune_top(tune)
        return backbone


@dataclass(frozen=True)
class Job:
    """Where a training job reads and writes, and how it runs."""

    examples: Path
    out: Path
    features_cache: Path | None = None  # default: ROLECALL_HOME/features
    progress: bool = True
    engine: str = "local"  # where a frozen backbone's features are extracted: local or ray
    ray_address: str | None = None
    workers: int = 2  # Ray actors
    checkpoint_every: float | None = 300.0  # seconds; None: no checkpoints

    def cache(self) -> Path:
        return features_cache(self.features_cache)

    def checkpoints(self, identity: dict):
        """The ``Checkpoints`` in ``out/.checkpoint`` (a checkpoint of another ``identity``,
        the model's settings, is refused), or None."""
        if self.checkpoint_every is None:
            return None
        from rolecall.train.checkpoints import DIRECTORY, Checkpoints

        return Checkpoints(Path(self.out) / DIRECTORY, self.checkpoint_every, identity)


def classifier_config(choice: BackboneChoice, epochs: int | None = None, **given) -> TrainConfig:
    """The classifier's ``TrainConfig``: ``given`` fields, and when ``epochs`` is None the
    default passes of the backbone it resolves to (``classifier_training``)."""
    _, frozen, tune = choice.resolved("classifier")
    if epochs is not None:
        given["epochs"] = epochs
    return classifier_training(frozen and not tune, **given)


def retriever_config(choice: BackboneChoice, **given) -> TrainConfig:
    """The retriever's ``TrainConfig``: ``RETRIEVER_TRAINING`` and the ``given`` fields; a
    ``backbone_lr`` not given (or None) is the policy's for a default that tunes (the
    sentence encoder's top: 3e-4)."""
    if given.get("backbone_lr") is None:
        given["backbone_lr"] = choice.backbone_lr("retriever") or RETRIEVER_TRAINING.backbone_lr
    return TrainConfig(**{**RETRIEVER_TRAINING.model_dump(), **given})


def classifier(
    job: Job,
    choice: BackboneChoice,
    settings: ClassifierSettings,
    config: TrainConfig | None = None,
    test_share: float = 0.1,
) -> dict[str, Any]:
    """The out-of-bounds classifier (``train/classifier.py``); its metrics."""
    from rolecall.train.classifier import train_classifier

    config = config or classifier_config(choice)
    backbone = _prepared(job, choice, "classifier", settings, config)
    return train_classifier(
        job.examples,
        job.out,
        backbone,
        settings,
        config,
        test_share,
        job.progress,
        job.cache(),
        job.checkpoints(settings.model_dump()),
    )


def retriever(
    job: Job, choice: BackboneChoice, settings: RetrieverSettings, config: TrainConfig
) -> dict[str, Any]:
    """The retriever (``train/retriever.py``); its metrics. Its candidate index is
    ``serve.candidates.index_examples``."""
    from rolecall.train.retriever import train_retriever

    backbone = _prepared(job, choice, "retriever", settings, config)
    return train_retriever(
        job.examples,
        job.out,
        backbone,
        settings,
        config,
        job.progress,
        job.cache(),
        job.checkpoints(settings.model_dump()),
    )


def reranker(
    job: Job,
    choice: BackboneChoice,
    settings: RerankerSettings,
    config: TrainConfig,
    hard_negatives: Any = None,
    test_share: float = 0.1,
) -> dict[str, Any]:
    """The reranker (``train/reranker.py``), its negatives random or mined by
    ``hard_negatives`` (``serve.candidates.hard_negative_miner``); its metrics."""
    from rolecall.train.reranker import train_reranker

    backbone = _prepared(job, choice, "reranker", settings, config, hard_negatives)
    return train_reranker(
        job.examples,
        job.out,
        backbone,
        settings,
        config,
        hard_negatives,
        test_share,
        job.progress,
        job.cache(),
        job.checkpoints(settings.model_dump()),
    )


def generator(
    job: Job, base: str, settings: GeneratorSettings, config: TrainConfig, test_share: float = 0.1
) -> dict[str, Any]:
    """The generator (LoRA on ``base``, ``train/generator.py``); its metrics."""
    from rolecall.train.generator import train_generator

    checkpoints = job.checkpoints({**settings.model_dump(), "base": base})
    return train_generator(
        job.examples, job.out, base, settings, config, test_share, job.progress, checkpoints
    )


# held-out sentences the detox job rewrites to measure chrF/BLEU: greedy rewriting through
# transformers is slow on a CPU (issue #17: all 676 took most of a 37-minute run on 2
# cores; 2.8 sentences a minute measured on a loaded 2-core machine, docs/kda.md)
DETOX_EVAL_LIMIT = 200


def detox(
    job: Job,
    base: str,
    settings: DetoxSettings,
    config: TrainConfig,
    test_share: float = 0.1,
    limit: int | None = None,
    eval_limit: int = DETOX_EVAL_LIMIT,
    engine: str = "transformers",
):
    """The detox model (LoRA on ``base``, ``train/detox_model.py``) on the K/DA CSV
    ``job.examples``: ``test_share`` of its neutral sentences held out (seeded by
    ``config.seed``), the first ``limit`` training pairs, saved to ``job.out`` before the
    first ``eval_limit`` held-out pairs are rewritten (by ``engine``) and scored against
    copying. Returns (the model, its metrics)."""
    from rolecall.errors import InputFileError
    from rolecall.eval.overlap import against_copying
    from rolecall.formats.kda import read_kda_csv
    from rolecall.train.detox_model import DetoxModel, rewriter, split_pairs
    from rolecall.train.loop import write_metrics

    rows = read_kda_csv(job.examples)
    if not rows:
        raise InputFileError(job.examples, "holds no pairs", fix="give a K/DA CSV with rows")
    train, test = split_pairs(rows, test_share, config.seed) if test_share > 0 else (rows, [])
    train = train[:limit] if limit else train
    model = DetoxModel.create(base, settings, config.seed)
    checkpoints = job.checkpoints(settings.model_dump())
    history = model.fit_pairs(train, config, job.progress, checkpoints)
    metrics: dict[str, Any] = {
        "train_pairs": len(train),
        "test_pairs": len(test),
        "steps": history["steps"],
        "first_loss": round(history["first_loss"], 4),
        "last_loss": round(history["last_loss"], 4),
    }
    model.save(job.out, metrics)  # before the slow evaluation: a kill there loses no training
    if checkpoints is not None:
        checkpoints.clear()
    evaluated = test[:eval_limit]
    if evaluated:
        inputs, references = [p.toxic for p in evaluated], [p.neutral for p in evaluated]
        rewrites = list(rewriter(model, job.out, engine)(inputs, 64, job.progress))
        metrics |= {"rewritten": len(evaluated), "engine": engine}
        metrics |= against_copying(inputs, rewrites, references)
        write_metrics(job.out, metrics)  # only the metrics: adapter.gguf stays current
    return model, metrics


@dataclass(frozen=True)
class JudgeData:
    """What a K/DA judge is trained and measured on (``train/kda_judges.py``)."""

    data_dir: Path
    holdout: float = 0.1  # K/DA neutral sentences held out
    seed: int = 0
    limit: int | None = None  # training items per label
    test_limit: int | None = None  # test items per label in each test set
    baseline: bool = True  # also measure character n-gram TF-IDF on the split


def kda_judge(
    task: str,
    data: JudgeData,
    out: Path,
    choice: BackboneChoice,
    views: list[str] | None = None,
    config: TrainConfig | None = None,
    cache: Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """The ``task`` judge ("implicit" or "consistency"): TF-IDF over ``views`` (None: the
    task's default views) when ``choice.name`` is ``tfidf``, else a head over the
    backbone; its metrics."""
    from rolecall.train.kda_judges import TFIDF, train_judge

    tfidf = choice.name == TFIDF
    settings = {"views": views} if tfidf and views else None
    backbone = choice.name if tfidf else choice.load(None)
    return train_judge(
        task,
        data.data_dir,
        out,
        backbone,
        holdout=data.holdout,
        seed=data.seed,
        limit=data.limit,
        test_limit=data.test_limit,
        settings=settings,
        config=None if tfidf else config,
        baseline=data.baseline,
        progress=progress,
        cache_dir=None if tfidf else features_cache(cache),
    )


def _prepared(
    job: Job,
    choice: BackboneChoice,
    kind: str,
    settings: Any,
    config: TrainConfig,
    hard_negatives: Any = None,
):
    """The backbone loaded, and with ``job.engine`` ray its features extracted first."""
    if job.engine not in ENGINES:
        raise ConfigError(f"unknown engine '{job.engine}'", fix="use local or ray")
    backbone = choice.load(kind)
    if job.engine == "ray":
        features_on_ray(job, choice, kind, backbone, settings, config, hard_negatives)
    return backbone


def features_on_ray(
    job: Job,
    choice: BackboneChoice,
    kind: str,
    backbone: Any,
    settings: Any,
    config: TrainConfig,
    hard_negatives: Any = None,
) -> None:
    """The frozen ``backbone``'s states that a ``kind`` job reads, extracted on Ray into
    the features cache before it trains here (``train/features_ray.py``); under a launcher
    rank 0 extracts and the other ranks wait."""
    if not backbone.frozen:
        raise ConfigError(
            "--engine ray extracts a frozen backbone's features; a trainable one trains here",
            fix="add --frozen, or use --engine local",
        )
    from rolecall.train import distributed
    from rolecall.train.features_ray import extract_for_training, training_inputs

    if distributed.is_rank0():  # under torchrun, rank 0 alone; the others wait for it,
        # subtle: before they open the cache, which deletes the half-written shards
        inputs = training_inputs(kind, job.examples, settings, backbone, hard_negatives)
        extract_for_training(
            inputs,
            backbone,
            choice.name,
            choice.load_options(kind),  # every actor loads it as this process did
            job.cache(),
            workers=job.workers,
            address=job.ray_address,
            batch_size=config.batch_size,
            progress=job.progress,
        )
    distributed.barrier()
