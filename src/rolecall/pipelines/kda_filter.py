"""The filter stage of the K/DA pipeline: its config section and the stage function.

``filter_stage`` runs pair consistency, then implicit offensiveness, over the generated
candidates with the judges the ``filter`` section names (``pipelines/judges.py``); a filter
with no judge named gets its default judge (``pipelines/default_judges.py``). Both
``kda run`` (``pipelines/kda.py``) and ``kda filter`` call it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from rolecall.errors import InputFileError
from rolecall.jsonl import read_jsonl, write_jsonl
from rolecall.llm import LLM
from rolecall.pipelines.default_judges import Defaults, kda_defaults, record_defaults
from rolecall.pipelines.judges import relative_to
from rolecall.records import Pair
from rolecall.rundir import Files, RunDir, write_json

# settings that came later: left out of a run's recorded config while unset (see below)
UNSET_FILTER_KEYS = {
    "consistency_models": None,
    "implicit_models": None,
    "default_judges": "auto",
    "judge_data": None,
}


class FilterSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    models: list[str] = Field(
        default_factory=list,
        description="judges of both filters: model strings, classifier:PATH or rules:NAME; "
        "empty: the default judges (default_judges). Several: majority over all their votes",
    )
    consistency_models: list[str] | None = Field(
        None, description="judges of the consistency filter only (default: models)"
    )
    implicit_models: list[str] | None = Field(
        None, description="judges of the implicit filter only (default: models)"
    )
    mode: Literal["auto", "score", "generate"] = "auto"
    samples: int = Field(1, ge=1, description="votes per candidate and judge model")
    temperature: float = Field(0.0, ge=0)
    calibrate: bool = Field(
        False,
        description="score mode: divide out each label word's "
        "prior on content-free inputs (Zhao et al. 2021)",
    )
    consistency_template: str | None = None
    implicit_template: str | None = None
    default_judges: Literal["auto", "llm", "trained"] = Field(
        "auto",
        description="a filter with no judge named: auto (trained judges when the judge "
        "model is the embedded one, else the LLM), llm or trained (pipelines/default_judges)",
    )
    judge_data: str | None = Field(
        None, description="the shared data folder the trained judges are trained on"
    )

    def judges_of(self, name: str) -> list[str]:
        """The judge strings of filter ``name`` (empty: its default judge)."""
        own = self.consistency_models if name == "consistency" else self.implicit_models
        return own if own is not None else self.models

    @model_serializer(mode="wrap")
    def _unset_lists_left_out(self, handler):
        # subtle: the per-filter lists and the default judges came later; left out while
        # unset, the settings of a run directory started before them stay the same and
        # the run resumes
        data = handler(self)
        for key, unset in UNSET_FILTER_KEYS.items():
            if data.get(key) == unset:
                data.pop(key, None)
        return data


def judges_relative_to(base: Path, section: FilterSection) -> FilterSection:
    """``section`` with its ``classifier:`` paths and ``judge_data`` relative to ``base``
    (the config file's directory), as every other path of a config."""
    lists = ("models", "consistency_models", "implicit_models")
    updates = {
        key: [relative_to(base, m) for m in getattr(section, key)]
        for key in lists
        if getattr(section, key) is not None
    }
    if section.judge_data:
        data = Path(section.judge_data).expanduser()
        updates["judge_data"] = str(data if data.is_absolute() else base / data)
    return section.model_copy(update=updates)


def _natural_key(text: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def candidates_file(run_dir: Path) -> Path:
    """The run's candidates file, or an ``InputFileError`` when generate has not made it."""
    path = run_dir / Files.CANDIDATES
    if not path.exists():
        raise InputFileError(
            path, "no candidates", fix="run 'rolecall kda generate --out DIR' first"
        )
    return path


def read_candidates(run_dir: Path) -> list[Pair]:
    """The candidates in sentence order, then n: the same whatever order calls finished."""
    pairs = list(read_jsonl(candidates_file(run_dir), Pair))
    return sorted(
        pairs,
        key=lambda p: (_natural_key(p.provenance.get("sentence_id", "")), p.provenance.get("n", 0)),
    )


def filter_stage(
    open_llm: Callable[[str | None], LLM],
    run: RunDir,
    section: FilterSection,
    language: str,
    progress: bool = True,
    defaults: Defaults | None = None,
    say: Callable[[str], None] = print,
) -> dict:
    """Both filters with the judges ``section`` names (``pipelines/judges.py``), a filter
    with none named with its default judge (``defaults``, from ``kda_defaults``: computed
    here for the default model when not given; a trained one is trained on first use, and
    ``say`` tells); ``open_llm(model string or None)`` opens an LLM judge, each once."""
    from rolecall.judge.filtering import filter_pairs
    from rolecall.judge.pair_filters import FILTERS, make_panel
    from rolecall.pipelines.judges import llms_of, record_judges, resolve_judges

    pairs = read_candidates(run.path)
    defaults = kda_defaults(section, None) if defaults is None else defaults
    record_defaults(run, defaults)  # the callers print its warnings, before any work
    members = [
        resolve_judges(section.judges_of(name) or defaults[name].strings(say), name, open_llm)
        for name in FILTERS
    ]
    llms = llms_of(members)
    before = [llm.stats.as_dict() for llm in llms]  # before calibration: its calls count
    templates = {"consistency": section.consistency_template, "implicit": section.implicit_template}
    panels = [
        make_panel(
            name,
            judges,
            language,
            section.mode,
            templates[name],
            section.temperature,
            section.calibrate,
        )
        for name, judges in zip(FILTERS, members)
    ]
    record_judges(run, panels)
    report, kept = filter_pairs(panels, pairs, run.path, section.samples, progress)
    write_jsonl(run.file(Files.PAIRS), kept)
    write_json(run.file(Files.RETENTION), report)
    priors = {
        f"{member[1].name} {member[0].model_id}": {
            w: round(lp, 4) for w, lp in member[1].prior.items()
        }
        for panel in panels
        for member in panel
        if isinstance(member, tuple) and member[1].prior
    }
    counts = {
        "candidates": len(pairs),
        "pairs": report["overall"]["kept"],
        **{f"retention_{f['filter']}": f["retention"] for f in report["filters"]},
        **({"label_priors": priors} if priors else {}),
    }
    run.finish_stage("filter", counts, llms, before)
    return report
