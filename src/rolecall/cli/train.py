"""``rolecall train ...``: the dialogue models from example files (thin commands).

Each command trains one model on a JSONL file of ``Example`` records, saves it to
``--out`` (``model.json``, the head, the backbone or a reference to it) and prints its
metrics as JSON. ``--backbone`` is ``embedded`` (the embedded Gemma, frozen: its hidden
states are cached under ``--features-cache`` so a second model on the same data is fast;
the classifier instead tunes its top layers, ``EMBEDDED_DEFAULTS``) or a local
transformers model directory (trained whole unless ``--frozen``).

``implicit-judge`` and ``consistency-judge`` train the K/DA judges from the shared corpora
folder instead (``train/kda_judges.py``; default backbone ``tfidf``, the measured stronger
one on a CPU: ``docs/trained-judges.md``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from rolecall import config as settings_file
from rolecall.cli.common import (
    CHECKPOINT_EVERY,
    RAY_ADDRESS_OPTION,
    checkpoints_in,
    field_default,
    out,
    train_config,
    validated,
)
from rolecall.errors import ConfigError
from rolecall.train.settings import (
    CLASSIFIER_TRAINING,
    FROZEN_CLASSIFIER_EPOCHS,
    GENERATOR_TRAINING,
    ClassifierSettings,
    GeneratorSettings,
    RerankerSettings,
    RetrieverSettings,
    TrainConfig,
    classifier_training,
)

train_app = typer.Typer(
    help="Train the dialogue models (NAACL 2022, section 4): out-of-bounds "
    "classifier, retriever, reranker, generator; and the K/DA judges.",
    no_args_is_help=True,
)


BACKBONE_HELP = (
    "'embedded' (the embedded Gemma 3 270M, frozen), 'sentence' (the bundled sentence "
    "encoder, frozen: one state per turn) or a local transformers model directory (trained "
    "whole unless --frozen)"
)
FROZEN_BY_DEFAULT = ("embedded", "sentence")


def _frozen(backbone: str, frozen: Optional[bool]) -> bool:
    return (backbone in FROZEN_BY_DEFAULT) if frozen is None else frozen


def _cache(features_cache: Optional[Path]) -> Path:
    return features_cache or settings_file.home() / "features"


def _backbone_choice(values: dict, kind: str | None) -> tuple[int | None, bool, int | None]:
    """(layer, frozen, top layers tuned) of a command's options (its ``locals()``): what
    is given, else the embedded Gemma's measured default for the ``kind`` of model
    (``EMBEDDED_DEFAULTS``), else frozen for embedded only and the backbone's layers."""
    from rolecall.train.backbone import EMBEDDED, EMBEDDED_DEFAULTS

    name, frozen, tune = values["backbone"], values.get("frozen"), values.get("tune_layers")
    layer = values.get("layer")
    if tune is not None and frozen is not None:
        raise ConfigError(
            "--tune-layers and --frozen/--trainable both say what trains",
            fix="give one of them (--tune-layers 0 is frozen)",
        )
    default = EMBEDDED_DEFAULTS.get(kind or "") if name == EMBEDDED else None
    if default is not None:
        layer = default.layer if layer is None else layer
        if tune is None and frozen is None:
            tune = min(default.tune, layer) if layer else default.tune
    if tune is not None:
        return layer, True, tune
    return layer, _frozen(name, frozen), None


def _backbone_options(values: dict, kind: str | None = None) -> dict[str, Any]:
    """``load_backbone``'s options beyond ``frozen`` (the layer kept)."""
    layer = _backbone_choice(values, kind)[0]
    return {"layer": layer} if layer is not None else {}


def _backbone_training(values: dict, kind: str | None = None) -> tuple[Any, TrainConfig, Path]:
    """The loaded backbone, ``TrainConfig`` and features cache of a command's options (its
    ``locals()``: --backbone, --frozen/--trainable, --layer, --tune-layers, the
    TrainConfig options, --features-cache); ``kind``: the model trained, for the embedded
    Gemma's defaults."""
    from rolecall.train.backbone import load_backbone

    config = train_config(values)
    layer, frozen, tune = _backbone_choice(values, kind)
    model = load_backbone(values["backbone"], frozen, layer)
    if tune is not None:
        model.tune_top(tune)
    return model, config, _cache(values["features_cache"])


def _features_on_ray(model_kind: str, values: dict, hard_negatives: Any = None) -> None:
    """``--engine ray``: the frozen backbone's states this run reads, extracted on Ray into
    the features cache before training here (``train/features_ray.py``); from a command's
    ``locals()`` after ``_backbone_training``."""
    engine = values["engine_name"]
    if engine == "local":
        return
    if engine != "ray":
        raise ConfigError(f"unknown engine '{engine}'", fix="use local or ray")
    backbone = values["model"]
    if not backbone.frozen:
        raise ConfigError(
            "--engine ray extracts a frozen backbone's features; a trainable one trains here",
            fix="add --frozen, or use --engine local",
        )
    from rolecall.train import distributed
    from rolecall.train.features_ray import extract_for_training, training_inputs

    if distributed.is_rank0():  # under torchrun, rank 0 alone; the others wait for it,
        # subtle: before they open the cache, which deletes the half-written shards
        inputs = training_inputs(
            model_kind, values["examples"], values["settings"], backbone, hard_negatives
        )
        extract_for_training(
            inputs,
            backbone,
            values["backbone"],
            _backbone_options(values, model_kind),  # every actor loads it as this process did
            values["cache"],
            workers=values["workers"],
            address=values["ray_address"],
            batch_size=values["config"].batch_size,
            progress=values["progress"],
        )
    distributed.barrier()


def _print(metrics: dict) -> None:
    out.print(
        json.dumps({k: v for k, v in metrics.items() if k != "losses"}, ensure_ascii=False),
        highlight=False,
    )


# typer options shared by every command, with TrainConfig's defaults
EPOCHS = typer.Option(field_default(TrainConfig, "epochs"), min=1)
BATCH = typer.Option(field_default(TrainConfig, "batch_size"), min=1)
LR = typer.Option(field_default(TrainConfig, "lr"), help="the head's learning rate")
BACKBONE_LR = typer.Option(
    field_default(TrainConfig, "backbone_lr"), help="a trainable backbone's learning rate"
)
MAX_STEPS = typer.Option(
    field_default(TrainConfig, "max_steps"), min=1, help="stop after this many steps"
)
SEED = typer.Option(field_default(TrainConfig, "seed"))
FROZEN = typer.Option(
    None,
    "--frozen/--trainable",
    help="freeze the backbone or train it whole (default: embedded frozen, a model "
    "directory trained; the classifier tunes the embedded model's top layers: --tune-layers)",
)
CACHE = typer.Option(
    None, help="where a frozen backbone's states are kept (default: ROLECALL_HOME/features)"
)
PROGRESS = typer.Option(True)
LAYER = typer.Option(
    None,
    min=1,
    help="keep the backbone's first N transformer layers: their states are the features "
    "and extraction is faster (default: embedded's default layer, see docs/models.md; all "
    "of a model directory's; the model's layer count keeps all); kept in the model directory",
)
TUNE_LAYERS = typer.Option(
    None,
    min=0,
    help="train the backbone's top N transformer layers (of those --layer keeps) and keep the "
    "rest as loaded; 0: frozen (default: the embedded Gemma's measured default for this model, "
    "see docs/models.md; else --frozen/--trainable); only the tuned layers are saved",
)
FEATURES_ENGINE = typer.Option(
    "local",
    "--engine",
    help="where a frozen backbone's features are extracted: local (this process) or ray "
    "(a Ray Data job; the training then runs here)",
)
FEATURE_WORKERS = typer.Option(
    2, "--workers", min=1, help="Ray actors with --engine ray, each loading the backbone once"
)


@train_app.command("classifier")
def train_classifier_command(
    examples: Path = typer.Argument(..., help="examples JSONL (positives and negatives)"),
    out_dir: Path = typer.Option(..., "--out", "-o", help="model directory to write"),
    backbone: str = typer.Option("embedded", help=BACKBONE_HELP),
    frozen: Optional[bool] = FROZEN,
    layer: Optional[int] = LAYER,
    tune_layers: Optional[int] = TUNE_LAYERS,
    max_length: int = typer.Option(
        field_default(ClassifierSettings, "max_length"),
        min=8,
        help="tokens of history + response; the history is cut from the left",
    ),
    class_weights: str = typer.Option(
        field_default(ClassifierSettings, "class_weights"), help="none or balanced"
    ),
    test_share: float = typer.Option(0.1, help="dialogues held out for the metrics"),
    epochs: Optional[int] = typer.Option(
        None,
        min=1,
        help=f"passes (default: {CLASSIFIER_TRAINING.epochs} when backbone layers train, or "
        f"as many as make {CLASSIFIER_TRAINING.min_steps} steps; {FROZEN_CLASSIFIER_EPOCHS} "
        "for a frozen backbone)",
    ),
    batch_size: int = typer.Option(CLASSIFIER_TRAINING.batch_size, min=1),
    lr: float = LR,
    backbone_lr: float = typer.Option(
        CLASSIFIER_TRAINING.backbone_lr, help="a trainable (or tuned) backbone's learning rate"
    ),
    max_steps: Optional[int] = MAX_STEPS,
    seed: int = SEED,
    features_cache: Optional[Path] = CACHE,
    progress: bool = PROGRESS,
    engine_name: str = FEATURES_ENGINE,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = FEATURE_WORKERS,
    checkpoint_every: float = CHECKPOINT_EVERY,
):
    """Out-of-bounds classifier: [CLS] history [SEP] response -> in / out of bounds."""
    from rolecall.train.classifier import train_classifier

    settings = validated(ClassifierSettings, max_length=max_length, class_weights=class_weights)
    values = dict(locals())
    _, frozen_choice, tune = _backbone_choice(values, "classifier")
    if epochs is None:
        default = classifier_training(frozen_choice and not tune)
        values.update(epochs=default.epochs, min_steps=default.min_steps)
    model, config, cache = _backbone_training(values, "classifier")
    _features_on_ray("classifier", {**values, "model": model, "config": config, "cache": cache})
    checkpoints = checkpoints_in(out_dir, checkpoint_every, settings.model_dump())
    metrics = train_classifier(
        examples, out_dir, model, settings, config, test_share, progress, cache, checkpoints
    )
    _print(metrics)


@train_app.command("retriever")
def train_retriever_command(
    examples: Path = typer.Argument(..., help="examples JSONL (its positives are used)"),
    out_dir: Path = typer.Option(..., "--out", "-o", help="model directory to write"),
    kind: str = typer.Option(
        field_default(RetrieverSettings, "kind"),
        help="poly (poly-encoder), bi (bi-encoder) or residual (the sentence encoder's "
        "cosine with trained residual maps: --backbone sentence)",
    ),
    codes: int = typer.Option(
        field_default(RetrieverSettings, "codes"), min=1, help="poly-encoder codes"
    ),
    backbone: str = typer.Option("embedded", help=BACKBONE_HELP),
    frozen: Optional[bool] = FROZEN,
    layer: Optional[int] = LAYER,
    tune_layers: Optional[int] = TUNE_LAYERS,
    index: bool = typer.Option(
        True,
        help="also build the candidate index (FAISS) of "
        "the unique positive responses in OUT/candidates",
    ),
    epochs: int = EPOCHS,
    batch_size: int = BATCH,
    lr: float = LR,
    backbone_lr: float = BACKBONE_LR,
    max_steps: Optional[int] = MAX_STEPS,
    seed: int = SEED,
    features_cache: Optional[Path] = CACHE,
    progress: bool = PROGRESS,
    engine_name: str = FEATURES_ENGINE,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = FEATURE_WORKERS,
    checkpoint_every: float = CHECKPOINT_EVERY,
):
    """Poly-encoder or bi-encoder retriever, trained with in-batch negatives."""
    from rolecall.serve.candidates import build_candidate_index
    from rolecall.train.data import read_examples, unique_candidates
    from rolecall.train.retriever import Retriever, train_retriever

    settings = validated(RetrieverSettings, kind=kind, codes=codes)
    model, config, cache = _backbone_training(locals(), "retriever")
    _features_on_ray("retriever", locals())
    checkpoints = checkpoints_in(out_dir, checkpoint_every, settings.model_dump())
    metrics = train_retriever(
        examples, out_dir, model, settings, config, progress, cache, checkpoints
    )
    if index:
        responses = [e.response for e in read_examples(examples) if e.label == "positive"]
        retriever = Retriever.load(out_dir, cache)
        build_candidate_index(
            retriever, unique_candidates(responses), out_dir / "candidates", progress=progress
        )
        metrics["candidate_index"] = str(out_dir / "candidates")
    _print(metrics)


@train_app.command("reranker")
def train_reranker_command(
    examples: Path = typer.Argument(..., help="examples JSONL (its positives are used)"),
    out_dir: Path = typer.Option(..., "--out", "-o", help="model directory to write"),
    negatives: int = typer.Option(
        field_default(RerankerSettings, "negatives"), min=1, help="negatives per example (paper: 7)"
    ),
    interaction: str = typer.Option(
        field_default(RerankerSettings, "interaction"),
        help="joint: each pair through the backbone (cross-encoder); attention: "
        "a cross-attention head over separately computed states (fast on a CPU); auto: "
        "attention for a frozen backbone, joint for a trainable one",
    ),
    hard_negatives: Optional[Path] = typer.Option(
        None, help="a candidate index (from 'train retriever') to mine hard negatives"
    ),
    backbone: str = typer.Option("embedded", help=BACKBONE_HELP),
    frozen: Optional[bool] = FROZEN,
    layer: Optional[int] = LAYER,
    tune_layers: Optional[int] = TUNE_LAYERS,
    test_share: float = typer.Option(0.1, help="dialogues held out for Hits@1/K"),
    epochs: int = EPOCHS,
    batch_size: int = BATCH,
    lr: float = LR,
    backbone_lr: float = BACKBONE_LR,
    max_steps: Optional[int] = MAX_STEPS,
    seed: int = SEED,
    features_cache: Optional[Path] = CACHE,
    progress: bool = PROGRESS,
    engine_name: str = FEATURES_ENGINE,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = FEATURE_WORKERS,
    checkpoint_every: float = CHECKPOINT_EVERY,
):
    """Reranker: the target against random (or retriever-mined) negatives."""
    from rolecall.train.reranker import train_reranker

    settings = validated(RerankerSettings, negatives=negatives, interaction=interaction)
    mined = None
    if hard_negatives is not None:
        from rolecall.serve.candidates import CandidateIndex
        from rolecall.train.negatives import Miner

        candidate_index = CandidateIndex.load(hard_negatives)
        mined = Miner(
            lambda contexts, n: [
                [t for _, t, _ in hits] for hits in candidate_index.search(contexts, n)
            ],
            progress=progress,
        )

    model, config, cache = _backbone_training(locals(), "reranker")
    _features_on_ray("reranker", locals(), mined)
    checkpoints = checkpoints_in(out_dir, checkpoint_every, settings.model_dump())
    metrics = train_reranker(
        examples, out_dir, model, settings, config, mined, test_share, progress, cache, checkpoints
    )
    _print(metrics)


@train_app.command("features")
def features_command(
    texts_file: Path = typer.Argument(..., help="UTF-8 text file: one text a line"),
    backbone: str = typer.Option(
        "embedded", help="'embedded' or a local transformers model directory (frozen here)"
    ),
    layer: Optional[int] = LAYER,
    max_length: int = typer.Option(
        64, min=4, help="tokens kept of a text (a retriever's candidates: 64; contexts: 256 left)"
    ),
    side: str = typer.Option("right", help="where a longer text is cut: right or left"),
    batch_size: int = BATCH,
    features_cache: Optional[Path] = CACHE,
    progress: bool = PROGRESS,
    engine_name: str = FEATURES_ENGINE,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = FEATURE_WORKERS,
):
    """Fill the features cache with a frozen backbone's states of many texts (blank lines
    skipped), here or as a Ray Data job (--engine ray); only the missing ones are computed."""
    from rolecall.train.backbone import load_backbone
    from rolecall.train.features import Features
    from rolecall.train.features_ray import extract_on_ray, read_texts

    if side not in ("left", "right") or engine_name not in ("local", "ray"):
        raise ConfigError(
            f"unknown side '{side}' or engine '{engine_name}'",
            fix="--side is left or right, --engine local or ray",
        )
    texts = read_texts(texts_file)
    options = _backbone_options(locals())
    cache = _cache(features_cache)
    features = Features(load_backbone(backbone, True, **options), cache, batch_size)
    missing = len(features.missing("texts", texts, max_length, side=side))
    if engine_name == "ray":
        extract_on_ray(
            features,
            backbone,
            options,
            "texts",
            texts,
            max_length,
            workers=workers,
            address=ray_address,
            progress=progress,
            side=side,
        )
    else:
        features.precompute("texts", texts, max_length, progress, side=side)
    _print({"texts": len(texts), "computed": missing, "cache": str(cache), "engine": engine_name})


JUDGE_BACKBONE_HELP = (
    "'tfidf' (TF-IDF + logistic regression over --views: seconds on a CPU, the measured "
    "stronger one), 'embedded' (a head over the embedded Gemma's frozen states) or a local "
    "transformers model directory"
)
JUDGE_VIEWS_HELP = (
    "the tfidf judge's views, comma-separated: chars (character n-grams; alone, the classic "
    "baseline), morphemes (Kiwi), words, sentence (the bundled sentence encoder); default: "
    "chars,morphemes for the implicit judge, chars,morphemes,sentence for consistency"
)
DATA_DIR = typer.Argument(
    ...,
    help="the shared corpora folder (detox/kda_ko.csv, slang/, lexicon/, neutral/); "
    "see docs/trained-judges.md",
)
KDA_HOLDOUT = typer.Option(
    0.1,
    help="K/DA neutral sentences held out for measuring (the rule and default of "
    "'detox train --test-share' and 'detox offensiveness-data --kda-holdout')",
)
LIMIT = typer.Option(None, min=1, help="at most N training items per label")
TEST_LIMIT = typer.Option(None, min=1, help="at most N test items per label in each test set")


def _train_kda_judge(task: str, values: dict) -> None:
    """Train the ``task`` judge from a command's option ``values`` (its ``locals()``)."""
    from rolecall.train.kda_judges import TFIDF, train_judge

    backbone, config, cache, settings = values["backbone"], None, None, None
    if backbone == TFIDF and values["views"]:
        settings = {"views": [v.strip() for v in values["views"].split(",") if v.strip()]}
    elif backbone != TFIDF:
        backbone, config, cache = _backbone_training(values)
    metrics = train_judge(
        task,
        values["data_dir"],
        values["out_dir"],
        backbone,
        holdout=values["kda_holdout"],
        seed=values["seed"],
        limit=values["limit"],
        test_limit=values["test_limit"],
        settings=settings,
        config=config,
        baseline=values["baseline"],
        progress=values["progress"],
        cache_dir=cache,
    )
    _print(metrics)


def _kda_judge_command(task: str, summary: str):
    """The ``train TASK-judge`` command: both K/DA judges take the same options."""

    def command(
        data_dir: Path = DATA_DIR,
        out_dir: Path = typer.Option(..., "--out", "-o", help="model directory to write"),
        backbone: str = typer.Option("tfidf", help=JUDGE_BACKBONE_HELP),
        views: Optional[str] = typer.Option(None, help=JUDGE_VIEWS_HELP),
        frozen: Optional[bool] = FROZEN,
        layer: Optional[int] = LAYER,
        kda_holdout: float = KDA_HOLDOUT,
        limit: Optional[int] = LIMIT,
        test_limit: Optional[int] = TEST_LIMIT,
        baseline: bool = typer.Option(
            True, help="also measure the classic baseline (character n-gram TF-IDF) on the split"
        ),
        epochs: int = typer.Option(10, min=1),
        batch_size: int = BATCH,
        lr: float = LR,
        backbone_lr: float = BACKBONE_LR,
        max_steps: Optional[int] = MAX_STEPS,
        seed: int = SEED,
        features_cache: Optional[Path] = CACHE,
        progress: bool = PROGRESS,
    ):
        _train_kda_judge(task, locals())

    command.__doc__ = summary
    return command


train_app.command("implicit-judge")(
    _kda_judge_command(
        "implicit", "K/DA implicit-offensiveness judge: a sentence -> implicit / none / explicit."
    )
)
train_app.command("consistency-judge")(
    _kda_judge_command(
        "consistency",
        "K/DA pair-consistency judge: (neutral, candidate) -> maintained / shifted.",
    )
)


def unanswerable_command(
    examples: Path = typer.Argument(..., help="held-out examples JSONL (positives used)"),
    reranker_dir: Path = typer.Option(..., "--reranker", help="from 'train reranker'"),
    index_dir: Path = typer.Option(
        ..., "--index", help="a candidate index (from 'train retriever') for hard negatives"
    ),
    methods: str = typer.Option("mc-dropout,ppl", help="mc-dropout and/or ppl"),
    model: Optional[str] = typer.Option(
        None, "--model", "-m", help="the LM of the ppl method (default: the embedded model)"
    ),
    share: float = typer.Option(0.5, help="golds replaced by hard negatives (App. C)"),
    passes: int = typer.Option(20, min=2, help="MC dropout passes"),
    limit: Optional[int] = typer.Option(None, min=2, help="first N positives only"),
    roc: Optional[Path] = typer.Option(None, help="save the ROC curves here (PNG)"),
    seed: int = SEED,
    features_cache: Optional[Path] = CACHE,
):
    """Unanswerable contexts: build the Appendix C validation set, calibrate each method's
    threshold at its max-F1 point, report F1 and ROC AUC (and plot the ROC curves)."""
    from rolecall.llm import LLM, load_backend
    from rolecall.llm.cache import open_cache
    from rolecall.serve.candidates import CandidateIndex
    from rolecall.serve.unanswerable import (
        MCDropoutDetector,
        PerplexityDetector,
        compare_detectors,
        validation_items,
    )
    from rolecall.train.data import read_examples, selection_pairs
    from rolecall.train.reranker import Reranker

    wanted = [m.strip() for m in methods.split(",") if m.strip()]
    unknown = sorted(set(wanted) - {"mc-dropout", "ppl"})
    if unknown or not wanted:
        raise ConfigError(
            f"unknown method(s) {unknown or methods!r}",
            fix="use mc-dropout, ppl or both (comma-separated)",
        )
    pairs = selection_pairs(read_examples(examples))[:limit]
    index = CandidateIndex.load(index_dir)

    def hard_negatives(context: str, gold: str, k: int) -> list[str]:
        return [text for _, text, _ in index.search([context], k + 1)[0] if text != gold][:k]

    items = validation_items(pairs, hard_negatives, share, seed)
    detectors = []
    if "mc-dropout" in wanted:
        reranker = Reranker.load(reranker_dir, _cache(features_cache))
        detectors.append(MCDropoutDetector(reranker, passes, seed))
    if "ppl" in wanted:
        scorer = LLM(load_backend(model), open_cache(settings_file.cache_path()))
        detectors.append(PerplexityDetector(scorer))
    results = compare_detectors(detectors, items, roc)
    _print(
        {
            "items": len(items),
            "unanswerable": sum(i["label"] for i in items),
            "roc_png": str(roc) if roc else None,
            **results,
        }
    )


@train_app.command("generator")
def train_generator_command(
    examples: Path = typer.Argument(
        ..., help="examples JSONL (positives; negatives for the unlikelihood term)"
    ),
    out_dir: Path = typer.Option(..., "--out", "-o", help="model directory to write"),
    base: str = typer.Option(
        "embedded",
        help="'embedded' (Gemma 3 270M through transformers) or a local causal LM directory",
    ),
    alpha: float = typer.Option(
        field_default(GeneratorSettings, "alpha"),
        min=0.0,
        help="weight of the unlikelihood term on negatives; 0 trains by MLE alone",
    ),
    lora_r: int = typer.Option(field_default(GeneratorSettings, "lora_r"), min=1),
    lora_alpha: int = typer.Option(field_default(GeneratorSettings, "lora_alpha"), min=1),
    target_modules: str = typer.Option(
        field_default(GeneratorSettings, "target_modules"),
        help="LoRA targets: all-linear or module names, comma-separated",
    ),
    max_length: int = typer.Option(
        field_default(GeneratorSettings, "max_length"), min=16, help="prompt + response tokens"
    ),
    test_share: float = typer.Option(0.1, help="dialogues held out for perplexity"),
    epochs: int = typer.Option(GENERATOR_TRAINING.epochs, min=1),
    batch_size: int = typer.Option(GENERATOR_TRAINING.batch_size, min=1),
    lr: float = typer.Option(GENERATOR_TRAINING.lr, help="the adapters' learning rate"),
    max_steps: Optional[int] = MAX_STEPS,
    seed: int = SEED,
    progress: bool = PROGRESS,
    checkpoint_every: float = CHECKPOINT_EVERY,
):
    """Generator: LoRA on a causal LM, MLE on positives + alpha x unlikelihood on negatives."""
    from rolecall.train.generator import train_generator

    settings = validated(
        GeneratorSettings,
        alpha=alpha,
        lora_r=lora_r,
        lora_alpha=lora_alpha,
        target_modules=target_modules,
        max_length=max_length,
    )
    config = train_config(locals())
    identity = {**settings.model_dump(), "base": base}
    checkpoints = checkpoints_in(out_dir, checkpoint_every, identity)
    trained = train_generator(
        examples, out_dir, base, settings, config, test_share, progress, checkpoints
    )
    _print(trained)


@train_app.command("export")
def export_command(
    model_dir: Path = typer.Argument(..., help="a generator or detox model directory"),
    target: Path = typer.Argument(..., help="new directory to write"),
    adapter: bool = typer.Option(
        False,
        "--adapter/--merged",
        help="the LoRA adapter with its base named, or merged weights (default)",
    ),
):
    """Export a generator or detox model for transformers / vLLM: merged weights (a plain
    model directory) or the LoRA adapter with its base model's path."""
    from rolecall.train.detox_model import DetoxModel
    from rolecall.train.generator import KIND, Generator

    kind = _model_kind(model_dir)
    model_type = Generator if kind == KIND else DetoxModel
    model = model_type.load(model_dir)
    written = model.export(target, merged=not adapter)
    _print(
        {
            "kind": kind,
            "export": "adapter" if adapter else "merged",
            "path": str(written),
            "base": model.base_path(),
        }
    )


def _model_kind(model_dir: Path) -> str:
    from rolecall.errors import InputFileError

    path = model_dir / "model.json"
    try:
        kind = json.loads(path.read_text(encoding="utf-8")).get("kind")
    except (OSError, json.JSONDecodeError):
        raise InputFileError(
            model_dir,
            "has no readable model.json: not a trained model",
            fix="point at a directory from 'rolecall train generator' or 'rolecall detox train'",
        ) from None
    if kind not in ("generator", "detox"):
        raise InputFileError(
            model_dir,
            f"holds a {kind} model: only generator and detox models are exported",
            fix="the selection models (classifier, "
            "retriever, reranker) are used from their directories",
        )
    return kind
