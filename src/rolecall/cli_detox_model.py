"""``rolecall detox train`` and ``rolecall detox rewrite``: the detoxification model.

``train`` fine-tunes LoRA adapters offensive -> neutral on a K/DA CSV (``neutral,implicit``),
holds out a share of the neutral sentences and reports the loss and the held-out chrF of
greedy rewrites against the references. ``rewrite`` reads one sentence a line from a file
or stdin and writes one neutral rewrite a line (or JSONL with ``--jsonl``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from rolecall.errors import InputFileError

out = Console(soft_wrap=True)


def train_command(
        pairs: Path = typer.Argument(..., help="K/DA CSV: neutral,implicit"),
        out_dir: Path = typer.Option(..., "--out", "-o", help="model directory to write"),
        base: str = typer.Option("embedded", help="'embedded' or a local causal LM directory"),
        language: str = typer.Option("ko", help="of the detoxify prompt: ko or en"),
        test_share: float = typer.Option(0.1, help="neutral sentences held out"),
        limit: Optional[int] = typer.Option(None, min=1, help="first N training pairs only"),
        epochs: int = typer.Option(1, min=1), batch_size: int = typer.Option(4, min=1),
        lr: float = typer.Option(2e-4, help="the paper's"),
        lora_r: int = typer.Option(8, min=1), max_steps: Optional[int] = typer.Option(None),
        seed: int = typer.Option(0), progress: bool = typer.Option(True)):
    """Detox model: LoRA instruction tuning, implicitly offensive -> neutral."""
    from rolecall.cli_train import _settings
    from rolecall.eval.overlap import chrf
    from rolecall.formats.kda import read_kda_csv
    from rolecall.train.detox_model import DetoxModel, DetoxSettings, split_pairs
    from rolecall.train.loop import TrainConfig

    rows = read_kda_csv(pairs)
    if not rows:
        raise InputFileError(pairs, "holds no pairs", fix="give a K/DA CSV with rows")
    train, test = split_pairs(rows, test_share, seed) if test_share > 0 else (rows, [])
    train = train[:limit] if limit else train
    where = base if base == "embedded" else str(Path(base).expanduser().resolve())
    settings = _settings(DetoxSettings, base=where, language=language, lora_r=lora_r,
                         lora_alpha=2 * lora_r)
    model = DetoxModel.create(base, settings, seed)
    history = model.fit_pairs(train, TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr,
                                                 max_steps=max_steps, seed=seed), progress)
    metrics = {"train_pairs": len(train), "test_pairs": len(test), "steps": history["steps"],
               "first_loss": round(history["first_loss"], 4),
               "last_loss": round(history["last_loss"], 4)}
    if test:
        rewrites = model.rewrite([p.toxic for p in test])
        metrics["chrf"] = round(chrf(rewrites, [p.neutral for p in test]), 2)
        metrics["chrf_copy_input"] = round(chrf([p.toxic for p in test],
                                                [p.neutral for p in test]), 2)
    model.save(out_dir, metrics)
    out.print(json.dumps(metrics, ensure_ascii=False), highlight=False)


def rewrite_command(
        model_dir: Path = typer.Argument(..., help="from 'rolecall detox train'"),
        source: Path = typer.Argument(Path("-"), help="one sentence a line; '-' = stdin"),
        jsonl: bool = typer.Option(False, help="JSON lines {input, output} instead of text"),
        max_new_tokens: int = typer.Option(64, min=1)):
    """Rewrite offensive sentences as neutral ones (greedy), one per input line."""
    from rolecall.retrieval.clean import input_lines
    from rolecall.train.detox_model import DetoxModel

    model = DetoxModel.load(model_dir)
    lines = input_lines(source)
    for line, rewrite in zip(lines, model.rewrite(lines, max_new_tokens), strict=True):
        print(json.dumps({"input": line, "output": rewrite}, ensure_ascii=False) if jsonl
              else rewrite, flush=True)
