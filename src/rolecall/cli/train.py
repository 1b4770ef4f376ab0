"""``rolecall train ...``: the dialogue models from example files (thin commands).

Each command trains one model on a JSONL file of ``Example`` records, saves it to
``--out`` (``model.json``, the head, the backbone or a reference to it) and prints its
numbers for a person (every number, as JSON, in ``OUT/metrics.json``). ``--backbone`` is
``embedded`` (the embedded Gemma, frozen: its hidden states are cached under
``--features-cache`` so a second model on the same data is fast; the classifier instead
tunes its top layers, ``EMBEDDED_DEFAULTS``) or a local transformers model directory
(trained whole unless ``--frozen``).

``implicit-judge`` and ``consistency-judge`` train the K/DA judges from the shared corpora
folder instead (``train/kda_judges.py``; default backbone ``tfidf``, the measured stronger
one on a CPU: ``docs/trained-judges.md``).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal, Optional

import typer

from rolecall.cli.common import (
    CHECKPOINT_EVERY,
    FEATURES_CACHE_OPTION,
    PROGRESS_OPTION,
    RAY_ADDRESS_OPTION,
    TRAIN_SEED_OPTION,
    Engine,
    batch_size_option,
    epochs_option,
    field_default,
    lora_r_option,
    setting_option,
    validated,
)
from rolecall.cli.config_file import CONFIG_FILE_OPTION
from rolecall.cli.train_options import (
    BACKBONE_HELP,
    BACKBONE_LR,
    BATCH,
    CLASSIFIER_BACKBONE_HELP,
    FEATURE_WORKERS,
    FEATURES_ENGINE,
    FROZEN,
    LAYER,
    LR,
    MAX_STEPS,
    OUT_DIR,
    RETRIEVER_BACKBONE_HELP,
    TUNE_LAYERS,
    print_metrics,
    report_training,
    train_config,
    training_job,
)
from rolecall.errors import ConfigError
from rolecall.train.backbones.base import DEFAULT_BACKBONE
from rolecall.train.settings import (
    CLASSIFIER_TRAINING,
    FROZEN_CLASSIFIER_EPOCHS,
    GENERATOR_TRAINING,
    RERANKER_TRAINING,
    RETRIEVER_TRAINING,
    ClassifierSettings,
    GeneratorSettings,
    RerankerSettings,
    RetrieverSettings,
    TrainConfig,
    retriever_kind,
)

train_app = typer.Typer(
    help="Train the dialogue models (NAACL 2022, section 4): out-of-bounds "
    "classifier, retriever, reranker, generator; and the K/DA judges.",
    no_args_is_help=True,
)


@train_app.command("classifier")
def train_classifier_command(
    examples: Path = typer.Argument(..., help="examples JSONL (positives and negatives)"),
    out_dir: Path = OUT_DIR,
    backbone: str = typer.Option(DEFAULT_BACKBONE["classifier"], help=CLASSIFIER_BACKBONE_HELP),
    frozen: Optional[bool] = FROZEN,
    layer: Optional[int] = LAYER,
    tune_layers: Optional[int] = TUNE_LAYERS,
    max_length: int = typer.Option(
        field_default(ClassifierSettings, "max_length"),
        min=8,
        help="tokens of history + response; the history is cut from the left",
    ),
    class_weights: Literal["none", "balanced"] = typer.Option(
        field_default(ClassifierSettings, "class_weights"), help="none or balanced"
    ),
    lexical: Optional[bool] = typer.Option(
        None,
        "--lexical/--no-lexical",
        help="also character TF-IDF + LR over the response; P(out) is the mean of both "
        "(default: on for a backbone; measured in docs/models.md); --no-lexical: the head "
        "alone",
        show_default=False,
    ),
    test_share: float = typer.Option(0.1, help="dialogues held out for the metrics"),
    epochs: Optional[int] = typer.Option(
        None,
        min=1,
        help=f"passes (default: {CLASSIFIER_TRAINING.epochs} when backbone layers train, or "
        f"as many as make {CLASSIFIER_TRAINING.min_steps} steps; {FROZEN_CLASSIFIER_EPOCHS} "
        "for a frozen backbone)",
    ),
    batch_size: int = batch_size_option(CLASSIFIER_TRAINING.batch_size),
    lr: float = LR,
    backbone_lr: float = typer.Option(
        CLASSIFIER_TRAINING.backbone_lr, help="a trainable (or tuned) backbone's learning rate"
    ),
    max_steps: Optional[int] = MAX_STEPS,
    seed: int = TRAIN_SEED_OPTION,
    features_cache: Optional[Path] = FEATURES_CACHE_OPTION,
    progress: bool = PROGRESS_OPTION,
    engine_name: Engine = FEATURES_ENGINE,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = FEATURE_WORKERS,
    checkpoint_every: float = CHECKPOINT_EVERY,
    config_file: Optional[Path] = CONFIG_FILE_OPTION,
):
    """Out-of-bounds classifier: [CLS] history [SEP] response -> in / out of bounds."""
    from rolecall.train import jobs
    from rolecall.train.lexical_classifier import BACKBONE as LEXICAL_BACKBONE

    if backbone == LEXICAL_BACKBONE:  # no backbone: seconds, and no training options apply
        from rolecall.train.lexical_classifier import train_lexical_classifier

        if lexical is not None:
            raise ConfigError(
                "--lexical/--no-lexical say whether a classifier over a backbone adds "
                "TF-IDF; --backbone tfidf is TF-IDF already",
                fix="leave --lexical/--no-lexical out, or name a backbone",
            )
        report_training(
            "classifier", train_lexical_classifier(examples, out_dir, test_share, seed), out_dir
        )
        return
    if lexical is None:
        lexical = field_default(ClassifierSettings, "lexical")
    settings = validated(
        ClassifierSettings, max_length=max_length, class_weights=class_weights, lexical=lexical
    )
    choice = jobs.BackboneChoice(backbone, frozen, layer, tune_layers)
    make = functools.partial(jobs.classifier_config, choice)  # its passes follow the choice
    config = train_config(epochs, batch_size, lr, backbone_lr, max_steps, seed, make)
    job = training_job(examples, out_dir, features_cache, progress, engine_name, ray_address,
                       workers, checkpoint_every)  # fmt: skip
    report_training(
        "classifier", jobs.classifier(job, choice, settings, config, test_share), out_dir
    )


@train_app.command("retriever")
def train_retriever_command(
    examples: Path = typer.Argument(..., help="examples JSONL (its positives are used)"),
    out_dir: Path = OUT_DIR,
    kind: Optional[Literal["poly", "bi", "residual"]] = typer.Option(
        None,
        help="poly (poly-encoder), bi (bi-encoder) or residual (the sentence encoder's "
        "cosine with trained residual maps) [default: residual for --backbone sentence, "
        "else poly]",
    ),
    codes: int = setting_option(RetrieverSettings, "codes", min=1),
    backbone: str = typer.Option(DEFAULT_BACKBONE["retriever"], help=RETRIEVER_BACKBONE_HELP),
    frozen: Optional[bool] = FROZEN,
    layer: Optional[int] = LAYER,
    tune_layers: Optional[int] = TUNE_LAYERS,
    index: bool = typer.Option(
        True,
        help="also build the candidate index (FAISS) of "
        "the unique positive responses in OUT/candidates",
    ),
    epochs: int = epochs_option(RETRIEVER_TRAINING.epochs),
    batch_size: int = BATCH,
    lr: float = LR,
    backbone_lr: Optional[float] = typer.Option(
        None,
        help="a trainable (or tuned) backbone's learning rate [default: 3e-4 where the "
        "sentence encoder's top is tuned by default, else 2e-5]",
    ),
    max_steps: Optional[int] = MAX_STEPS,
    seed: int = TRAIN_SEED_OPTION,
    features_cache: Optional[Path] = FEATURES_CACHE_OPTION,
    progress: bool = PROGRESS_OPTION,
    engine_name: Engine = FEATURES_ENGINE,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = FEATURE_WORKERS,
    checkpoint_every: float = CHECKPOINT_EVERY,
    config_file: Optional[Path] = CONFIG_FILE_OPTION,
):
    """Poly-encoder or bi-encoder retriever, trained with in-batch negatives."""
    from rolecall.serve.candidates import index_examples
    from rolecall.train import jobs

    settings = validated(RetrieverSettings, kind=retriever_kind(backbone, kind), codes=codes)
    choice = jobs.BackboneChoice(backbone, frozen, layer, tune_layers)
    make = functools.partial(jobs.retriever_config, choice)  # a tuned top's learning rate
    config = train_config(epochs, batch_size, lr, backbone_lr, max_steps, seed, make)
    job = training_job(examples, out_dir, features_cache, progress, engine_name, ray_address,
                       workers, checkpoint_every)  # fmt: skip
    metrics = jobs.retriever(job, choice, settings, config)
    if index:
        built = index_examples(out_dir, examples, job.cache(), progress)
        metrics["candidate_index"] = str(built.path)
    report_training("retriever", metrics, out_dir)


@train_app.command("reranker")
def train_reranker_command(
    examples: Path = typer.Argument(..., help="examples JSONL (its positives are used)"),
    out_dir: Path = OUT_DIR,
    negatives: int = setting_option(RerankerSettings, "negatives", min=1),
    interaction: Literal["joint", "attention", "auto"] = typer.Option(
        field_default(RerankerSettings, "interaction"),
        help="joint: each pair through the backbone (cross-encoder); attention: "
        "a cross-attention head over separately computed states (fast on a CPU); auto: "
        "attention for a frozen backbone, joint for a trainable one",
    ),
    hard_negatives: Optional[Path] = typer.Option(
        None, help="a candidate index (from 'train retriever') to mine hard negatives"
    ),
    backbone: str = typer.Option(DEFAULT_BACKBONE["reranker"], help=BACKBONE_HELP),
    frozen: Optional[bool] = FROZEN,
    layer: Optional[int] = LAYER,
    tune_layers: Optional[int] = TUNE_LAYERS,
    test_share: float = typer.Option(0.1, help="dialogues held out for Hits@1/K"),
    epochs: int = epochs_option(RERANKER_TRAINING.epochs),
    batch_size: int = BATCH,
    lr: float = LR,
    backbone_lr: float = BACKBONE_LR,
    max_steps: Optional[int] = MAX_STEPS,
    seed: int = TRAIN_SEED_OPTION,
    features_cache: Optional[Path] = FEATURES_CACHE_OPTION,
    progress: bool = PROGRESS_OPTION,
    engine_name: Engine = FEATURES_ENGINE,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = FEATURE_WORKERS,
    checkpoint_every: float = CHECKPOINT_EVERY,
    config_file: Optional[Path] = CONFIG_FILE_OPTION,
):
    """Reranker: the target against random (or retriever-mined) negatives."""
    from rolecall.serve.candidates import hard_negative_miner
    from rolecall.train import jobs

    settings = validated(RerankerSettings, negatives=negatives, interaction=interaction)
    mined = None if hard_negatives is None else hard_negative_miner(hard_negatives, progress)
    choice = jobs.BackboneChoice(backbone, frozen, layer, tune_layers)
    config = train_config(epochs, batch_size, lr, backbone_lr, max_steps, seed)
    job = training_job(examples, out_dir, features_cache, progress, engine_name, ray_address,
                       workers, checkpoint_every)  # fmt: skip
    metrics = jobs.reranker(job, choice, settings, config, mined, test_share)
    report_training("reranker", metrics, out_dir)


@train_app.command("features")
def features_command(
    texts_file: Path = typer.Argument(..., help="UTF-8 text file: one text a line"),
    backbone: str = typer.Option(
        DEFAULT_BACKBONE["features"],
        help="'embedded' or a local transformers model directory (frozen here)",
    ),
    layer: Optional[int] = LAYER,
    max_length: int = typer.Option(
        64, min=4, help="tokens kept of a text (a retriever's candidates: 64; contexts: 256 left)"
    ),
    side: Literal["right", "left"] = typer.Option(
        "right", help="where a longer text is cut: right or left"
    ),
    batch_size: int = typer.Option(
        field_default(TrainConfig, "batch_size"), min=1, help="texts through the backbone at once"
    ),
    features_cache: Optional[Path] = FEATURES_CACHE_OPTION,
    progress: bool = PROGRESS_OPTION,
    engine_name: Engine = FEATURES_ENGINE,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = FEATURE_WORKERS,
    config_file: Optional[Path] = CONFIG_FILE_OPTION,
):
    """Fill the features cache with a frozen backbone's states of many texts (blank lines
    skipped), here or as a Ray Data job (--engine ray); only the missing ones are computed."""
    from rolecall.train import jobs
    from rolecall.train.backbones.features import Features
    from rolecall.train.backbones.load import load_backbone
    from rolecall.train.features_ray import extract_on_ray, read_texts

    if side not in ("left", "right") or engine_name not in jobs.ENGINES:
        raise ConfigError(
            f"unknown side '{side}' or engine '{engine_name}'",
            fix="--side is left or right, --engine local or ray",
        )
    texts = read_texts(texts_file)
    options = jobs.BackboneChoice(backbone, True, layer).load_options(None)
    cache = jobs.features_cache(features_cache)
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
    print_metrics(
        {"texts": len(texts), "computed": missing, "cache": str(cache), "engine": engine_name}
    )


JUDGE_BACKBONE_HELP = (
    "'tfidf' (TF-IDF + logistic regression over --views: seconds on a CPU, the measured "
    "stronger one), 'embedded' (a head over the embedded Gemma's frozen states) or a local "
    "transformers model directory"
)
JUDGE_VIEWS_HELP = (
    "the tfidf judge's views, comma-separated: chars (character n-grams; alone, the classic "
    "baseline), morphemes (Kiwi), words, sentence (the bundled sentence encoder), e5 "
    "(multilingual-e5-small), content "
    "(pairs: the content morphemes the rewrite adds and drops); default: chars,morphemes "
    "for the implicit judge, chars,morphemes,sentence,content for consistency"
)


def _data_folder(path: Path) -> Path:
    """The shared corpora folder (a typer callback): a file there is a usage error."""
    if path.is_file():
        raise typer.BadParameter(
            f"{path} is a file: give the folder that holds detox/kda_ko.csv, slang/, lexicon/ "
            "and neutral/ (e.g. ../shared/data)"
        )
    return path


DATA_DIR = typer.Argument(
    ...,
    callback=_data_folder,
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


def _kda_judge_command(task: str, summary: str):
    """The ``train TASK-judge`` command: both K/DA judges take the same options."""

    def command(
        data_dir: Path = DATA_DIR,
        out_dir: Path = OUT_DIR,
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
        epochs: int = epochs_option(10),
        batch_size: int = BATCH,
        lr: float = LR,
        backbone_lr: float = BACKBONE_LR,
        max_steps: Optional[int] = MAX_STEPS,
        seed: int = TRAIN_SEED_OPTION,
        features_cache: Optional[Path] = FEATURES_CACHE_OPTION,
        progress: bool = PROGRESS_OPTION,
        config_file: Optional[Path] = CONFIG_FILE_OPTION,
    ):
        from rolecall.train import jobs

        data = jobs.JudgeData(data_dir, kda_holdout, seed, limit, test_limit, baseline)
        chosen = [v.strip() for v in views.split(",") if v.strip()] if views else None
        choice = jobs.BackboneChoice(backbone, frozen, layer)
        config = train_config(epochs, batch_size, lr, backbone_lr, max_steps, seed)
        metrics = jobs.kda_judge(
            task, data, out_dir, choice, chosen, config, features_cache, progress
        )
        report_training(f"{task} judge", metrics, out_dir)

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


@train_app.command("generator")
def train_generator_command(
    examples: Path = typer.Argument(
        ..., help="examples JSONL (positives; negatives for the unlikelihood term)"
    ),
    out_dir: Path = OUT_DIR,
    base: str = typer.Option(
        "embedded",
        help="'embedded' (Gemma 3 270M through transformers) or a local causal LM directory",
    ),
    alpha: float = setting_option(GeneratorSettings, "alpha", min=0.0),
    lora_r: int = lora_r_option(field_default(GeneratorSettings, "lora_r")),
    lora_alpha: int = typer.Option(
        field_default(GeneratorSettings, "lora_alpha"),
        min=1,
        help="the LoRA adapters' update is scaled by alpha / rank",
    ),
    target_modules: str = typer.Option(
        field_default(GeneratorSettings, "target_modules"),
        help="LoRA targets: all-linear or module names, comma-separated",
    ),
    max_length: int = setting_option(GeneratorSettings, "max_length", min=16),
    test_share: float = typer.Option(0.1, help="dialogues held out for perplexity"),
    epochs: int = epochs_option(GENERATOR_TRAINING.epochs),
    batch_size: int = batch_size_option(GENERATOR_TRAINING.batch_size),
    lr: float = typer.Option(GENERATOR_TRAINING.lr, help="the adapters' learning rate"),
    max_steps: Optional[int] = MAX_STEPS,
    seed: int = TRAIN_SEED_OPTION,
    progress: bool = PROGRESS_OPTION,
    checkpoint_every: float = CHECKPOINT_EVERY,
    config_file: Optional[Path] = CONFIG_FILE_OPTION,
):
    """Generator: LoRA on a causal LM, MLE on positives + alpha x unlikelihood on negatives."""
    from rolecall.train import jobs

    settings = validated(
        GeneratorSettings,
        alpha=alpha,
        lora_r=lora_r,
        lora_alpha=lora_alpha,
        target_modules=target_modules,
        max_length=max_length,
    )
    config = validated(
        TrainConfig, epochs=epochs, batch_size=batch_size, lr=lr, max_steps=max_steps, seed=seed
    )
    job = jobs.Job(examples, out_dir, progress=progress, checkpoint_every=checkpoint_every)
    report_training("generator", jobs.generator(job, base, settings, config, test_share), out_dir)


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
    from rolecall.train.loop import exportable_kind

    kind = exportable_kind(model_dir)
    model_type = Generator if kind == KIND else DetoxModel
    model = model_type.load(model_dir)
    written = model.export(target, merged=not adapter)
    print_metrics(
        {
            "kind": kind,
            "export": "adapter" if adapter else "merged",
            "path": str(written),
            "base": model.base_path(),
        }
    )
