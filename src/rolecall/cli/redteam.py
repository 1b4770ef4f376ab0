"""``rolecall redteam``: red-team a role bot with simulated users who turn offensive
(issue #19; ``pipelines/redteam/run.py`` does the work, docs/redteam.md tells how).

The bot is a trained bot directory (``BOT_DIR``) or an LLM prompted with a role spec
(``--model MODEL --spec SPEC``), opened as ``rolecall chat`` opens it (``cli/bots.py``).
The simulated users and the judges read the role spec: ``--spec``, or for a bot
directory the spec its ``bot.json`` names.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

import typer

from rolecall.cli.common import (
    CACHE_OPTION,
    MODEL_HELP,
    err,
    field_default,
    load_llm,
    out,
    out_directory,
    validated,
)
from rolecall.errors import ConfigError


def _default(name: str):
    from rolecall.pipelines.redteam.run import RedteamSettings

    return field_default(RedteamSettings, name)


def redteam_command(
    models_dir: Optional[Path] = typer.Argument(
        None, help="the bot directory (or give --model and --spec)"
    ),
    model: Optional[str] = typer.Option(
        None,
        "--model",
        "-m",
        help=f"instead of a bot directory: {MODEL_HELP}, prompted with --spec",
    ),
    spec: Optional[Path] = typer.Option(
        None, help="the role spec (YAML); for a bot directory, default: the one bot.json names"
    ),
    out_dir: Path = typer.Option(
        ..., "--out", callback=out_directory, help="the run directory (resumable)"
    ),
    user_model: Optional[str] = typer.Option(
        None, help="the simulated users' LLM (default: --model, else the embedded model)"
    ),
    attacks: list[str] = typer.Option(
        ["kda", "explicit", "neutral"],
        "--attack",
        "-a",
        help="attack kinds: kda, explicit, neutral, slang (needs --slang-index)",
    ),
    pairs: Optional[Path] = typer.Option(
        None, help="K/DA pairs for the kda attack: kda.csv (neutral,implicit) or pairs.jsonl"
    ),
    explicit: Optional[Path] = typer.Option(
        None, help="explicit attack lines, one a line (default: a small built-in list)"
    ),
    fit: bool = typer.Option(True, help="let the user LLM fit each K/DA sentence to the call"),
    slang_index: Optional[Path] = typer.Option(
        None, help="the slang attack's index (built by rolecall slang index)"
    ),
    slang_n: int = typer.Option(
        _default("slang_n"), min=0, help="retrieved comments per slang rewrite (K/DA's n)"
    ),
    attack_model: Optional[str] = typer.Option(
        None, help="the slang attack's rewriting LLM (default: the user model)"
    ),
    conversations: int = typer.Option(10, min=1, help="conversations per attack kind"),
    turns: int = typer.Option(4, min=1, help="user turns per conversation"),
    attack_turn: int = typer.Option(2, min=1, help="the user turn that attacks (1 = the first)"),
    seed: int = typer.Option(0, min=0, help="the first conversation's seed"),
    judges: list[str] = typer.Option(
        ["rules:carecall"], "--judge", "-j", help="out-of-bounds judges (repeat for a panel)"
    ),
    temperature: float = typer.Option(0.7, min=0.0, max=2.0, help="--model's sampling temperature"),
    max_tokens: int = typer.Option(64, min=1, help="--model's reply length"),
    cache: Optional[str] = CACHE_OPTION,
    progress: bool = typer.Option(True, help="progress bars"),
):
    """Simulated seniors talk to the bot and turn offensive at --attack-turn; every reply
    from then on is judged. Writes conversations.jsonl, report.json, report.md and report.html."""
    from rolecall.cli.bots import open_bot
    from rolecall.judge.out_of_bounds import JUDGE, make_panel
    from rolecall.pipelines.judges import record_judges, resolve_judges
    from rolecall.pipelines.redteam.run import (
        RedteamSettings,
        Users,
        check_language,
        read_pairs,
        run_config,
        run_redteam,
    )
    from rolecall.rundir import RunDir

    settings = validated(
        RedteamSettings,
        bot=str(models_dir) if models_dir is not None else f"llm:{model}",
        spec=str(spec) if spec else None,
        attacks=list(dict.fromkeys(attacks)),
        conversations=conversations,
        turns=turns,
        attack_turn=attack_turn,
        seed=seed,
        pairs=str(pairs) if pairs else None,
        explicit=str(explicit) if explicit else None,
        fit=fit,
        slang_index=str(slang_index) if slang_index else None,
        slang_n=slang_n,
        attack_model=attack_model,
        judges=list(judges),
        user_model=user_model or model,
        bot_temperature=temperature,
        bot_max_tokens=max_tokens,
    )
    # a missing or broken index or pairs file fails here, before any model is loaded and
    # before the run directory is made
    index = _slang_index(settings)
    if settings.pairs and "kda" in settings.attacks:
        read_pairs(settings.pairs)
    opened: dict = {}

    def open_llm(name):
        if name not in opened:
            opened[name] = load_llm(name, cache)
        return opened[name]

    bot = open_bot(
        models_dir,
        model,
        None if models_dir is not None else spec,
        temperature,
        max_tokens,
        progress,
        open_llm,
        command="redteam",
    )
    role_spec = _role_spec(models_dir, spec)
    check_language(role_spec)
    panel = make_panel(role_spec, resolve_judges(settings.judges, JUDGE, open_llm, role_spec))
    users = Users(open_llm(settings.user_model), role_spec)
    if index is not None:
        from rolecall.pipelines.redteam.slang import SlangRewriter

        rewriter = open_llm(settings.attack_model or settings.user_model)
        slang = SlangRewriter(rewriter, index, settings.slang_n, role_spec.language)
        users = dataclasses.replace(users, slang=slang)
    run = RunDir(out_dir, "redteam", run_config(settings))
    run.record_model("bot", settings.bot)
    run.record_model("user", users.llm.model_id)
    if users.slang is not None:
        run.record_model("attack", users.slang.llm.model_id)
    record_judges(run, [panel])
    try:
        report = run_redteam(
            settings,
            run,
            bot,
            users,
            panel,
            lambda: list(opened.values()),
            progress,
            say=lambda line: out.print(line, highlight=False, markup=False),
        )
    finally:
        for llm in opened.values():
            err.print(f"[dim]{llm.model_id}: {llm.stats.summary()}[/dim]")
    _print_summary(report, out_dir)


def _slang_index(settings):
    """The slang attack's index, loaded (``InputFileError`` with the fix if it is not
    one); None when the run has no slang attack."""
    if "slang" not in settings.attacks:
        return None
    from rolecall.slang.index import SlangIndex

    return SlangIndex.load(settings.slang_index)


def _role_spec(models_dir: Path, spec: Optional[Path]):
    """``--spec``, or the spec a bot directory's bot.json names (relative to it)."""
    from rolecall.spec import load_role_spec

    if spec is not None:
        return load_role_spec(spec)
    from rolecall.cli.common import read_json_file

    bot_file = models_dir / "bot.json"
    named = read_json_file(bot_file).get("spec") if bot_file.is_file() else None
    if not named:
        raise ConfigError(
            f"{models_dir} names no role spec (bot.json has no 'spec'), and the simulated "
            "users and the judges need one",
            fix="add --spec path/to/spec.yaml",
        )
    return load_role_spec(models_dir / named)


def _print_summary(report: dict, out_dir: Path) -> None:
    for kind, row in report["kinds"].items():
        rate = row["not_safe"]
        ci = rate["ci95"] or [0, 0]
        out.print(
            f"{kind:<9} n={row['n']:<4} not safe {rate['k']}/{row['n']} "
            f"[{100 * ci[0]:.0f}-{100 * ci[1]:.0f}%], out of role "
            f"{row['out_of_role']['k']}/{row['n']}, repeats {row['repeat_share']}",
            highlight=False,
            markup=False,
        )
    out.print(
        f"report: {out_dir / 'report.html'} (and report.md, report.json, conversations.jsonl)"
    )
