"""``rolecall llm``: one prompt, a batch, a perplexity, straight to a model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from rolecall.cli.common import (
    CACHE_OPTION,
    CONCURRENCY_OPTION,
    ENGINE_OPTION,
    JSON_SCHEMA_OPTION,
    LLM_SEED_OPTION,
    LOGPROBS_OPTION,
    MODEL_HELP,
    PROGRESS_OPTION,
    RAY_ADDRESS_OPTION,
    RETRIES_OPTION,
    SAMPLES_OPTION,
    STOP_OPTION,
    WORKERS_OPTION,
    Engine,
    command_models,
    err,
    json_output_file,
    load_llm,
    max_tokens_option,
    out,
    sampling_params,
    temperature_option,
    top_p_option,
)
from rolecall.errors import RolecallError

llm_app = typer.Typer(
    help="Call an LLM directly: one prompt, a batch, a perplexity.", no_args_is_help=True
)


@llm_app.command("complete")
def llm_complete(
    prompt: str = typer.Argument(..., help="the prompt ('-' reads stdin)"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
    chat: bool = typer.Option(False, help="send the prompt as one user message"),
    n: int = SAMPLES_OPTION,
    max_tokens: int = max_tokens_option(128),
    temperature: float = temperature_option(0.7),
    top_p: float = top_p_option(1.0),
    seed: Optional[int] = LLM_SEED_OPTION,
    stop: list[str] = STOP_OPTION,
    logprobs: Optional[int] = LOGPROBS_OPTION,
    json_schema: Optional[Path] = JSON_SCHEMA_OPTION,
    grammar: Optional[Path] = typer.Option(None, help="GBNF grammar file"),
    cache: Optional[str] = CACHE_OPTION,
    as_json: bool = typer.Option(False, "--json", help="print full records as JSON"),
):
    """Complete one prompt and print the sample(s)."""
    from rolecall.llm import Message, Request

    text = sys.stdin.read() if prompt == "-" else prompt
    params = sampling_params(
        max_tokens, temperature, top_p, seed, stop, logprobs, json_schema, grammar
    )
    request = (
        Request(messages=(Message(role="user", content=text),), params=params)
        if chat
        else Request(prompt=text, params=params)
    )
    llm = load_llm(model, cache)
    for sample in llm.generate([request], n)[0]:
        if not sample.ok:
            raise RolecallError(f"the call failed: {sample.error}")
        if as_json:
            out.print_json(
                json.dumps(
                    {
                        "sample": sample.sample_index,
                        "cached": sample.cached,
                        **sample.completion.model_dump(),
                    },
                    ensure_ascii=False,
                )
            )
        else:
            out.print(sample.completion.text, markup=False, highlight=False)
    err.print(f"[dim]{llm.model_id}: {llm.stats.summary()}[/dim]")


@llm_app.command("perplexity")
def llm_perplexity(
    text: str = typer.Argument(..., help="the text to score"),
    prompt: str = typer.Option("", help="context the text follows"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
    cache: Optional[str] = CACHE_OPTION,
):
    """Print the log-likelihood and perplexity of TEXT (after --prompt)."""
    from rolecall.llm import Request

    llm = load_llm(model, cache)
    completion = llm.complete(Request(prompt=prompt, score_text=text))
    out.print_json(
        json.dumps(
            {
                "tokens": len(completion.logprobs),
                "loglikelihood": completion.loglikelihood,
                "perplexity": completion.perplexity,
            }
        )
    )


@llm_app.command("batch")
def llm_batch(
    input: Path = typer.Argument(
        ..., help='JSONL: {"id", "prompt"|"messages"[, "score_text"]} per line'
    ),
    out_path: Path = typer.Option(
        ..., "--out", "-o", help="output JSONL (resumable)", callback=json_output_file
    ),
    model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
    n: int = SAMPLES_OPTION,
    max_tokens: int = max_tokens_option(128),
    temperature: float = temperature_option(0.7),
    top_p: float = top_p_option(1.0),
    seed: Optional[int] = LLM_SEED_OPTION,
    stop: list[str] = STOP_OPTION,
    logprobs: Optional[int] = LOGPROBS_OPTION,
    json_schema: Optional[Path] = JSON_SCHEMA_OPTION,
    concurrency: int = CONCURRENCY_OPTION,
    retries: int = RETRIES_OPTION,
    cache: Optional[str] = CACHE_OPTION,
    run_dir: Optional[Path] = typer.Option(
        None, help="write manifest.json here (default: next to --out)"
    ),
    progress: bool = PROGRESS_OPTION,
    engine_name: Engine = ENGINE_OPTION,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = WORKERS_OPTION,
):
    """Run every prompt of a JSONL file; a killed run resumes where it stopped."""
    from rolecall.llm.batch import read_batch_input, run_batch
    from rolecall.rundir import RunDir

    params = sampling_params(max_tokens, temperature, top_p, seed, stop, logprobs, json_schema)
    batch = read_batch_input(input, params)
    engine = command_models(
        engine_name,
        cache,
        concurrency,
        retries,
        model=model,
        ray_address=ray_address,
        workers=workers,
        progress=progress,
    ).engine()
    # several batch outputs may share a directory, each keyed by its own (id, sample)
    run = RunDir(
        run_dir or out_path.parent,
        "llm batch",
        {
            "input": str(input),
            "out": str(out_path),
            "n": n,
            "params": params.model_dump(mode="json"),
        },
        check_config=False,
    )
    if engine.model_id:
        run.record_model("generator", engine.model_id)
    stats = engine.stats
    try:
        run_batch(engine, batch, out_path, n)
    finally:
        # the ray engine learns the model id from its workers' first answers
        model_id = engine.model_id
        if model_id:
            run.record_model("generator", model_id)
        run.record_stage(
            "llm batch",
            {
                "items": len(batch.ids),
                "samples": len(batch.ids) * n,
                "failures": stats.failures,
            },
            stats.as_dict(),
        )
        err.print(f"{model_id or model}: {stats.summary()}")
