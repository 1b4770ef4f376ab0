"""``rolecall detox train / rewrite / score / offensiveness-data``: the detoxification
model (the K/DA pairs it learns from are ``rolecall kda``).

``train`` fine-tunes LoRA adapters offensive -> neutral on a K/DA CSV (``neutral,implicit``),
holds out a share of the neutral sentences and reports the loss and the held-out chrF and
BLEU of greedy rewrites against the references. ``rewrite`` reads one sentence a line from a
file or stdin and writes one neutral rewrite a line (or JSONL with ``--jsonl``); given a K/DA
CSV it rewrites the implicit sentences and keeps the neutral ones as references. ``score``
measures such a JSONL: chrF and BLEU against the references (next to copying the input) and
the offensive rate before and after by an offensiveness classifier, which
``offensiveness-data`` + ``rolecall train classifier`` build from the shared corpora.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Literal, Optional

import typer

from rolecall.cli.common import (
    CHECKPOINT_EVERY,
    PROGRESS_OPTION,
    TRAIN_SEED_OPTION,
    batch_size_option,
    epochs_option,
    err,
    field_default,
    field_help,
    json_output_file,
    lora_r_option,
    out,
    out_directory,
    setting_option,
    validated,
)
from rolecall.cli.config_file import CONFIG_FILE_OPTION
from rolecall.cli.kda import (
    kda_export,
    kda_filter,
    kda_generate,
    kda_run,
    kda_safety_examples,
)
from rolecall.errors import InputFileError
from rolecall.train.jobs import DETOX_EVAL_LIMIT
from rolecall.train.settings import DETOX_TRAINING, DetoxSettings, TrainConfig

detox_app = typer.Typer(
    help="The detox model: implicitly offensive -> neutral rewrites (train, rewrite, score, "
    "offensiveness-data). The K/DA pairs it learns from: rolecall kda.",
    no_args_is_help=True,
)


def _renamed(command, name: str):
    """``rolecall detox NAME`` for the K/DA commands that are ``rolecall kda NAME`` now: the
    same command, with a line that says so (hidden from the help; gone next release)."""

    @functools.wraps(command)
    def old_name(*args, **kwargs):
        err.print(
            f"note: 'rolecall detox {name}' is now 'rolecall kda {name}' (the K/DA data "
            "pipeline); the old name goes in the next release",
            markup=False,
            highlight=False,
        )
        return command(*args, **kwargs)

    return old_name


for _name, _command in (
    ("generate", kda_generate),
    ("filter", kda_filter),
    ("export", kda_export),
    ("run", kda_run),
    ("safety-examples", kda_safety_examples),
):
    detox_app.command(_name, hidden=True, deprecated=True)(_renamed(_command, _name))

COPY_BIAS_HELP = field_help(DetoxSettings, "copy_bias") + " (copy-aware)"
MIN_LENGTH_HELP = field_help(DetoxSettings, "min_length_ratio")


def train_command(
    pairs: Path = typer.Argument(..., help="K/DA CSV: neutral,implicit"),
    out_dir: Path = typer.Option(
        ..., "--out", "-o", callback=out_directory, help="model directory to write"
    ),
    base: str = typer.Option("embedded", help="'embedded' or a local causal LM directory"),
    language: Literal["ko", "en"] = typer.Option(
        field_default(DetoxSettings, "language"), help="of the detoxify prompt: ko or en"
    ),
    test_share: float = typer.Option(0.1, help="neutral sentences held out"),
    limit: Optional[int] = typer.Option(
        None, min=1, help="first N training pairs only (default: all of them)"
    ),
    eval_limit: int = typer.Option(
        DETOX_EVAL_LIMIT,
        min=0,
        help="held-out sentences rewritten for chrF/BLEU (greedy, the slow part); 0: none",
    ),
    epochs: int = epochs_option(DETOX_TRAINING.epochs),
    batch_size: int = batch_size_option(DETOX_TRAINING.batch_size),
    lr: float = typer.Option(DETOX_TRAINING.lr, help="the paper's"),
    lora_r: int = lora_r_option(field_default(DetoxSettings, "lora_r"), "; alpha: twice this"),
    max_steps: Optional[int] = setting_option(TrainConfig, "max_steps"),
    seed: int = TRAIN_SEED_OPTION,
    engine: Literal["transformers", "llamacpp"] = typer.Option(
        "transformers", help="of the held-out rewriting: transformers or llamacpp (faster)"
    ),
    copy_bias: float = typer.Option(
        field_default(DetoxSettings, "copy_bias"), help=COPY_BIAS_HELP + " (saved as default)"
    ),
    min_length_ratio: float = typer.Option(
        field_default(DetoxSettings, "min_length_ratio"),
        min=0.0,
        help=MIN_LENGTH_HELP + " (saved as default)",
    ),
    progress: bool = PROGRESS_OPTION,
    checkpoint_every: float = CHECKPOINT_EVERY,
    config_file: Optional[Path] = CONFIG_FILE_OPTION,
):
    """Detox model: LoRA instruction tuning, implicitly offensive -> neutral."""
    from rolecall.train import jobs

    where = base if base == "embedded" else str(Path(base).expanduser().resolve())
    settings = validated(
        DetoxSettings,
        base=where,
        language=language,
        lora_r=lora_r,
        lora_alpha=2 * lora_r,
        copy_bias=copy_bias,
        min_length_ratio=min_length_ratio,
    )
    config = validated(
        TrainConfig, epochs=epochs, batch_size=batch_size, lr=lr, max_steps=max_steps, seed=seed
    )
    job = jobs.Job(pairs, out_dir, progress=progress, checkpoint_every=checkpoint_every)
    _, metrics = jobs.detox(job, base, settings, config, test_share, limit, eval_limit, engine)
    out.print(json.dumps(metrics, ensure_ascii=False), highlight=False)


def rewrite_command(
    model_dir: Path = typer.Argument(..., help="from 'rolecall detox train'"),
    source: Path = typer.Argument(
        Path("-"), help="one sentence a line ('-' = stdin), or a K/DA CSV (neutral,implicit)"
    ),
    jsonl: bool = typer.Option(
        False, help="JSON lines {input, output[, reference]} instead of text (always on for a CSV)"
    ),
    limit: Optional[int] = typer.Option(None, min=1, help="first N sentences only"),
    max_new_tokens: int = typer.Option(64, min=1, help="longest rewrite, in tokens"),
    engine: Literal["transformers", "llamacpp"] = typer.Option(
        "transformers",
        help="transformers, or llamacpp: the embedded GGUF with the adapter as a GGUF LoRA "
        "(models on the embedded base; several times faster on a CPU)",
    ),
    copy_bias: Optional[float] = typer.Option(
        None, help=COPY_BIAS_HELP + " (default: the model's)"
    ),
    min_length_ratio: Optional[float] = typer.Option(
        None, min=0.0, help=MIN_LENGTH_HELP + " (default: the model's)"
    ),
    progress: bool = typer.Option(True, help="a progress bar on stderr (for a file)"),
):
    """Rewrite offensive sentences as neutral ones (greedy), one per input line."""
    from rolecall.formats.kda import read_kda_csv
    from rolecall.textfiles import input_lines
    from rolecall.train.detox_model import DetoxModel, rewriter

    model = DetoxModel.load(model_dir) if engine == "transformers" else None
    rewrite = rewriter(model, model_dir, engine, _keep(model_dir, copy_bias, min_length_ratio))
    if source.suffix == ".csv":
        pairs = read_kda_csv(source)[:limit]
        lines, references, jsonl = [p.toxic for p in pairs], [p.neutral for p in pairs], True
    else:
        lines, references = input_lines(source)[:limit], None
    shown = progress and str(source) != "-"
    for i, output in enumerate(rewrite(lines, max_new_tokens, shown)):
        row = {"input": lines[i], "output": output}
        if references is not None:
            row["reference"] = references[i]
        print(json.dumps(row, ensure_ascii=False) if jsonl else output, flush=True)


def _keep(model_dir: Path, copy_bias: float | None, min_length_ratio: float | None):
    """The model's saved decoding with what the command line overrides (None: all its own)."""
    if copy_bias is None and min_length_ratio is None:
        return None
    from rolecall.train.generator import read_model_settings
    from rolecall.train.keep_content import KeepContent
    from rolecall.train.settings import DetoxSettings

    saved = KeepContent.of(
        read_model_settings(model_dir, "detox", "rolecall detox train", DetoxSettings)
    )
    return KeepContent(
        saved.copy_bias if copy_bias is None else copy_bias,
        saved.min_length_ratio if min_length_ratio is None else min_length_ratio,
    )


def read_rewrites(path: Path) -> list[dict]:
    """Rows of a ``rewrite --jsonl`` file: ``input`` and ``output`` (text), ``reference``
    optional but then on every row."""
    from rolecall.jsonl import read_jsonl

    rows = list(read_jsonl(path))
    for number, row in enumerate(rows, 1):
        if not (
            isinstance(row, dict)
            and isinstance(row.get("input"), str)
            and isinstance(row.get("output"), str)
        ):
            raise InputFileError(
                path,
                f'line {number} is not {{"input": text, "output": text}}',
                fix="score the JSONL of 'rolecall detox rewrite'",
            )
    if not rows:
        raise InputFileError(
            path,
            "holds no rewrites",
            fix="write it with 'rolecall detox rewrite MODEL FILE --jsonl'",
        )
    with_reference = sum(isinstance(r.get("reference"), str) for r in rows)
    if 0 < with_reference < len(rows):
        raise InputFileError(
            path,
            f"only {with_reference} of {len(rows)} rows have a reference",
            fix="give every row a reference, or none",
        )
    return rows


def score_command(
    rewrites: Path = typer.Argument(..., help="JSONL from 'rolecall detox rewrite'"),
    judge: Optional[Path] = typer.Option(
        None,
        help="an offensiveness classifier "
        "('rolecall train classifier' on "
        "'rolecall detox offensiveness-data')",
    ),
    features_cache: Optional[Path] = typer.Option(
        None, help="states of a frozen backbone kept here"
    ),
):
    """Score rewrites: chrF and BLEU against the references, offensive rate before/after."""
    from rolecall.eval.offensiveness import offensive_rate

    rows = read_rewrites(rewrites)
    inputs, outputs = [r["input"] for r in rows], [r["output"] for r in rows]
    metrics: dict = {"rewrites": len(rows)}
    if "reference" in rows[0]:
        from rolecall.eval.overlap import against_copying

        metrics |= against_copying(inputs, outputs, [r["reference"] for r in rows])
    if judge is not None:
        from rolecall.train.classifier import Classifier

        classifier = Classifier.load(judge, features_cache)
        before, after = offensive_rate(classifier, inputs), offensive_rate(classifier, outputs)
        metrics |= {
            "offensive_rate_input": round(before, 3),
            "offensive_rate_output": round(after, 3),
        }
    out.print(json.dumps(metrics, ensure_ascii=False), highlight=False)


def offensiveness_data_command(
    data_dir: Path = typer.Argument(
        ...,
        help="the shared corpora (slang/"
        "beep_labeled_train.tsv, slang/"
        "curse_detection.txt, detox/kda_ko.csv)",
    ),
    out_file: Path = typer.Option(
        ..., "--out", "-o", help="examples JSONL to write", callback=json_output_file
    ),
    kda_holdout: float = typer.Option(
        0.1,
        min=0.0,
        max=0.9,
        help="K/DA neutral sentences kept out (the same split as 'detox train --test-share')",
    ),
    per_source: Optional[int] = typer.Option(None, min=1, help="at most N per corpus"),
    seed: int = typer.Option(0, help="as given to 'detox train'"),
):
    """Examples for an offensiveness classifier from BEEP!, Curse-detection and K/DA."""
    from rolecall.eval.offensiveness import offensiveness_examples
    from rolecall.formats.kda import read_kda_csv
    from rolecall.jsonl import write_jsonl
    from rolecall.train.detox_model import split_pairs

    pairs = read_kda_csv(data_dir / "detox" / "kda_ko.csv")
    train = split_pairs(pairs, kda_holdout, seed)[0] if kda_holdout > 0 else pairs
    examples = offensiveness_examples(data_dir, train, per_source, seed)
    write_jsonl(out_file, examples)
    offensive = sum(e.label == "negative" for e in examples)
    out.print(
        json.dumps(
            {
                "examples": len(examples),
                "offensive": offensive,
                "kda_pairs_used": len(train),
                "out": str(out_file),
            },
            ensure_ascii=False,
        ),
        highlight=False,
    )


detox_app.command("train")(train_command)
detox_app.command("rewrite")(rewrite_command)
detox_app.command("score")(score_command)
detox_app.command("offensiveness-data")(offensiveness_data_command)
