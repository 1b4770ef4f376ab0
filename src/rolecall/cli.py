"""The ``rolecall`` command. Thin: parse options, call a library function, print.

Every ``RolecallError`` becomes a message with its fix and the error's exit code; other
exceptions are bugs and keep their traceback.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

from rolecall import config
from rolecall.errors import ConfigError, RolecallError

app = typer.Typer(help="rolecall: safe, role-specified Korean chatbots from LLM-made data.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
llm_app = typer.Typer(help="Call an LLM directly: one prompt, a batch, a perplexity.",
                      no_args_is_help=True)
db_app = typer.Typer(help="The feedback and annotation database.", no_args_is_help=True)
records_app = typer.Typer(help="Check record files (JSONL).", no_args_is_help=True)
app.add_typer(llm_app, name="llm")
app.add_typer(db_app, name="db")
app.add_typer(records_app, name="records")

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

MODEL_HELP = ("model string, e.g. llamacpp:embedded (default), llamacpp:/m.gguf, "
              "openai:http://localhost:8000/v1?model=NAME, hf:/path/to/model")


@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="debug logging")):
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")


def _llm(model: Optional[str], cache: Optional[Path], concurrency: int = 8, retries: int = 4):
    from rolecall.llm import LLM, Cache, load_backend

    with err.status(f"loading {model or 'the default model'}..."):
        backend = load_backend(model)
    return LLM(backend, Cache(cache or config.cache_path()), concurrency=concurrency,
               retries=retries)


def _params(max_tokens: int, temperature: float, top_p: float, seed: Optional[int],
            stop: list[str], logprobs: Optional[int] = None,
            json_schema: Optional[Path] = None, grammar: Optional[Path] = None):
    from pydantic import ValidationError

    from rolecall.llm import SamplingParams

    schema = _read_json_file(json_schema) if json_schema else None
    gbnf = grammar.read_text(encoding="utf-8") if grammar else None
    try:
        return SamplingParams(max_tokens=max_tokens, temperature=temperature, top_p=top_p,
                              seed=seed, stop=tuple(stop), logprobs=logprobs,
                              json_schema=schema, grammar=gbnf)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                             for e in exc.errors())
        raise ConfigError(f"bad sampling options: {problems}") from None


def _read_json_file(path: Path) -> dict:
    from rolecall.errors import InputFileError

    if not path.is_file():
        raise InputFileError(path, "file not found", fix="check the path")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"not valid JSON ({exc.msg})", line=exc.lineno) from None


@app.command()
def demo(model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
         language: str = typer.Option("ko", help="ko or en"),
         samples: int = typer.Option(3, min=1, max=20)):
    """Generate a few greetings of a care-call bot with the (embedded) model."""
    from rolecall.demo import run_demo

    llm = _llm(model, None)
    for line in run_demo(llm, language=language, samples=samples):
        out.print(line)
    err.print(f"[dim]{llm.model_id}: {llm.stats.summary()}[/dim]")


@llm_app.command("complete")
def llm_complete(
        prompt: str = typer.Argument(..., help="the prompt ('-' reads stdin)"),
        model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
        chat: bool = typer.Option(False, help="send the prompt as one user message"),
        n: int = typer.Option(1, "-n", min=1, help="number of samples"),
        max_tokens: int = typer.Option(128), temperature: float = typer.Option(0.7),
        top_p: float = typer.Option(1.0), seed: Optional[int] = typer.Option(None),
        stop: list[str] = typer.Option([], help="stop string (repeatable)"),
        logprobs: Optional[int] = typer.Option(None, help="return top-K token logprobs"),
        json_schema: Optional[Path] = typer.Option(None, help="JSON schema file"),
        grammar: Optional[Path] = typer.Option(None, help="GBNF grammar file"),
        cache: Optional[Path] = typer.Option(None, help="cache file (default in ROLECALL_HOME)"),
        as_json: bool = typer.Option(False, "--json", help="print full records as JSON")):
    """Complete one prompt and print the sample(s)."""
    from rolecall.llm import Message, Request

    text = sys.stdin.read() if prompt == "-" else prompt
    params = _params(max_tokens, temperature, top_p, seed, stop, logprobs, json_schema, grammar)
    request = (Request(messages=(Message(role="user", content=text),), params=params) if chat
               else Request(prompt=text, params=params))
    llm = _llm(model, cache)
    for sample in llm.generate([request], n)[0]:
        if not sample.ok:
            raise RolecallError(f"the call failed: {sample.error}")
        if as_json:
            out.print_json(json.dumps({"sample": sample.sample_index, "cached": sample.cached,
                                       **sample.completion.model_dump()}, ensure_ascii=False))
        else:
            out.print(sample.completion.text, markup=False, highlight=False)
    err.print(f"[dim]{llm.model_id}: {llm.stats.summary()}[/dim]")


@llm_app.command("perplexity")
def llm_perplexity(text: str = typer.Argument(..., help="the text to score"),
                   prompt: str = typer.Option("", help="context the text follows"),
                   model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
                   cache: Optional[Path] = typer.Option(None)):
    """Print the log-likelihood and perplexity of TEXT (after --prompt)."""
    from rolecall.llm import Request

    llm = _llm(model, cache)
    completion = llm.complete(Request(prompt=prompt, score_text=text))
    out.print_json(json.dumps({"tokens": len(completion.logprobs),
                               "loglikelihood": completion.loglikelihood,
                               "perplexity": completion.perplexity}))


@llm_app.command("batch")
def llm_batch(
        input: Path = typer.Argument(..., help='JSONL: {"id", "prompt"|"messages"[, '
                                               '"score_text"]} per line'),
        out_path: Path = typer.Option(..., "--out", "-o", help="output JSONL (resumable)"),
        model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
        n: int = typer.Option(1, "-n", min=1), max_tokens: int = typer.Option(128),
        temperature: float = typer.Option(0.7), top_p: float = typer.Option(1.0),
        seed: Optional[int] = typer.Option(None),
        stop: list[str] = typer.Option([]), logprobs: Optional[int] = typer.Option(None),
        json_schema: Optional[Path] = typer.Option(None),
        concurrency: int = typer.Option(8, min=1), retries: int = typer.Option(4, min=0),
        cache: Optional[Path] = typer.Option(None),
        run_dir: Optional[Path] = typer.Option(None, help="write manifest.json here "
                                                          "(default: next to --out)"),
        progress: bool = typer.Option(True)):
    """Run every prompt of a JSONL file; a killed run resumes where it stopped."""
    from rolecall.llm.batch import read_batch_input, run_batch
    from rolecall.rundir import RunDir

    params = _params(max_tokens, temperature, top_p, seed, stop, logprobs, json_schema)
    batch = read_batch_input(input, params)
    llm = _llm(model, cache, concurrency, retries)
    run = RunDir(run_dir or out_path.parent, "llm batch",
                 {"input": str(input), "out": str(out_path), "n": n,
                  "params": params.model_dump(mode="json")})
    run.record_model("generator", llm.model_id)
    try:
        run_batch(llm, batch, out_path, n, progress=progress)
    finally:
        run.record_stage("llm batch", {"items": len(batch.ids), "samples": len(batch.ids) * n,
                                       "failures": llm.stats.failures}, llm.stats.as_dict())
        err.print(f"{llm.model_id}: {llm.stats.summary()}")


@app.command()
def doctor(model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
           check: bool = typer.Option(True, help="make one real call to the model")):
    """Show installed backends, the embedded model, and check one model string."""
    from rolecall.doctor import run_doctor

    ok = run_doctor(out, model, check)
    raise typer.Exit(0 if ok else 1)


@db_app.command("upgrade")
def db_upgrade(url: Optional[str] = typer.Option(None, help="database URL (default: SQLite "
                                                           "in ROLECALL_HOME, or "
                                                           "ROLECALL_DATABASE_URL)")):
    """Create or migrate the database to the latest schema."""
    from rolecall.store.db import db_upgrade_command

    out.print(db_upgrade_command(url))


RECORD_TYPES = ["example", "dialogue", "pair", "verdict", "turn"]


@records_app.command("check")
def records_check(path: Path, kind: str = typer.Option(..., "--as",
                                                       help="/".join(RECORD_TYPES))):
    """Validate every line of a JSONL file as one record type."""
    from rolecall import records
    from rolecall.jsonl import read_jsonl

    if kind not in RECORD_TYPES:
        raise ConfigError(f"unknown record type '{kind}'", fix=f"use one of {RECORD_TYPES}")
    model = getattr(records, kind.capitalize())
    count = sum(1 for _ in read_jsonl(path, model))
    out.print(f"{path}: {count} valid {model.__name__} records")


def main() -> None:
    try:
        app()
    except RolecallError as exc:
        err.print(f"[bold red]error:[/bold red] {escape(exc.message)}", highlight=False)
        if exc.fix:
            err.print(f"[bold]fix:[/bold] {escape(exc.fix)}", highlight=False)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
