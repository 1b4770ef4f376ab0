"""``rolecall kda``: the K/DA data pipeline (ACL 2025): neutral sentences rewritten into
implicitly offensive ones with retrieved community slang (``generate``), two LLM-judge
filters (``filter``), the dataset files (``export``), all of it from one config (``run``);
and K/DA pairs as safety examples for the out-of-bounds classifier (``safety-examples``).
The detoxification model that learns from the pairs is ``rolecall detox``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Optional

import typer

from rolecall.cli.common import (
    CACHE_OPTION,
    CONCURRENCY_OPTION,
    DELIMITER_OPTION,
    ENGINE_OPTION,
    JUDGE_TEMPERATURE_OPTION,
    LANGUAGE_HELP,
    LANGUAGE_OPTION,
    MODEL_HELP,
    PROGRESS_OPTION,
    RAY_ADDRESS_OPTION,
    WORKERS_OPTION,
    Engine,
    Language,
    command_models,
    err,
    max_tokens_option,
    out,
    out_directory,
    output_file,
    run_pipeline,
    temperature_option,
    validated,
)
from rolecall.errors import ConfigError, InputFileError, describe_validation

kda_app = typer.Typer(
    help="K/DA: neutral -> implicitly offensive pairs (generate, filter, export, run), and "
    "the pairs as safety examples (safety-examples).",
    no_args_is_help=True,
)


@kda_app.command("safety-examples")
def kda_safety_examples(
    pairs: Path = typer.Argument(
        ..., help="K/DA pairs: a kda.csv (neutral,implicit) or a kda run's pairs.jsonl"
    ),
    out_file: Path = typer.Option(
        ...,
        "--out",
        "-o",
        help="examples JSONL to write (held-out ones: OUT.test.jsonl)",
        callback=output_file,
    ),
    limit: Optional[int] = typer.Option(None, min=1, help="first N distinct pairs only"),
    seed: int = typer.Option(0, help="contexts, templates and the held-out split"),
    test_share: float = typer.Option(
        0.2, min=0.0, max=0.9, help="neutral sentences held out (with all their rewrites)"
    ),
    positives: int = typer.Option(2, min=1, help="template redirects per pair"),
    spec: Optional[Path] = typer.Option(
        None, help="role spec: its safety category's error category (default 'not safe')"
    ),
    model: Optional[str] = typer.Option(
        None,
        "--model",
        "-m",
        help=MODEL_HELP + "; adds one LLM-written agreeing and one redirecting reply a pair",
    ),
    cache: Optional[str] = CACHE_OPTION,
):
    """Safety examples from K/DA pairs: an implicitly offensive user turn, then a reply
    that agrees or echoes it (negative, not safe) or a polite redirect (positive). Feed
    them to 'rolecall train classifier' and 'rolecall train generator' (UL negatives)."""
    from rolecall.jsonl import write_jsonl
    from rolecall.pipelines.redteam.run import read_pairs
    from rolecall.train.safety_examples import safety_examples, split_pairs, unique_pairs

    found = unique_pairs(read_pairs(pairs))
    if not found:
        raise InputFileError(
            pairs, "holds no pairs", fix="give a kda.csv with neutral,implicit rows or pairs.jsonl"
        )
    found = found[:limit] if limit else found
    role_spec = None
    if spec is not None:
        from rolecall.spec import load_role_spec

        role_spec = load_role_spec(spec)
    llm = None
    if model is not None:
        from rolecall.cli.common import load_llm

        llm = load_llm(model, cache)
    train, test = split_pairs(found, test_share, seed)
    if not train:
        raise ConfigError(
            f"all {len(found)} pairs fell into the held-out share",
            fix="give more pairs or lower --test-share",
        )
    written = {}
    test_file = out_file.with_name(out_file.name.removesuffix(".jsonl") + ".test.jsonl")
    for path, part in ((out_file, train), (test_file, test)):
        if not part:
            continue
        examples = safety_examples(part, seed, role_spec, llm, positives)
        write_jsonl(path, examples)
        written[str(path)] = {
            "pairs": len(part),
            "examples": len(examples),
            "negative": sum(e.label == "negative" for e in examples),
        }
    if llm is not None:
        err.print(f"{llm.model_id}: {llm.stats.summary()}")
    out.print(json.dumps(written, ensure_ascii=False), highlight=False, markup=False)


@kda_app.command("generate")
def kda_generate(
    sentences: str = typer.Option(
        ..., help="neutral sentences: PATH or PATH:COLUMN (e.g. chatbot_data.csv:Q)"
    ),
    index_dir: Optional[Path] = typer.Option(
        None, "--index", help="slang index directory ('rolecall slang index')"
    ),
    out_dir: Path = typer.Option(
        ..., "--out", callback=out_directory, help="run directory (resumable)"
    ),
    ns: str = typer.Option("0,3,5,7,9", help="numbers of retrieved comments"),
    limit: Optional[int] = typer.Option(None, min=1, help="first N sentences only"),
    max_chars: int = typer.Option(200, min=1, help="skip longer sentences"),
    delimiter: Optional[str] = DELIMITER_OPTION,
    model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
    language: Language = typer.Option(
        "ko", help=LANGUAGE_HELP + "; ko also skips sentences without Hangul"
    ),
    temperature: float = temperature_option(0.8),
    seed: int = typer.Option(0, help="base seed: each candidate's sampling seed follows from it"),
    max_tokens: int = max_tokens_option(80),
    concurrency: int = CONCURRENCY_OPTION,
    cache: Optional[str] = CACHE_OPTION,
    progress: bool = PROGRESS_OPTION,
    engine_name: Engine = ENGINE_OPTION,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = WORKERS_OPTION,
):
    """Rewrite each neutral sentence once per n, with n retrieved slang comments."""
    from rolecall.generate.kda import KdaConfig, check_index_holds
    from rolecall.pipelines.kda import generate_stage, neutral_sentences
    from rolecall.rundir import RunDir
    from rolecall.slang.index import SlangIndex

    try:
        n_values = tuple(int(n) for n in ns.split(","))
    except ValueError:
        raise ConfigError(
            f"--ns '{ns}' is not a list of numbers", fix="e.g. --ns 0,3,5,7,9"
        ) from None
    config = validated(
        KdaConfig, ns=n_values, temperature=temperature, max_tokens=max_tokens, seed=seed
    )
    if max(n_values) > 0 and index_dir is None:
        raise ConfigError(
            "n > 0 needs retrieved comments",
            fix="pass --index DIR (built with 'rolecall slang index'), or use --ns 0",
        )
    rows, skipped = neutral_sentences(sentences, delimiter, limit, max_chars, language)
    if any(skipped.values()):
        err.print(f"skipped sentences: {skipped}")
    index = SlangIndex.load(index_dir) if index_dir else None
    if index is not None:
        check_index_holds(n_values, index, "--ns")
    engine = command_models(
        engine_name,
        cache,
        concurrency,
        model=model,
        ray_address=ray_address,
        workers=workers,
        progress=progress,
    ).engine()
    run = RunDir(
        out_dir,
        "kda generate",
        {
            "sentences": sentences,
            "index": str(index_dir),
            **config.model_dump(),
            "language": language,
        },
    )
    try:
        counts = generate_stage(engine, run, rows, index, config, language)
    finally:
        err.print(f"{engine.model_id or model}: {engine.stats.summary()}")
    out.print(json.dumps(counts, ensure_ascii=False))


def _say(line: str) -> None:
    err.print(line, markup=False, highlight=False)


@kda_app.command("filter")
def kda_filter(
    out_dir: Path = typer.Option(
        ..., "--out", callback=out_directory, help="the run directory of 'generate'"
    ),
    models: Optional[list[str]] = typer.Option(
        None,
        "--model",
        "-m",
        help=MODEL_HELP + "; or classifier:PATH (a trained judge) or rules:NAME (a rule "
        "judge). Repeat for a panel: majority over all their votes",
    ),
    consistency_models: Optional[list[str]] = typer.Option(
        None, "--consistency-model", help="a judge of the consistency filter only (repeatable)"
    ),
    implicit_models: Optional[list[str]] = typer.Option(
        None, "--implicit-model", help="a judge of the implicit filter only (repeatable)"
    ),
    mode: Literal["auto", "score", "generate"] = typer.Option(
        "auto", help="how an LLM judge answers: auto, score (label log-likelihoods) or generate"
    ),
    samples: int = typer.Option(1, min=1, help="votes per candidate and judge model"),
    language: Language = LANGUAGE_OPTION,
    temperature: float = JUDGE_TEMPERATURE_OPTION,
    calibrate: bool = typer.Option(
        False, help="score mode: divide out each label word's prior on content-free inputs"
    ),
    consistency_template: Optional[str] = typer.Option(
        None,
        help="the LLM consistency judges' prompt template, by name (default: "
        "judge_consistency, or judge_consistency_chat in generate mode)",
    ),
    implicit_template: Optional[str] = typer.Option(
        None,
        help="the LLM implicit judges' prompt template, by name (default: judge_implicit, "
        "or judge_implicit_chat in generate mode)",
    ),
    default_judges: Literal["auto", "llm", "trained"] = typer.Option(
        "auto",
        help="a filter with no judge named: auto (trained judges when the default model "
        "is the embedded one, else the LLM), llm or trained",
    ),
    judge_data: Optional[Path] = typer.Option(
        None,
        help="the shared data folder (detox/, slang/, lexicon/, neutral/) the default "
        "trained judges are trained on (first use; cached under ROLECALL_HOME)",
    ),
    concurrency: int = CONCURRENCY_OPTION,
    cache: Optional[str] = CACHE_OPTION,
    progress: bool = PROGRESS_OPTION,
    engine_name: Engine = ENGINE_OPTION,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = WORKERS_OPTION,
):
    """Pair consistency, then implicit offensiveness; writes pairs.jsonl and retention."""
    from rolecall.pipelines.default_judges import config_entry, kda_defaults, warnings_of
    from rolecall.pipelines.judges import check_judges
    from rolecall.pipelines.kda import FilterSection, filter_stage
    from rolecall.pipelines.kda_filter import candidates_file
    from rolecall.rundir import RunDir

    section = validated(
        FilterSection,
        models=models or [],
        consistency_models=consistency_models or None,
        implicit_models=implicit_models or None,
        mode=mode,
        samples=samples,
        temperature=temperature,
        calibrate=calibrate,
        consistency_template=consistency_template,
        implicit_template=implicit_template,
        default_judges=default_judges,
        judge_data=str(judge_data) if judge_data else None,
    )
    check_judges([*section.models, *(consistency_models or []), *(implicit_models or [])])
    candidates_file(out_dir)  # before the run directory is made or changed
    defaults = kda_defaults(section, None)  # no judge named: the default model's
    for warning in warnings_of(defaults):
        _say(f"warning: {warning}")
    opened = command_models(
        engine_name, cache, concurrency, ray_address=ray_address, workers=workers, progress=progress
    )
    run = RunDir(out_dir, "kda filter", section.model_dump() | config_entry(defaults))
    try:
        filter_stage(opened.judge_llm, run, section, language, progress, defaults, _say)
    finally:
        for llm in opened.judges.values():
            err.print(f"{llm.model_id}: {llm.stats.summary()}")
    out.print(json.dumps(run.manifest["stages"]["filter"]["counts"], ensure_ascii=False))


@kda_app.command("export")
def kda_export(
    out_dir: Path = typer.Option(..., "--out", callback=out_directory, help="the run directory"),
    name: str = typer.Option(
        "rolecall K/DA pairs",
        help="the dataset's name: the data card's title (and, with hf, its description's start)",
    ),
    licence: str = typer.Option(
        "research use; see the sources' licences",
        help="the licence named in the data card (and, with hf, in the dataset's info)",
    ),
    formats: str = typer.Option(
        "csv", help="comma-separated: csv, parquet, hf (Hugging Face datasets directory)"
    ),
):
    """K/DA CSV (neutral,implicit), Parquet, a datasets directory and a data card."""
    from pydantic import ValidationError

    from rolecall.pipelines.kda import ExportSection, export_stage
    from rolecall.rundir import Files, RunDir

    try:
        section = ExportSection(
            name=name, licence=licence, formats=[f.strip() for f in formats.split(",") if f.strip()]
        )
    except ValidationError as exc:
        raise ConfigError(
            f"bad --formats: {describe_validation(exc)}", fix="use csv, parquet and/or hf"
        ) from None
    if not (out_dir / Files.PAIRS).is_file():  # before the run directory is opened (made)
        raise ConfigError(
            f"{out_dir} holds no filtered pairs ({Files.PAIRS}): --out is the run directory "
            "that 'rolecall kda filter' wrote",
            fix="give that directory (e.g. runs/kda), or run 'rolecall kda filter' first",
        )
    # export rewrites its files whole from the records: new settings mix nothing
    run = RunDir(out_dir, "kda export", section.model_dump(), check_config=False)
    files = export_stage(run, section)
    for kind, path in files.items():
        out.print(f"{kind}: {path}", highlight=False, markup=False)
    if not run.manifest["stages"]["export"]["counts"]["exported_pairs"]:
        _say(
            "warning: 0 pairs exported (the filter kept none): the files hold a header only; "
            "the filter's retention says why (rolecall kda filter's output, docs/kda.md)"
        )


@kda_app.command("run")
def kda_run(
    config_path: Path = typer.Argument(
        ..., help="pipeline config (YAML); see examples/kda/config.yaml"
    ),
    until: str = typer.Option(
        "geval", help="stop after this stage: index, generate, filter, export or geval"
    ),
    progress: bool = PROGRESS_OPTION,
):
    """The whole K/DA pipeline: index -> generate -> filter -> export -> G-Eval; resumable."""
    from rolecall.pipelines.kda import load_kda_config, run_kda

    run_pipeline(run_kda, load_kda_config(config_path), until, progress)
