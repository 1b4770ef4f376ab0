"""The ``rolecall`` command. Thin: parse options, call a library function, print.

One module per command group (``llm``, ``dialogues``, ``slang``, ``kda``, ``detox``, ``train``,
``eval``, ``chat``, ``web``, ...); ``common`` holds what they share. Every
``RolecallError`` becomes a message with its fix and the error's exit code; other
exceptions are bugs and keep their traceback.
"""

from __future__ import annotations

import faulthandler
import logging
import shutil
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from typer import _coercion
from typer._display import get_error_msg as _display_error

from rolecall.cli.bot import bot_app, train_user_checks_command
from rolecall.cli.chat import chat_command
from rolecall.cli.common import (
    MODEL_HELP,
    PROGRESS_OPTION,
    err,
    load_llm,
    out,
    out_directory,
)
from rolecall.cli.detox import detox_app
from rolecall.cli.dialogues import dialogues_app
from rolecall.cli.eval import eval_app
from rolecall.cli.kda import kda_app
from rolecall.cli.llm import llm_app
from rolecall.cli.logs import logs_command
from rolecall.cli.redteam import redteam_command
from rolecall.cli.redteam_compare import redteam_compare_command
from rolecall.cli.slang import slang_app
from rolecall.cli.store import db_app, records_app, spec_app
from rolecall.cli.train import train_app
from rolecall.cli.web import serve_command, web_app
from rolecall.errors import RolecallError
from rolecall.interrupt import EXIT_CODE as INTERRUPTED_EXIT_CODE
from rolecall.interrupt import Interrupted
from rolecall.train.backbones.base import DEFAULT_BACKBONE

# the narrowest terminal on which rich draws every help without cutting a name or a URL
RICH_HELP_COLUMNS = 140

app = typer.Typer(
    help="rolecall: safe, role-specified Korean chatbots from LLM-made data.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(llm_app, name="llm")
app.add_typer(db_app, name="db")
app.add_typer(records_app, name="records")
app.add_typer(spec_app, name="spec")
app.add_typer(dialogues_app, name="dialogues")
app.add_typer(slang_app, name="slang")
app.add_typer(kda_app, name="kda")
app.add_typer(detox_app, name="detox")
app.add_typer(eval_app, name="eval")
app.add_typer(train_app, name="train")
train_app.command("user-checks")(train_user_checks_command)
app.add_typer(bot_app, name="bot")
app.command("chat")(chat_command)
app.command("serve")(serve_command)
app.add_typer(web_app, name="web")
app.command("logs")(logs_command)
app.command("redteam")(redteam_command)
app.command("redteam-compare")(redteam_compare_command)


def _print_version(given: bool) -> None:
    if given:
        from rolecall import __version__

        out.print(f"rolecall {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="debug logging"),
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="print rolecall's version and exit",
    ),
):
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


@app.command()
def demo(
    out_dir: Path = typer.Option(
        Path("runs/demo"),
        "--out",
        callback=out_directory,
        help="the run directory (resumable: a second run takes a minute or two)",
    ),
    model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
    dialogues: int = typer.Option(4, min=1, help="dialogues to generate"),
    sentences: int = typer.Option(4, min=1, help="neutral sentences for K/DA"),
    examples: Optional[Path] = typer.Option(
        None, help="the repository's examples/ folder (found by default)"
    ),
    backbone: str = typer.Option(
        DEFAULT_BACKBONE["bot"],
        help="of the retriever and reranker: 'sentence' or 'e5' (the bundled sentence "
        "encoders), 'embedded' (the Gemma's states) or a local model directory",
    ),
    data: Optional[Path] = typer.Option(
        None,
        help="the shared data folder: the corpora of the user checks and the K/DA judges' "
        "training data (default: ../shared/data beside the repository, when it is there)",
    ),
    progress: bool = PROGRESS_OPTION,
):
    """The main job end to end, small: spec -> dialogues -> judge -> examples -> classifier,
    retriever, reranker -> a scripted chat with the bot -> a K/DA run -> statistics."""
    from rolecall.pipelines.demo import DemoOptions, honest_note, run_demo

    options = DemoOptions(
        out=out_dir,
        examples=examples,
        model=model,
        dialogues=dialogues,
        sentences=sentences,
        backbone=backbone,
        data=data,
        progress=progress,
    )
    opened = []

    def load(cache_path: Path):
        opened.append(load_llm(model, cache_path))
        return opened[-1]

    summary = run_demo(
        options, load, say=lambda line: out.print(line, highlight=False, markup=False)
    )
    seconds = summary["seconds"]
    out.print("\n[bold]where everything is[/bold]")
    rows = [
        ("dialogue run (generated, judged, manifest)", summary["data"]["run"]),
        ("the bot's examples (training, held out)", f"{summary['chat']['bot']}/examples.jsonl"),
        ("bot (its parts, bot.json, card.md, manifest)", summary["chat"]["bot"]),
        ("chat transcript with scores", summary["chat"]["file"]),
        ("K/DA run (candidates, verdicts, kda.csv, manifest)", summary["kda"]["run"]),
        ("the report, one page", str(out_dir / "report.html")),
        ("Table 2 statistics", summary["stats"]["file"]),
        ("this summary", str(out_dir / "summary.json")),
    ]
    for what, where in rows:
        out.print(f"  {what:<50} {where}", highlight=False, markup=False)
    judges = {"dialogues": summary["data"]["judge"], "K/DA": summary["kda"]["judge"]}
    out.print(
        "judges: "
        + "; ".join(
            f"{run} {', '.join(f'{task} {judge}' for task, judge in tasks.items())}"
            for run, tasks in judges.items()
        ),
        highlight=False,
        markup=False,
    )
    out.print(
        f"\nmodel {summary['model']}; {seconds['total']:.0f} s in all ("
        + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items() if k != "total")
        + ")",
        highlight=False,
        markup=False,
    )
    for line in honest_note(summary):
        out.print(f"[yellow]note:[/yellow] {escape(line)}", highlight=False)
    for llm in opened:
        err.print(f"[dim]{llm.model_id}: {llm.stats.summary()}[/dim]")


@app.command()
def doctor(
    model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
    check: bool = typer.Option(True, help="make one real call to the model"),
):
    """Show installed backends, the embedded model, and check one model string."""
    from rolecall.doctor import run_doctor

    ok = run_doctor(out, model, check)
    raise typer.Exit(0 if ok else 1)


def _command() -> typer.core.TyperGroup:
    """The app as a click command; on a terminal narrower than ``RICH_HELP_COLUMNS`` with
    click's plain help and errors, which wrap at any width (rich's option table cuts long
    option names to "--consistency-…" there)."""
    command = typer.main.get_command(app)
    plain = shutil.get_terminal_size().columns < RICH_HELP_COLUMNS
    _help_style(command, plain)
    _coercion.get_error_msg = _choice_error
    return command


def _help_style(command: typer.core.TyperCommand | typer.core.TyperGroup, plain: bool) -> None:
    """Plain help below ``RICH_HELP_COLUMNS``; in rich help an on/off flag gets no
    ``<bool>`` in the type column (it takes no value)."""
    if plain:
        command.rich_markup_mode = None
    helped = command.get_help_option(typer.Context(command))  # made once, then kept
    for param in [*command.params, *([helped] if helped else [])]:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _help_style(sub, plain)


def _choice_error(exc) -> str:
    """typer's message for a value it refused, without pydantic's "Value error, " prefix
    (typer 0.29 shows a wrong choice as "Value error, 'x' is not one of ...")."""
    return _display_error(exc).removeprefix("Value error, ")


def run(argv: list[str] | None = None) -> None:
    """The command line on ``argv`` (default ``sys.argv[1:]``), as the ``rolecall`` command
    runs it: every ``RolecallError`` becomes its message, its fix and its exit code
    (``SystemExit``). The tests call this in-process; ``main`` adds the process set-up."""
    try:
        _command()(argv, prog_name="rolecall")
    except Interrupted:
        from rolecall.rundir import mark_interrupted

        where = ", ".join(str(path) for path in mark_interrupted())
        kept = f" in {where} (its manifest records the interruption)" if where else ""
        err.print(
            f"interrupted: every finished record is kept{kept}; "
            "run the same command again to resume",
            highlight=False,
            markup=False,
        )
        sys.exit(INTERRUPTED_EXIT_CODE)
    except RolecallError as exc:
        from rolecall.secrets import masked

        message = masked(exc.message)  # whatever URL or key the message quotes
        err.print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False)
        if exc.fix:
            err.print(f"[bold]fix:[/bold] {escape(masked(exc.fix))}", highlight=False)
        sys.exit(exc.exit_code)


def main() -> None:
    # A crash inside a native library (llama.cpp, torch) kills the process with a signal;
    # faulthandler at least leaves the Python stack of the crash on stderr.
    faulthandler.enable()
    from rolecall.interrupt import install

    install()  # the first Ctrl-C stops and says so; a second abandons the calls in flight
    run()
