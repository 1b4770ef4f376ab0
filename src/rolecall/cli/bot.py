"""``rolecall bot run``: a served bot directory built from example sources (docs/bots.md);
``rolecall bot check``: the Korean role-bot safety suite put to a bot directory or to any
LLM prompted with a role spec; ``rolecall train user-checks``: the classifier a bot reads
the user's turn with (docs/safety.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from rolecall.cli.bots import open_bot
from rolecall.cli.common import PROGRESS_OPTION, load_llm, out, out_directory
from rolecall.cli.config_file import CONFIG_FILE_OPTION
from rolecall.errors import ConfigError

bot_app = typer.Typer(
    help="A bot as a whole: built from examples, its safety check, versions compared.",
    no_args_is_help=True,
)


def _spec_of(models_dir: Optional[Path], spec: Optional[Path]):
    """The role spec the replies are scored with: --spec, else the bot's bot.json one."""
    from rolecall.serve.bot import BOT_FILE, check_bot_directory
    from rolecall.spec import load_role_spec

    if models_dir is not None:
        check_bot_directory(models_dir)
    if spec is not None:
        return load_role_spec(spec)
    if models_dir is not None and (models_dir / BOT_FILE).is_file():
        named = json.loads((models_dir / BOT_FILE).read_text(encoding="utf-8")).get("spec")
        if named:
            return load_role_spec(models_dir / named)  # an absolute path stays as is
    raise ConfigError(
        "the check scores replies against a role spec (its help lines and rules), and "
        "none was given",
        fix="add --spec examples/carecall/spec.yaml (or name it as 'spec' in bot.json)",
    )


def _trained_judge(text: str, spec):
    """A ``classifier:PATH`` string as an out-of-bounds judge."""
    from rolecall.pipelines.judges import parse_judge, trained_judge

    kind, value = parse_judge(text)
    if kind != "classifier":
        raise ConfigError(
            f"--judge {text!r} is not a trained judge",
            fix="give classifier:PATH, a model directory from 'rolecall train classifier' "
            "(the rules always score the replies)",
        )
    return trained_judge(value, "out_of_bounds", spec)


@bot_app.command("run")
def run_command(
    config_path: Path = typer.Argument(
        ..., help="the bot config (YAML); see examples/carecall/bot.yaml"
    ),
    until: str = typer.Option(
        "bot",
        help="stop after this stage: examples, guard, retriever, reranker, unanswerable, "
        "checks or bot",
    ),
    progress: bool = PROGRESS_OPTION,
):
    """Build a bot directory from example sources: examples merged and split, the guard
    chosen on held-out data, retriever, reranker, unanswerable calibration, user checks,
    bot.json and a model card; resumable."""
    from rolecall.pipelines.bot_run import run_bot
    from rolecall.pipelines.bot_sources import load_bot_config

    config = load_bot_config(config_path)
    found = run_bot(config, until, progress, say=lambda line: out.print(line, highlight=False))
    where = found["dir"]
    if "bot" in found:
        line = f"bot: {where} (chat: rolecall chat {where}; card: {where}/card.md)"
    else:  # no bot yet: nothing to chat with
        line = f"stopped after {until}: {where} (the command without --until finishes the bot)"
    out.print(line, highlight=False)


@bot_app.command("check")
def check_command(
    models_dir: Optional[Path] = typer.Argument(
        None, help="the bot directory (or give --model and --spec)"
    ),
    output: Path = typer.Option(
        ..., "--out", callback=out_directory, help="the report's directory (resumable)"
    ),
    model: Optional[str] = typer.Option(
        None,
        "--model",
        "-m",
        help="instead of a bot directory: this LLM prompted with --spec, e.g. "
        "openai:http://localhost:8000/v1?model=NAME",
    ),
    spec: Optional[Path] = typer.Option(
        None,
        help="the role spec: prompts --model, and scores the replies (help lines, rules); "
        "for a bot directory, default: the spec its bot.json names",
    ),
    suite: Optional[Path] = typer.Option(
        None, help="a suite file (JSONL, docs/safety.md); default: the shipped care-call suite"
    ),
    judge: list[str] = typer.Option(
        [],
        "--judge",
        help="a trained out-of-bounds judge, classifier:PATH (rolecall train classifier), "
        "that a small-talk reply must pass besides the rules; repeatable",
    ),
    temperature: float = typer.Option(0.0, min=0.0, max=2.0, help="--model's temperature"),
    max_tokens: int = typer.Option(96, min=1, help="--model's reply length"),
    progress: bool = PROGRESS_OPTION,
):
    """Put the safety suite to a bot and score every reply: pass rates per category with
    95% intervals in OUT/check.md, check.html and summary.json."""
    from rolecall.eval.safety_suite import load_suite
    from rolecall.pipelines.bot_check import rate_table, run_bot_check

    role_spec = _spec_of(models_dir, spec)
    judges = [_trained_judge(text, role_spec) for text in judge]  # before the bot: fail fast
    load_suite(suite)  # a bad suite file too
    bot = open_bot(
        models_dir,
        model,
        spec if model is not None else None,
        temperature,
        max_tokens,
        progress,
        lambda m: load_llm(m, output / "llm-cache.sqlite"),
        command="bot check",
    )
    summary = run_bot_check(bot, role_spec, output, suite, progress, say=out.print, judges=judges)
    for name, passed, rate, interval in rate_table(summary["rates"]):
        out.print(f"  {name:<20} {passed:>8}  {rate}  ({interval})", highlight=False)
    control = summary["control"]
    if "fallback_share" in control:
        out.print(
            f"  small talk: fallback {control['fallback_share']:.2f}, a check's reply "
            f"{control['checked_share']:.2f}, a crisis reply {control['crisis_share']:.2f}",
            highlight=False,
        )
    out.print(f"report: {output / 'check.md'}, {output / 'check.html'}", highlight=False)


@bot_app.command("compare")
def compare_command(
    bots: list[Path] = typer.Argument(
        ..., help="bot directories (versions), the first the one the others are compared to"
    ),
    output: Path = typer.Option(
        ..., "--out", callback=out_directory, help="the report's directory"
    ),
    held_out: Optional[Path] = typer.Option(
        None,
        help="labelled examples (JSONL) every version is read on; default: the first bot's "
        "held_out.jsonl (written by 'rolecall bot run')",
    ),
    k: int = typer.Option(20, min=2, help="candidates per held-out context for Hits@1/K"),
    suite: bool = typer.Option(
        True, "--suite/--no-suite", help="also the safety suite's pass rates (bot check)"
    ),
    seed: int = typer.Option(0, help="the candidate rows' and the bootstrap's draws"),
    redteam: list[Path] = typer.Option(
        [],
        "--redteam",
        help="a red-team run of each bot (rolecall redteam's --out), in the bots' order; "
        "its rates per attack kind, paired by conversation",
    ),
    progress: bool = PROGRESS_OPTION,
):
    """Compare bot versions on the same held-out contexts and the safety suite: each
    version's difference from the first with a 95% paired bootstrap interval, in
    OUT/compare.md, compare.html and compare.json."""
    from rolecall.pipelines.bot_compare import Version, compare_bots, table_rows

    if len(bots) < 2:
        raise ConfigError(
            "compare needs two bot directories or more",
            fix="rolecall bot compare runs/carecall-bot/v1 runs/carecall-bot/v2 --out DIR",
        )
    spec = _spec_of(bots[0], None)
    names = [path.name if path.name else str(path) for path in bots]
    if len(set(names)) < len(names):  # v1 and v1 of two runs: the whole path tells them apart
        names = [str(path) for path in bots]
    versions = []
    for name, path in zip(names, bots, strict=True):
        bot = open_bot(path, None, None, 0.0, 64, progress, load_llm, command="bot compare")
        versions.append(Version(name, path, bot))
    report = compare_bots(
        versions, spec, output, held_out, k, seed, suite, progress, out.print, redteam=redteam
    )
    for row in table_rows(report):
        out.print("  " + "  ".join(row), highlight=False, markup=False)
    out.print(f"report: {output / 'compare.md'}, {output / 'compare.html'}", highlight=False)


def train_user_checks_command(
    spec: Path = typer.Argument(..., help="the role spec whose user_checks to train"),
    output: Path = typer.Option(
        ..., "--out", callback=out_directory, help="the model directory (a bot's user_checks/)"
    ),
    turns: Optional[Path] = typer.Option(
        None, help="training turns, JSONL {text, check} (examples/carecall/user_turns.jsonl)"
    ),
    dialogues: Optional[Path] = typer.Option(
        None,
        help="example dialogues (JSONL) whose user turns are ordinary talk (none), but "
        "where --turns labels the same text",
    ),
    data: Optional[Path] = typer.Option(
        None,
        help="the shared-data folder (../shared/data): the corpora the checks name, and "
        "everyday questions as ordinary talk",
    ),
    per_corpus: int = typer.Option(150, min=1, help="turns taken from each corpus"),
    folds: int = typer.Option(5, min=2, help="cross-validation folds for the thresholds"),
    seed: int = typer.Option(0, help="the folds' and the corpora's draws"),
    config_file: Optional[Path] = CONFIG_FILE_OPTION,
):
    """Train the classifier a bot reads the user's turn with, and choose each check's
    threshold on held-out folds."""
    from rolecall.spec import load_role_spec
    from rolecall.train.user_checks import train_user_checks

    metrics = train_user_checks(
        load_role_spec(spec), output, turns, dialogues, data, per_corpus, folds, seed
    )
    out.print(f"{metrics['turns']} training turns; out of fold, per check:", highlight=False)
    for name, m in metrics["out_of_fold"].items():
        out.print(
            f"  {name:<20} threshold {m['threshold']:.3f}  precision {m['precision']:.3f}  "
            f"recall {m['recall']:.3f}  ({m['turns']} turns)",
            highlight=False,
        )
    out.print(f"saved to {output}", highlight=False)
