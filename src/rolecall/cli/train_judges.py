"""``rolecall train implicit-judge`` and ``consistency-judge``: the K/DA judges trained
from the shared corpora folder (``train/kda_judges.py``; default backbone ``tfidf``, the
measured stronger one on a CPU: ``docs/trained-judges.md``). ``cli/train.py`` registers
them."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rolecall.cli.option_groups import (
    JOB_OPTIONS,
    backbone_options,
    choice_of,
    config_of,
    training_options,
    with_options,
)
from rolecall.cli.train_options import OUT_DIR, report_training
from rolecall.train.settings import TrainConfig

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


def kda_judge_command(task: str, summary: str):
    """The ``train TASK-judge`` command: both K/DA judges take the same options."""

    @with_options(
        backbone_options("tfidf", JUDGE_BACKBONE_HELP, tune=False),
        training_options(TrainConfig(epochs=10)),
        [p for p in JOB_OPTIONS if p.name in ("features_cache", "progress")],
    )
    def command(
        data_dir: Path = DATA_DIR,
        out_dir: Path = OUT_DIR,
        views: Optional[str] = typer.Option(None, help=JUDGE_VIEWS_HELP),
        kda_holdout: float = KDA_HOLDOUT,
        limit: Optional[int] = LIMIT,
        test_limit: Optional[int] = TEST_LIMIT,
        baseline: bool = typer.Option(
            True, help="also measure the classic baseline (character n-gram TF-IDF) on the split"
        ),
        **given,
    ):
        from rolecall.train import jobs

        seed = given["seed"]
        data = jobs.JudgeData(data_dir, kda_holdout, seed, limit, test_limit, baseline)
        chosen = [v.strip() for v in views.split(",") if v.strip()] if views else None
        metrics = jobs.kda_judge(
            task,
            data,
            out_dir,
            choice_of(given),
            chosen,
            config_of(given),
            given["features_cache"],
            given["progress"],
        )
        report_training(f"{task} judge", metrics, out_dir)

    command.__doc__ = summary
    return command
