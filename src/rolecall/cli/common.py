"""What every command module shares: the consoles, the model option, loading an LLM,
sampling options, the engine options, JSON option files, validated settings and training
options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Optional

import typer
from rich.console import Console

from rolecall.errors import ConfigError, describe_validation
from rolecall.pipelines.run_config import RunConfig
from rolecall.train.settings import TrainConfig

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

MODEL_HELP = (
    "model string, e.g. llamacpp:embedded (default), llamacpp:/m.gguf, "
    "openai:http://localhost:8000/v1?model=NAME, hf:/path/to/model"
)

# the fixed choices of options that many commands share
Engine = Literal["local", "ray"]
Language = Literal["ko", "en"]

# where a stage's LLM calls run (rolecall.engines, #18): the same three options on every
# command that takes them; typer only reads these, so one object serves every command
ENGINE_OPTION = typer.Option(
    "local", "--engine", help="where the calls run: local (this process) or ray"
)
RAY_ADDRESS_OPTION = typer.Option(
    None, "--ray-address", help="Ray cluster address (default: RAY_ADDRESS, else a local cluster)"
)
WORKERS_OPTION = typer.Option(
    2, "--workers", min=1, help="Ray actors, each with its own LLM client"
)


# the fix of an input file that holds nothing: the path was right, the file is empty
EMPTY_FIX = "give a file with records in it, e.g. runs/demo/dialogues/judged.jsonl after make demo"


def out_directory(ctx: typer.Context, path: Optional[Path]) -> Optional[Path]:
    """An ``--out`` that names a directory (a typer callback), checked before anything
    runs: a file there or above it, a folder this user cannot write, or a run directory
    another kind of run made (``rundir.other_kind``) is a usage error that says so."""
    from rolecall.rundir import OWN_DIRECTORY, made_by, other_kind

    if path is None:
        return path
    _writable_directory(path)
    mixed = other_kind(command_of(ctx), made_by(path)) if path.is_dir() else None
    if mixed:
        raise typer.BadParameter(f"{path} {mixed}: {OWN_DIRECTORY}")
    return path


def _writable_directory(path: Path) -> None:
    """A usage error when ``path`` or a folder above it is a file, or the nearest folder
    that exists is not writable by this user."""
    import os

    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is None:
        return
    if not existing.is_dir():
        raise typer.BadParameter(
            f"{existing} is a file, not a directory: give a new or an existing directory"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise typer.BadParameter(f"{existing} is not writable by this user: give another directory")


def command_of(ctx: typer.Context) -> str:
    """The command being run, as its words after ``rolecall`` ("kda filter")."""
    names = []
    while ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(reversed(names))


def output_file(ctx: typer.Context, path: Optional[Path]) -> Optional[Path]:
    """An output option that names a file (a typer callback): a directory there, or a file
    above it, is a usage error before anything runs; missing folders are made, and taken
    away again when the command ends without writing into them."""
    if path is None:
        return path
    if path.is_dir():
        raise typer.BadParameter(f"{path} is a directory: give a file name in it")
    _writable_directory(path.parent)
    made = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise typer.BadParameter(f"{path.parent} cannot be made ({exc.strerror})") from None
    if made:
        ctx.call_on_close(lambda: _remove_empty(made))
    return path


def _remove_empty(folders: list[Path]) -> None:
    """Take away the folders an output option made, deepest first, while they are empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def json_output_file(ctx: typer.Context, path: Optional[Path]) -> Optional[Path]:
    """``output_file`` for a command that writes JSON or JSON lines: an existing file there
    is resumed or replaced only when it reads as JSON (an earlier output); any other file (a
    mistyped name, notes) is a usage error, and kept."""
    path = output_file(ctx, path)
    if path is not None and path.is_file():
        with path.open("rb") as handle:
            head = handle.read(4096).lstrip()
        if head and not head.startswith((b"{", b"[")):
            raise typer.BadParameter(
                f"{path} exists and is not JSON, so not an earlier output of this command: "
                "give a new file name (the file is kept)"
            )
    return path


def load_llm(
    model: Optional[str], cache: Optional[str | Path], concurrency: int = 8, retries: int = 4
):
    from rolecall.llm.opening import open_llm

    with err.status(f"loading {model or 'the default model'}..."):
        return open_llm(model, cache, concurrency, retries)


def command_models(
    engine_name: str,
    cache: Optional[str | Path],
    concurrency: int = 8,
    retries: int = 4,
    *,
    model: Optional[str] = None,
    ray_address: Optional[str] = None,
    workers: int = 2,
    progress: bool = False,
):
    """The models a command calls (``rolecall.engines.Models``): each opened once, here
    with ``load_llm`` or on the engine ``--engine`` names; ``model`` is the default one.
    A generating command takes ``.engine()``, a judging one ``.judge_llm(model)``."""
    from rolecall.engines import EngineChoice, Models

    return Models(
        EngineChoice(engine_name, ray_address, workers),
        cache,
        concurrency,
        retries,
        lambda key: load_llm(key, cache, concurrency, retries),
        model,
        progress,
    )


def sampling_params(
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: Optional[int],
    stop: list[str],
    logprobs: Optional[int] = None,
    json_schema: Optional[Path] = None,
    grammar: Optional[Path] = None,
):
    from pydantic import ValidationError

    from rolecall.llm import SamplingParams

    schema = read_json_file(json_schema) if json_schema else None
    gbnf = grammar.read_text(encoding="utf-8") if grammar else None
    try:
        return SamplingParams(
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            stop=tuple(stop),
            logprobs=logprobs,
            json_schema=schema,
            grammar=gbnf,
        )
    except ValidationError as exc:
        raise ConfigError(f"bad sampling options: {describe_validation(exc)}") from None


def read_json_file(path: Path) -> dict:
    from rolecall.errors import InputFileError

    if not path.is_file():
        raise InputFileError(path, "file not found", fix="check the path")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"not valid JSON ({exc.msg})", line=exc.lineno) from None


def validated(model_type, **values):
    """``model_type(**values)``, or a ``ConfigError`` that names the bad option and its range."""
    from pydantic import ValidationError

    try:
        return model_type(**values)
    except ValidationError as exc:
        raise ConfigError(
            f"bad settings: {describe_validation(exc)}",
            fix="see the command's --help for each option's range",
        ) from None


def field_default(settings_type, name: str):
    """The default of one field of a settings type, for the option that sets it: one
    place holds each default."""
    return settings_type.model_fields[name].default


def field_help(settings_type, name: str) -> str | None:
    """The description of one field of a settings type, as the help of the option that
    sets it: one place holds each text."""
    return settings_type.model_fields[name].description


def setting_option(settings_type, name: str, **options):
    """The option that sets one field of a settings type: the field's default and its
    description as the help."""
    return typer.Option(
        field_default(settings_type, name), help=field_help(settings_type, name), **options
    )


# options of many commands, each with one meaning (typer only reads them: one object serves
# every command); where the commands' defaults differ, a function gives the option
PROGRESS_OPTION = typer.Option(True, help="progress bars on stderr")
CONCURRENCY_OPTION = typer.Option(8, min=1, help="LLM calls in flight at once")
RETRIES_OPTION = typer.Option(4, min=0, help=field_help(RunConfig, "retries"))
CACHE_OPTION = typer.Option(
    None, help="the LLM cache: a file or a postgresql:// URL (default: ROLECALL_CACHE)"
)
JUDGE_TEMPERATURE_OPTION = typer.Option(0.0, help="judge temperature (generate mode)")
LANGUAGE_HELP = "the prompt templates' language: ko or en"
LANGUAGE_OPTION = typer.Option("ko", help=LANGUAGE_HELP)
DELIMITER_OPTION = typer.Option(
    None,
    help="field delimiter of PATH:COLUMN files that are not .csv/.tsv: one character, or "
    "tab/pipe/comma/semicolon",
)
# the sampling options of 'llm complete' and 'llm batch'
SAMPLES_OPTION = typer.Option(1, "-n", min=1, help="samples per prompt")
LLM_SEED_OPTION = typer.Option(None, help="sampling seed: sample i of a prompt draws with seed + i")
STOP_OPTION = typer.Option([], help="stop string (repeatable)")
LOGPROBS_OPTION = typer.Option(None, help="return top-K token logprobs")
JSON_SCHEMA_OPTION = typer.Option(None, help="JSON schema file")


def max_tokens_option(default: int):
    """``--max-tokens`` with this command's default."""
    return typer.Option(default, help="longest answer, in tokens")


def temperature_option(default: float):
    """``--temperature`` with this command's default."""
    return typer.Option(default, help="sampling temperature; 0: greedy")


def top_p_option(default: float):
    """``--top-p`` with this command's default."""
    return typer.Option(
        default,
        help="nucleus sampling: draw from the likeliest tokens up to this total probability",
    )


# the options of the training commands
TRAIN_SEED_OPTION = typer.Option(
    field_default(TrainConfig, "seed"), help=field_help(TrainConfig, "seed")
)
FEATURES_CACHE_OPTION = typer.Option(
    None, help="where a frozen backbone's states are kept (default: ROLECALL_HOME/features)"
)


def epochs_option(default: int):
    """``--epochs`` with this model's default."""
    return typer.Option(default, min=1, help=field_help(TrainConfig, "epochs"))


def batch_size_option(default: int):
    """``--batch-size`` with this model's default."""
    return typer.Option(default, min=1, help=field_help(TrainConfig, "batch_size"))


def lora_r_option(default: int, more: str = ""):
    """``--lora-r`` with this model's default; ``more``: what the command derives from it."""
    return typer.Option(default, min=1, help="rank of the LoRA adapters" + more)


CHECKPOINT_EVERY = typer.Option(
    300.0,
    "--checkpoint-every",
    min=0.0,
    help="seconds between training checkpoints in OUT/.checkpoint: a killed run, started "
    "again with the same options, goes on from the last one; 0: after every step",
)


def run_pipeline(run, config, until: str, progress: bool) -> None:
    """``run(config, load_llm, until, progress, say)`` of a pipeline module, with each model
    opened once from the config's cache, concurrency and retries, and their statistics
    printed at the end, also when a stage fails."""
    cache = config.cache or None  # a str: Path would collapse a postgresql:// URL
    opened = []

    def load(model):
        opened.append(load_llm(model, cache, config.concurrency, config.retries))
        return opened[-1]

    try:
        run(
            config,
            load,
            until,
            progress,
            say=lambda line: out.print(line, highlight=False, markup=False),
        )
    finally:
        for llm in opened:
            err.print(f"{llm.model_id}: {llm.stats.summary()}")
