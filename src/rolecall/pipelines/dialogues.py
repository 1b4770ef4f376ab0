"""The role-specified dialogue pipeline from one YAML file (NAACL 2022, sections 3.1-3.2):
generate -> judge -> export -> stats.

``rolecall dialogues run CONFIG`` (see ``examples/carecall/pipeline.yaml``). The step
commands (``dialogues generate``, ``dialogues judge``) call the same stage functions, so a
run made step by step and one made by ``dialogues run`` write the same files:

- ``generate``: ``dialogues.jsonl`` and ``rejected.jsonl``, append-only, keyed by dialogue;
- ``judge``: every vote in ``verdicts.jsonl`` (the judge's sink, appended as produced),
  then ``judged.jsonl`` (each system turn's flag up to the first out-of-bounds one) and
  ``examples.jsonl`` (the first-out-of-bounds split), written here, whole;
- ``export``: ``judged.carecall.json``, the judged dialogues in the CareCall corpus format;
- ``stats``: ``stats.json``, the paper's Table 2 for the generated dialogues next to the
  example dialogues.

A killed run resumes: finished calls come from the LLM cache, finished records are kept.
A directory started with other settings is refused (``RunDir``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field, model_serializer

from rolecall.engines import Engine, Models
from rolecall.errors import InputFileError
from rolecall.generate.dialogues import MAX_COPY, GenerationConfig, generate_dialogues
from rolecall.jsonl import read_jsonl, write_jsonl
from rolecall.judge.dialogues import judge_dialogues_by_panel
from rolecall.judge.out_of_bounds import JUDGE, make_panel
from rolecall.judge.voting import Member
from rolecall.llm import LLM
from rolecall.pipelines.default_judges import (
    Defaults,
    config_entry,
    out_of_bounds_default,
    record_defaults,
    warnings_of,
)
from rolecall.pipelines.judges import record_judges, relative_to, resolve_judges
from rolecall.pipelines.run_config import RunConfig, Section, common_paths, input_path
from rolecall.pipelines.steps import (
    Step,
    check_until,
    llm_stage,
    run_models,
    run_steps,
)
from rolecall.prompts import load_template
from rolecall.records import Dialogue, RoleSpec
from rolecall.rundir import Files, RunDir, write_json
from rolecall.spec import load_role_spec
from rolecall.yaml_files import load_yaml_model

STAGES = ("generate", "judge", "export", "stats")
CONFIG_HELP = "see examples/carecall/pipeline.yaml for a complete pipeline config"
CARECALL_EXPORT = "judged.carecall.json"
STATS = "stats.json"


class GenerateSection(Section):
    count: int = Field(10, ge=1, description="dialogues to generate")
    temperature: float = Field(0.5, ge=0)
    top_p: float = Field(0.8, gt=0, le=1)
    max_tokens: int = Field(768, ge=16)
    seed: int = 0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    min_turns: int = Field(6, ge=2)
    accept_unfinished: bool = False
    max_copy: float | None = Field(
        MAX_COPY,
        ge=0,
        le=1,
        description="reject a dialogue when more than this share of its character 4-grams "
        "are its one-shot example's (a near copy); null: keep every one",
    )

    @model_serializer(mode="wrap")
    def _unset_default_left_out(self, handler):
        # subtle: max_copy came later; left out at its default, the settings of a run
        # directory started before it stay the same and the run resumes (the dialogues it
        # accepted stay; new ones are checked)
        data = handler(self)
        if data.get("max_copy") == MAX_COPY:
            data.pop("max_copy")
        return data


class JudgeSection(Section):
    model: str | list[str] | None = Field(
        None,
        description="judge (default: the run's model): a model string, classifier:PATH or "
        "rules:NAME; a list is a panel, majority over all their votes",
    )
    mode: Literal["auto", "score", "generate"] = "auto"
    samples: int = Field(1, ge=1, description="votes per turn (majority decides)")
    temperature: float = Field(0.0, ge=0)
    default_judges: Literal["auto", "llm", "rules"] = Field(
        "auto",
        description="no judge named: auto (rules:carecall when the judge model is the "
        "embedded one, else the LLM), llm or rules (pipelines/default_judges)",
    )

    @model_serializer(mode="wrap")
    def _unset_default_left_out(self, handler):
        # subtle: default_judges came later; left out while auto, the settings of a run
        # directory started before it stay the same and the run resumes
        data = handler(self)
        if data.get("default_judges") == "auto":
            data.pop("default_judges")
        return data


class DialogueRunConfig(RunConfig):
    """``out``, ``model``, cache, concurrency, retries and engine: ``RunConfig`` (the
    engine runs the calls of generate and judge)."""

    spec: str = Field(description="role specification (YAML)")
    examples: str = Field(description="example dialogues (JSONL or CareCall .json)")
    generate: GenerateSection = GenerateSection()
    judge: JudgeSection = JudgeSection()
    stats: bool = True


def load_dialogue_config(path: str | Path) -> DialogueRunConfig:
    """Read and validate a pipeline config; relative paths are relative to its file."""
    path = Path(path)
    config = load_yaml_model(path, DialogueRunConfig, "dialogue pipeline config", CONFIG_HELP)
    base = path.resolve().parent
    updates = {
        **common_paths(config, base),
        "spec": input_path(path, "spec", config.spec),
        "examples": input_path(path, "examples", config.examples),
    }
    judges = [relative_to(base, m) for m in judge_strings(config.judge)]
    if judges:
        model = judges if isinstance(config.judge.model, list) else judges[0]
        updates["judge"] = config.judge.model_copy(update={"model": model})
    return config.model_copy(update=updates)


def judge_strings(section: JudgeSection) -> list[str]:
    """The judge strings of the section (empty: the run's model)."""
    model = section.model
    return [] if model is None else [model] if isinstance(model, str) else list(model)


def read_dialogues(path: str | Path) -> list[Dialogue]:
    """Rolecall Dialogue JSONL, a CareCall corpus file (.json), or a .json list of rolecall
    dialogues."""
    from rolecall.formats.carecall import read_carecall

    path = Path(path)
    if path.suffix != ".json":
        return list(read_jsonl(path, Dialogue))
    try:
        return read_carecall(path)
    except InputFileError:
        listed = _rolecall_list(path)
        if listed is None:
            raise
        return listed


def _rolecall_list(path: Path) -> list[Dialogue] | None:
    """A .json file that is a list of rolecall dialogues (objects with "turns" and no
    CareCall "guid"), each read as a ``Dialogue``; None when the file is not such a list."""
    from pydantic import ValidationError

    from rolecall.errors import describe_validation
    from rolecall.textfiles import read_text_file

    try:
        data = json.loads(read_text_file(path))
    except (InputFileError, ValueError):
        return None
    if not isinstance(data, list) or not data:
        return None
    if not all(isinstance(d, dict) and "turns" in d and "guid" not in d for d in data):
        return None
    dialogues = []
    for index, raw in enumerate(data):
        try:
            dialogues.append(Dialogue.model_validate(raw))
        except ValidationError as exc:
            raise InputFileError(
                path, f"dialogues[{index}] is not a valid Dialogue: {describe_validation(exc)}"
            ) from None
    return dialogues


def example_dialogues(path: str | Path) -> list[Dialogue]:
    """The one-shot examples (``read_dialogues``); a file without a dialogue is an error
    before any run directory is made."""
    shots = read_dialogues(path)
    if not shots:
        raise InputFileError(
            path,
            "holds no dialogue to show the model",
            fix="give example dialogues with --examples (examples/carecall/dialogues.jsonl is one)",
        )
    return shots


def generation_config(section: GenerateSection, language: str) -> GenerationConfig:
    return GenerationConfig(
        count=section.count,
        temperature=section.temperature,
        top_p=section.top_p,
        max_tokens=section.max_tokens,
        seed=section.seed,
        min_turns=section.min_turns,
        frequency_penalty=section.frequency_penalty,
        presence_penalty=section.presence_penalty,
        language=language,
        require_end=not section.accept_unfinished,
        max_copy=section.max_copy,
    )


# -- the stages (the step commands call these too) ------------------------------------------


def generate_stage(
    engine: Engine,
    run: RunDir,
    spec: RoleSpec,
    shots: Sequence[Dialogue],
    config: GenerationConfig,
) -> dict:
    """The dialogues, by ``engine`` (here or on Ray)."""
    run.record_prompt(config.template, load_template(config.template, spec.language).source)
    return llm_stage(
        run,
        "generate",
        "generator",
        engine,
        lambda: generate_dialogues(engine, spec, shots, config, run.path),
    )


def judge_stage(
    panel: Sequence[Member],
    run: RunDir,
    dialogues: Sequence[Dialogue],
    samples: int = 1,
    progress: bool = True,
    defaults: Defaults | None = None,
) -> dict:
    """Judge with ``panel`` (one LLM judge, or several judges of any kind: see
    ``out_of_bounds.make_panel``) and write the judged dialogues and the examples;
    ``defaults``: the default judge the panel holds, if any, recorded with why."""
    record_defaults(run, defaults or {})
    llms = record_judges(run, [panel])
    before = [llm.stats.as_dict() for llm in llms]
    outcome, judged, examples = judge_dialogues_by_panel(
        panel, dialogues, run.path, samples, progress
    )
    write_jsonl(run.file(Files.JUDGED), judged)
    write_jsonl(run.file(Files.EXAMPLES), examples)
    counts = {
        "dialogues": len(dialogues),
        **outcome,
        "positive_examples": sum(e.label == "positive" for e in examples),
        "negative_examples": sum(e.label == "negative" for e in examples),
    }
    run.finish_stage("judge", counts, llms, before)
    return counts


def judge_panel(
    strings: Sequence[str | None],
    spec: RoleSpec,
    open_llm: Callable[[str | None], LLM],
    mode: str = "auto",
    temperature: float = 0.0,
) -> list[Member]:
    """The out-of-bounds panel the judge strings name (``pipelines/judges.py``)."""
    members = resolve_judges(strings, JUDGE, open_llm, spec)
    return make_panel(spec, members, mode, temperature)


def modes_of(panel: Sequence[Member]) -> str:
    """The LLM judges' modes, for a stage's one-line summary (``rules`` etc. for others)."""
    modes = [m[1].mode if isinstance(m, tuple) else m.kind for m in panel]
    return ", ".join(dict.fromkeys(modes))


def export_stage(run: RunDir) -> dict[str, str]:
    from rolecall.formats.carecall import write_carecall

    judged = list(read_jsonl(run.file(Files.JUDGED), Dialogue))
    target = run.file(CARECALL_EXPORT)
    write_carecall(target, judged)
    run.record_stage("export", {"exported_dialogues": len(judged)})
    return {"carecall": str(target), "examples": str(run.file(Files.EXAMPLES))}


def stats_stage(run: RunDir, shots: Sequence[Dialogue]) -> dict:
    """Table 2: the judged dialogues (with their examples) next to the example dialogues."""
    from rolecall.eval.stats import dataset_stats, stats_to_json
    from rolecall.records import Example

    judged = list(read_jsonl(run.file(Files.JUDGED), Dialogue))
    examples = list(read_jsonl(run.file(Files.EXAMPLES), Example))
    columns = {"generated": dataset_stats(judged, examples), "examples": dataset_stats(shots)}
    write_json(run.file(STATS), json.loads(stats_to_json(columns)))
    run.record_stage("stats", {"stats_dialogues": len(judged)})
    return columns


# -- the whole run -------------------------------------------------------------------------


@dataclass
class _Run:
    """What the stages of one ``dialogues run`` share: config, run directory, spec, the
    example dialogues and the models opened so far (each distinct model string once)."""

    config: DialogueRunConfig
    run: RunDir
    models: Models  # each model opened once, here or on the engine (steps.run_models)
    progress: bool
    spec: RoleSpec
    shots: list[Dialogue]
    defaults: Defaults  # the judge's default when none is named (pipelines/default_judges)


def _generate_step(r: _Run) -> tuple[dict, str]:
    c = r.config
    config = generation_config(c.generate, r.spec.language)
    # on ray the driver loads no model
    engine = r.models.engine()
    counts = generate_stage(engine, r.run, r.spec, r.shots, config)
    return counts, json.dumps(counts, ensure_ascii=False) + (
        f"; on {engine.name}: {engine.stats.summary()}" if engine.name != "local" else ""
    )


def _judge_step(r: _Run) -> tuple[dict, str]:
    section = r.config.judge
    strings = judge_strings(section) or [s for d in r.defaults.values() for s in d.strings()]
    panel = judge_panel(strings, r.spec, r.models.judge_llm, section.mode, section.temperature)
    dialogues = list(read_jsonl(r.run.file(Files.DIALOGUES), Dialogue))
    counts = judge_stage(panel, r.run, dialogues, section.samples, r.progress, r.defaults)
    on_engine = r.models.judges_elsewhere()
    line = f"({modes_of(panel)} mode) " + json.dumps(counts, ensure_ascii=False)
    return counts, line + on_engine


def _export_step(r: _Run) -> tuple[dict, str]:
    files = export_stage(r.run)
    return files, ", ".join(f"{k} {v}" for k, v in files.items())


def _stats_step(r: _Run) -> tuple[dict, str] | None:
    if not r.config.stats:
        return None
    columns = stats_stage(r.run, r.shots)
    generated = columns["generated"]["eojeol"]
    return columns, (
        f"{generated['dialogues']} dialogues, distinct-1 "
        f"{generated['distinct_1']:.3f} -> {r.run.file(STATS)}"
    )


STEPS: list[tuple[str, Step]] = [
    ("generate", _generate_step),
    ("judge", _judge_step),
    ("export", _export_step),
    ("stats", _stats_step),
]
assert tuple(name for name, _ in STEPS) == STAGES


def run_dialogues(
    config: DialogueRunConfig,
    load_llm: Callable[[str | None], LLM],
    until: str = "stats",
    progress: bool = True,
    say: Callable[[str], None] = print,
) -> dict:
    """Run the stages up to ``until``; returns per-stage results for the CLI to print.

    ``load_llm(model_string)`` opens a model; the generator is also the default judge,
    unless it is the embedded model (``pipelines/default_judges.py``: then the rule judge
    ``rules:carecall``, and the choice is part of the recorded config).
    """
    check_until(STEPS, until)
    spec = load_role_spec(config.spec)
    shots = example_dialogues(config.examples)
    section = config.judge
    defaults = out_of_bounds_default(
        judge_strings(section), section.default_judges, config.model, spec
    )
    for warning in warnings_of(defaults):
        say(f"warning: {warning}")
    settings = config.model_dump(mode="json") | config_entry(defaults)
    run = RunDir(config.out, "dialogues run", settings)
    state = _Run(
        config, run, run_models(config, load_llm, progress), progress, spec, shots, defaults
    )
    return run_steps(STEPS, state, until, say)
