"""``rolecall train ...``: the dialogue models from example files (thin commands).

Each command trains one model on a JSONL file of ``Example`` records, saves it to
``--out`` (``model.json``, the head, the backbone or a reference to it) and prints its
numbers for a person (every number, as JSON, in ``OUT/metrics.json``). ``--backbone`` is
``embedded`` (the embedded Gemma, frozen: its hidden states are cached under
``--features-cache`` so a second model on the same data is fast; the classifier instead
tunes its top layers, ``EMBEDDED_DEFAULTS``) or a local transformers model directory
(trained whole unless ``--frozen``).

``implicit-judge`` and ``consistency-judge`` train the K/DA judges from the shared corpora
folder instead (``cli/train_judges.py``). The options every command shares are declared
once, from the settings types (``cli/option_groups.py``); ``--config FILE`` gives them
from a YAML file (``cli/config_file.py``).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal, Optional

import typer

from rolecall.cli.common import (
    FEATURES_CACHE_OPTION,
    PROGRESS_OPTION,
    RAY_ADDRESS_OPTION,
    Engine,
    field_default,
)
from rolecall.cli.config_file import CONFIG_FILE_OPTION
from rolecall.cli.option_groups import (
    JOB_OPTIONS,
    backbone_options,
    choice_of,
    config_of,
    group,
    job_of,
    setting_options,
    settings_of,
    training_options,
    with_options,
)
from rolecall.cli.train_judges import kda_judge_command
from rolecall.cli.train_options import (
    BACKBONE_HELP,
    CLASSIFIER_BACKBONE_HELP,
    FEATURE_WORKERS,
    FEATURES_ENGINE,
    LAYER,
    OUT_DIR,
    RETRIEVER_BACKBONE_HELP,
    print_metrics,
    report_training,
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


CLASSIFIER_OPTIONS = setting_options(
    ClassifierSettings, "max_length", "class_weights", class_weights=Literal["none", "balanced"]
)
CLASSIFIER_EPOCHS = group(
    epochs=(
        Optional[int],
        typer.Option(
            None,
            min=1,
            help=f"passes (default: {CLASSIFIER_TRAINING.epochs} when backbone layers train, "
            f"or as many as make {CLASSIFIER_TRAINING.min_steps} steps; "
            f"{FROZEN_CLASSIFIER_EPOCHS} for a frozen backbone)",
        ),
    )
)


@train_app.command("classifier")
@with_options(
    backbone_options(DEFAULT_BACKBONE["classifier"], CLASSIFIER_BACKBONE_HELP),
    CLASSIFIER_OPTIONS,
    CLASSIFIER_EPOCHS,
    training_options(CLASSIFIER_TRAINING),
    JOB_OPTIONS,
)
def train_classifier_command(
    examples: Path = typer.Argument(..., help="examples JSONL (positives and negatives)"),
    out_dir: Path = OUT_DIR,
    lexical: Optional[bool] = typer.Option(
        None,
        "--lexical/--no-lexical",
        help="also character TF-IDF + LR over the response; P(out) is the mean of both "
        "(default: on for a backbone; measured in docs/models.md); --no-lexical: the head "
        "alone",
        show_default=False,
    ),
    test_share: float = typer.Option(0.1, help="dialogues held out for the metrics"),
    **given,
):
    """Out-of-bounds classifier: [CLS] history [SEP] response -> in / out of bounds."""
    from rolecall.train import jobs
    from rolecall.train.lexical_classifier import BACKBONE as LEXICAL_BACKBONE

    if given["backbone"] == LEXICAL_BACKBONE:  # no backbone: seconds, no training options
        from rolecall.train.lexical_classifier import train_lexical_classifier

        if lexical is not None:
            raise ConfigError(
                "--lexical/--no-lexical say whether a classifier over a backbone adds "
                "TF-IDF; --backbone tfidf is TF-IDF already",
                fix="leave --lexical/--no-lexical out, or name a backbone",
            )
        metrics = train_lexical_classifier(examples, out_dir, test_share, given["seed"])
        report_training("classifier", metrics, out_dir)
        return
    if lexical is None:
        lexical = field_default(ClassifierSettings, "lexical")
    settings = settings_of(ClassifierSettings, CLASSIFIER_OPTIONS, given, lexical=lexical)
    choice = choice_of(given)
    config = config_of(given, functools.partial(jobs.classifier_config, choice))
    metrics = jobs.classifier(
        job_of(examples, out_dir, given), choice, settings, config, test_share
    )
    report_training("classifier", metrics, out_dir)


RETRIEVER_OPTIONS = setting_options(RetrieverSettings, "codes")
RETRIEVER_BACKBONE_LR = group(
    backbone_lr=(
        Optional[float],
        typer.Option(
            None,
            help="a trainable (or tuned) backbone's learning rate [default: 3e-4 where the "
            "sentence encoder's top is tuned by default, else 2e-5]",
        ),
    )
)


@train_app.command("retriever")
@with_options(
    backbone_options(DEFAULT_BACKBONE["retriever"], RETRIEVER_BACKBONE_HELP),
    RETRIEVER_OPTIONS,
    RETRIEVER_BACKBONE_LR,
    training_options(RETRIEVER_TRAINING),
    JOB_OPTIONS,
)
def train_retriever_command(
    examples: Path = typer.Argument(..., help="examples JSONL (its positives are used)"),
    out_dir: Path = OUT_DIR,
    kind: Optional[Literal["poly", "bi", "residual"]] = typer.Option(
        None,
        help="poly (poly-encoder), bi (bi-encoder) or residual (the sentence encoder's "
        "cosine with trained residual maps) [default: residual for --backbone sentence, "
        "else poly]",
    ),
    index: bool = typer.Option(
        True,
        help="also build the candidate index (FAISS) of "
        "the unique positive responses in OUT/candidates",
    ),
    **given,
):
    """Poly-encoder or bi-encoder retriever, trained with in-batch negatives."""
    from rolecall.serve.candidates import index_examples
    from rolecall.train import jobs

    kind = retriever_kind(given["backbone"], kind)
    settings = settings_of(RetrieverSettings, RETRIEVER_OPTIONS, given, kind=kind)
    choice = choice_of(given)
    config = config_of(given, functools.partial(jobs.retriever_config, choice))
    job = job_of(examples, out_dir, given)
    metrics = jobs.retriever(job, choice, settings, config)
    if index:
        built = index_examples(out_dir, examples, job.cache(), given["progress"])
        metrics["candidate_index"] = str(built.path)
    report_training("retriever", metrics, out_dir)


RERANKER_OPTIONS = setting_options(RerankerSettings, "negatives", "interaction")


@train_app.command("reranker")
@with_options(
    backbone_options(DEFAULT_BACKBONE["reranker"], BACKBONE_HELP),
    RERANKER_OPTIONS,
    training_options(RERANKER_TRAINING),
    JOB_OPTIONS,
)
def train_reranker_command(
    examples: Path = typer.Argument(..., help="examples JSONL (its positives are used)"),
    out_dir: Path = OUT_DIR,
    hard_negatives: Optional[Path] = typer.Option(
        None, help="a candidate index (from 'train retriever') to mine hard negatives"
    ),
    test_share: float = typer.Option(0.1, help="dialogues held out for Hits@1/K"),
    **given,
):
    """Reranker: the target against random (or retriever-mined) negatives."""
    from rolecall.serve.candidates import hard_negative_miner
    from rolecall.train import jobs

    settings = settings_of(RerankerSettings, RERANKER_OPTIONS, given)
    progress = given["progress"]
    mined = None if hard_negatives is None else hard_negative_miner(hard_negatives, progress)
    job = job_of(examples, out_dir, given)
    metrics = jobs.reranker(job, choice_of(given), settings, config_of(given), mined, test_share)
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


train_app.command("implicit-judge")(
    kda_judge_command(
        "implicit", "K/DA implicit-offensiveness judge: a sentence -> implicit / none / explicit."
    )
)
train_app.command("consistency-judge")(
    kda_judge_command(
        "consistency",
        "K/DA pair-consistency judge: (neutral, candidate) -> maintained / shifted.",
    )
)


GENERATOR_OPTIONS = setting_options(
    GeneratorSettings, "alpha", "lora_r", "lora_alpha", "target_modules", "max_length"
)


@train_app.command("generator")
@with_options(
    GENERATOR_OPTIONS,
    training_options(GENERATOR_TRAINING, "epochs", "batch_size", "lr", "max_steps", "seed"),
    [p for p in JOB_OPTIONS if p.name in ("progress", "checkpoint_every")],
)
def train_generator_command(
    examples: Path = typer.Argument(
        ..., help="examples JSONL (positives; negatives for the unlikelihood term)"
    ),
    out_dir: Path = OUT_DIR,
    base: str = typer.Option(
        "embedded",
        help="'embedded' (Gemma 3 270M through transformers) or a local causal LM directory",
    ),
    test_share: float = typer.Option(0.1, help="dialogues held out for perplexity"),
    **given,
):
    """Generator: LoRA on a causal LM, MLE on positives + alpha x unlikelihood on negatives."""
    from rolecall.train import jobs

    settings = settings_of(GeneratorSettings, GENERATOR_OPTIONS, given)
    job = jobs.Job(
        examples, out_dir, progress=given["progress"], checkpoint_every=given["checkpoint_every"]
    )
    metrics = jobs.generator(job, base, settings, config_of(given), test_share)
    report_training("generator", metrics, out_dir)


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
