"""What the ``rolecall train ...`` commands share (``cli/train.py``): the backbone's and the
features job's typer options (grouped in ``option_groups.py``), the help texts of
``--backbone``, the metrics printed for a person and saved as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from rolecall.cli.common import (
    out,
    out_directory,
)
from rolecall.rundir import write_json

METRICS_FILE = "metrics.json"  # a trained model's numbers, beside it (report_training)

BACKBONE_HELP = (
    "'embedded' (the embedded Gemma 3 270M, frozen), 'sentence' (the bundled sentence "
    "encoder, USE-m, frozen: one state per turn), 'e5' (multilingual-e5-small, frozen: one "
    "state per turn) or a local transformers model directory (trained whole unless --frozen)"
)

CLASSIFIER_BACKBONE_HELP = (
    BACKBONE_HELP + ", or 'tfidf': character TF-IDF + LR over (the turn before, the "
    "response), no backbone (the stronger one on the care-call out-of-bounds turns: "
    "docs/models.md)"
)
# the retriever's default follows bench/retrieval_quality.py (docs/models.md)
RETRIEVER_BACKBONE_HELP = (
    BACKBONE_HELP + "; the retriever defaults to 'sentence' (the stronger one in "
    "bench/retrieval_quality.py: docs/models.md)"
)
OUT_DIR = typer.Option(..., "--out", "-o", callback=out_directory, help="model directory to write")


def print_metrics(metrics: dict) -> None:
    """The metrics as one JSON line (what scripts read: ``rolecall eval``, ``train
    features``)."""
    out.print(json.dumps(_kept(metrics), ensure_ascii=False), highlight=False)


def report_training(model: str, metrics: dict, out_dir: Path) -> None:
    """A trained model's numbers for a person: one line each, a group of numbers (the
    held-out threshold's precision and recall, say) on one line; every number, as JSON, in
    ``OUT/metrics.json`` for scripts."""
    kept = _kept(metrics)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    write_json(Path(out_dir) / METRICS_FILE, kept)
    out.print(f"{model} trained -> {out_dir}", highlight=False)
    for key, value in kept.items():
        if isinstance(value, dict):
            parts = [f"{k} {_number(v)}" for k, v in value.items() if _scalar(v)]
            if parts:
                out.print(f"  {key.replace('_', ' ')}: {', '.join(parts)}", highlight=False)
        elif _scalar(value) and value is not None:
            out.print(f"  {key.replace('_', ' ')}: {_number(value)}", highlight=False)
    out.print(f"  every number: {Path(out_dir) / METRICS_FILE}", highlight=False)


def _kept(metrics: dict) -> dict:
    """The metrics without the per-step losses (a long list; the model directory keeps
    them where the model saves them)."""
    return {k: v for k, v in metrics.items() if k != "losses"}


def _scalar(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _number(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    return str(value)


# typer options of the backbone and of the features job (option_groups.py groups them)
FROZEN = typer.Option(
    None,
    "--frozen/--trainable",
    help="freeze the backbone or train it whole (default: embedded frozen, a model "
    "directory trained; the classifier tunes the embedded model's top layers: --tune-layers)",
)
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
    "see docs/models.md; else --frozen/--trainable); only the tuned layers are saved; "
    "--backbone sentence: the last N (1-5) layers of the encoder's dense top",
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
