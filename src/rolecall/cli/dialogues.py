"""``rolecall dialogues``: role-specified dialogue data (NAACL 2022, sections 3.1-3.2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Optional

import typer

from rolecall.cli.common import (
    CACHE_OPTION,
    CONCURRENCY_OPTION,
    EMPTY_FIX,
    ENGINE_OPTION,
    JUDGE_TEMPERATURE_OPTION,
    MODEL_HELP,
    PROGRESS_OPTION,
    RAY_ADDRESS_OPTION,
    WORKERS_OPTION,
    Engine,
    command_models,
    err,
    json_output_file,
    max_tokens_option,
    out,
    out_directory,
    run_pipeline,
    temperature_option,
    top_p_option,
    validated,
)
from rolecall.generate.dialogues import MAX_COPY

dialogues_app = typer.Typer(
    help="Role-specified dialogue data (NAACL 2022): generate, judge, convert, count.",
    no_args_is_help=True,
)


def read_dialogues(path: Path):
    from rolecall.pipelines.dialogues import read_dialogues as read  # lazy: fast CLI start

    return read(path)


def example_dialogues(path: Path):
    from rolecall.pipelines.dialogues import example_dialogues as read

    return read(path)


@dialogues_app.command("generate")
def dialogues_generate(
    spec_path: Path = typer.Option(..., "--spec", help="role specification (YAML)"),
    examples: Path = typer.Option(..., help="example dialogues (JSONL or CareCall .json)"),
    out_dir: Path = typer.Option(
        ..., "--out", callback=out_directory, help="run directory (resumable)"
    ),
    count: int = typer.Option(10, "-n", "--count", min=1, help="dialogues to generate"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
    temperature: float = temperature_option(0.5),
    top_p: float = top_p_option(0.8),
    max_tokens: int = max_tokens_option(768),
    seed: int = typer.Option(
        0, help="base seed: dialogue i samples with seed + i and draws its example with it"
    ),
    frequency_penalty: float = typer.Option(
        0.0, help="OpenAI-style; small base models loop less with ~0.5"
    ),
    presence_penalty: float = typer.Option(
        0.0, help="OpenAI-style: subtracted once from the logit of each token already generated"
    ),
    min_turns: int = typer.Option(6, help="shortest dialogue kept, in turns"),
    accept_unfinished: bool = typer.Option(
        False, help="keep dialogues cut by the token limit (last turn dropped)"
    ),
    max_copy: float = typer.Option(
        MAX_COPY,
        min=0.0,
        max=1.0,
        help="reject a dialogue when more than this share of its character 4-grams are its "
        "example's (a near copy); 1: keep every one",
    ),
    concurrency: int = CONCURRENCY_OPTION,
    cache: Optional[str] = CACHE_OPTION,
    progress: bool = PROGRESS_OPTION,
    engine_name: Engine = ENGINE_OPTION,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = WORKERS_OPTION,
):
    """Generate whole dialogues one-shot from the spec's outline and one example each."""
    from rolecall.pipelines.dialogues import GenerateSection, generate_stage, generation_config
    from rolecall.rundir import RunDir
    from rolecall.spec import load_role_spec

    spec = load_role_spec(spec_path)
    shots = example_dialogues(examples)
    section = validated(
        GenerateSection,
        count=count,
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        seed=seed,
        min_turns=min_turns,
        frequency_penalty=frequency_penalty,
        presence_penalty=presence_penalty,
        accept_unfinished=accept_unfinished,
        max_copy=max_copy,
    )
    config = generation_config(section, spec.language)
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
        "dialogues generate",
        {"spec": str(spec_path), "examples": str(examples), **vars(config)},
    )
    try:
        counts = generate_stage(engine, run, spec, shots, config)
    finally:
        err.print(f"{engine.model_id or model}: {engine.stats.summary()}")
    out.print(json.dumps(counts, ensure_ascii=False))


@dialogues_app.command("judge")
def dialogues_judge(
    spec_path: Path = typer.Option(..., "--spec", help="role specification (YAML)"),
    dialogues: Path = typer.Option(..., help="dialogues to judge (JSONL or CareCall .json)"),
    out_dir: Path = typer.Option(
        ..., "--out", callback=out_directory, help="run directory (resumable)"
    ),
    models: Optional[list[str]] = typer.Option(
        None,
        "--model",
        "-m",
        help=MODEL_HELP + "; or classifier:PATH (a trained judge) or rules:NAME (a rule "
        "judge). Repeat for a panel: majority over all their votes, a tie flags the turn",
    ),
    mode: Literal["auto", "score", "generate"] = typer.Option(
        "auto", help="auto, score (label log-likelihoods) or generate (JSON answer)"
    ),
    samples: int = typer.Option(1, min=1, help="votes per turn (majority decides)"),
    temperature: float = JUDGE_TEMPERATURE_OPTION,
    default_judges: Literal["auto", "llm", "rules"] = typer.Option(
        "auto",
        help="no -m given: auto (the rule judge rules:carecall when the default model is "
        "the embedded one, else the LLM), llm or rules",
    ),
    concurrency: int = CONCURRENCY_OPTION,
    cache: Optional[str] = CACHE_OPTION,
    progress: bool = PROGRESS_OPTION,
    engine_name: Engine = ENGINE_OPTION,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = WORKERS_OPTION,
):
    """Judge each system turn up to the first out-of-bounds one; write examples."""
    from rolecall.pipelines.default_judges import out_of_bounds_default, warnings_of
    from rolecall.pipelines.dialogues import JudgeSection, judge_panel, judge_stage
    from rolecall.pipelines.judges import describe
    from rolecall.rundir import RunDir
    from rolecall.spec import load_role_spec

    section = validated(JudgeSection, default_judges=default_judges)
    spec = load_role_spec(spec_path)
    items = read_dialogues(dialogues)
    defaults = out_of_bounds_default(models or [], section.default_judges, None, spec)
    for warning in warnings_of(defaults):
        err.print(f"warning: {warning}", markup=False, highlight=False)
    opened = command_models(
        engine_name, cache, concurrency, ray_address=ray_address, workers=workers, progress=progress
    )
    try:
        strings = models or [s for d in defaults.values() for s in d.strings()]
        panel = judge_panel(strings, spec, opened.judge_llm, mode, temperature)
        llm_judges = [m[1] for m in panel if isinstance(m, tuple)]
        config = {
            "spec": str(spec_path),
            "dialogues": str(dialogues),
            "mode": [j.mode for j in llm_judges],
            "constrained": [j.constrained for j in llm_judges],
            "samples": samples,
            "temperature": temperature,
        }
        if len(panel) == 1 and llm_judges:
            # one LLM judge: the settings as recorded before panels, so older runs resume
            config.update(mode=llm_judges[0].mode, constrained=llm_judges[0].constrained)
        else:
            config["judges"] = [describe(m)["model"] for m in panel]
        run = RunDir(out_dir, "dialogues judge", config)
        counts = judge_stage(panel, run, items, samples, progress, defaults)
    finally:
        for llm in opened.judges.values():
            err.print(f"{llm.model_id}: {llm.stats.summary()}")
    out.print(json.dumps(counts, ensure_ascii=False))


@dialogues_app.command("run")
def dialogues_run(
    config_path: Path = typer.Argument(
        ..., help="pipeline config (YAML); see examples/carecall/pipeline.yaml"
    ),
    until: str = typer.Option(
        "stats", help="stop after this stage: generate, judge, export or stats"
    ),
    progress: bool = PROGRESS_OPTION,
):
    """The whole dialogue pipeline: generate -> judge -> export -> stats; resumable."""
    from rolecall.pipelines.dialogues import load_dialogue_config, run_dialogues

    run_pipeline(run_dialogues, load_dialogue_config(config_path), until, progress)


@dialogues_app.command("stats")
def dialogues_stats(
    files: list[Path] = typer.Argument(..., help="dialogue files (JSONL or CareCall .json)"),
    as_json: bool = typer.Option(False, "--json", help="print the statistics as JSON"),
):
    """The paper's Table 2 for each file, side by side (eojeol and Kiwi morphemes)."""
    from rolecall.cli.store import reads_as
    from rolecall.errors import InputFileError
    from rolecall.eval.stats import dataset_stats, format_stats_table, stats_to_json

    columns = {}
    for path in files:
        name = path.name if path.name not in columns else str(path)
        try:
            dialogues = read_dialogues(path)
        except InputFileError as exc:
            other = reads_as(path, exc.line, "dialogue") if exc.line else None
            if other:
                exc.fix = (
                    f"the line is a valid {other} record; stats reads dialogues "
                    "(a run's dialogues.jsonl or judged.jsonl, or a CareCall .json)"
                )
            raise
        if not dialogues:  # a table of zeros says nothing about a data set
            raise InputFileError(path, "holds no dialogue (it is empty)", fix=EMPTY_FIX)
        columns[name] = dataset_stats(dialogues)
    if as_json:
        out.print(stats_to_json(columns), markup=False, highlight=False, soft_wrap=True)
    else:
        out.print(format_stats_table(columns))


@dialogues_app.command("import-carecall")
def dialogues_import(
    source: Path,
    target: Path,
    examples: bool = typer.Option(False, help="write training examples instead of dialogues"),
    unflagged: Literal["stop", "in-bounds"] = typer.Option(
        "stop",
        help="--examples: a system turn with no out-of-bounds flag ends its dialogue's "
        "split (stop) or is in bounds (in-bounds: e.g. human-fixed dialogues)",
    ),
):
    """CareCall corpus JSON -> rolecall dialogue JSONL (or training examples)."""
    from rolecall.formats.carecall import (
        carecall_to_examples,
        read_carecall,
        write_examples_jsonl,
    )
    from rolecall.jsonl import write_jsonl

    if not examples:
        count = write_jsonl(target, read_carecall(source))
        out.print(f"{target}: {count} dialogues")
        return
    written = carecall_to_examples(source, unflagged)
    count = write_examples_jsonl(target, written)
    positives = sum(e.label == "positive" for e in written)
    out.print(f"{target}: {count} examples ({positives} positive, {count - positives} negative)")


@dialogues_app.command("export-carecall")
def dialogues_export(
    source: Path = typer.Argument(..., help="rolecall dialogue JSONL"),
    target: Path = typer.Argument(
        ...,
        help="the CareCall file to write: a JSON list, or one dialogue a line if named .jsonl",
        callback=json_output_file,
    ),
):
    """Rolecall dialogue JSONL (e.g. judged.jsonl) -> CareCall corpus JSON."""
    from rolecall.formats.carecall import write_carecall

    count = write_carecall(target, read_dialogues(source))
    out.print(f"{target}: {count} dialogues")
