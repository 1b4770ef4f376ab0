"""The whole K/DA pipeline from one YAML file: index -> generate -> filter -> export -> G-Eval.

``rolecall kda run CONFIG`` (see ``examples/kda/config.yaml``). Every stage is resumable
and the run directory says how far it got:

- ``index``: a slang index that exists is loaded (it must have been built from the same
  corpora, checked by their SHA-256); one that is missing or unfinished is (re)built.
- ``generate``, ``filter``: append-only record files keyed by candidate, plus the LLM
  cache: a killed run resumes with exactly the calls it had not finished.
- ``export``, ``geval``: rewritten whole from the finished records (G-Eval's calls come
  from the cache on a re-run).

The individual commands (``kda generate``, ``kda filter``, ``kda export``) call the
same stage functions, so a run made step by step and one made by ``kda run`` are the
same directory. ``engine: ray`` in the config runs the LLM calls of the generate, filter
and G-Eval stages on Ray Data (``rolecall.engines``; the same records); the rest runs here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from rolecall.engines import Engine, Models
from rolecall.errors import ConfigError, InputFileError
from rolecall.generate.kda import KdaConfig, check_index_holds, generate_candidates
from rolecall.jsonl import ResumableJsonl, read_json_object, read_jsonl
from rolecall.korean import HANGUL_RE
from rolecall.llm import LLM
from rolecall.pipelines.default_judges import Defaults, config_entry, kda_defaults, warnings_of
from rolecall.pipelines.kda_filter import (  # noqa: F401  (filter_stage: the CLI's too)
    FilterSection,
    filter_stage,
    judges_relative_to,
)
from rolecall.pipelines.run_config import RunConfig, Section, common_paths, relative_path
from rolecall.pipelines.steps import (
    Step,
    check_until,
    llm_stage,
    run_models,
    run_steps,
)
from rolecall.prompts import load_template
from rolecall.records import Pair
from rolecall.rundir import Files, RunDir, write_json
from rolecall.slang.index import SlangIndex, build_index, parse_corpus_spec
from rolecall.textfiles import read_corpus
from rolecall.yaml_files import load_yaml_model

STAGES = ("index", "generate", "filter", "export", "geval")
EXPORT_FORMATS = ("csv", "parquet", "hf")
CONFIG_HELP = "see examples/kda/config.yaml for a complete pipeline config"


class SlangSection(Section):
    index: str = Field(description="slang index directory: loaded if built, else built")
    corpora: list[str] = Field(default_factory=list, description="PATH[:COLUMN] each")
    delimiter: str | None = None
    min_chars: int = Field(5, ge=0)
    max_chars: int = Field(300, ge=1)
    retriever: Literal["bm25", "dense", "hybrid"] = "bm25"
    dense_model: str | None = None


class SentencesSection(Section):
    path: str = Field(description="neutral sentences: PATH or PATH:COLUMN")
    delimiter: str | None = None
    limit: int | None = Field(None, ge=1)
    max_chars: int = Field(200, ge=1, description="longer sentences are skipped")


class ExportSection(Section):
    name: str = "rolecall K/DA pairs"
    licence: str = "research use; see the sources' licences"
    formats: list[Literal["csv", "parquet", "hf"]] = Field(default_factory=lambda: ["csv"])


class GevalSection(Section):
    enabled: bool = True
    model: str | None = None
    criteria: list[str] = Field(
        default_factory=lambda: ["overall", "implicit", "consistency", "fluency"]
    )
    mode: Literal["auto", "score", "logprobs", "sample"] = "auto"
    samples: int = Field(5, ge=1)
    limit: int | None = Field(None, ge=1, description="first N pairs only")


class KdaRunConfig(RunConfig):
    """``out``, ``model``, cache, concurrency, retries and engine: ``RunConfig`` (the
    engine runs the calls of generate, filter and G-Eval)."""

    language: Literal["ko", "en"] = "ko"
    slang: SlangSection | None = None
    sentences: SentencesSection
    generate: KdaConfig = Field(default_factory=KdaConfig)
    filter: FilterSection = Field(default_factory=FilterSection)
    export: ExportSection = Field(default_factory=ExportSection)
    geval: GevalSection = Field(default_factory=GevalSection)


def _resolve_spec(base: Path, spec: str) -> str:
    """``PATH[:COLUMN]`` with PATH relative to the config file."""
    if Path(spec).is_absolute():
        return spec
    whole = base / spec
    return str(whole) if whole.exists() else relative_path(base, spec)


def load_kda_config(path: str | Path) -> KdaRunConfig:
    """Read and validate a pipeline config; relative paths are relative to its file."""
    path = Path(path)
    config = load_yaml_model(path, KdaRunConfig, "K/DA pipeline config", CONFIG_HELP)
    base = path.resolve().parent
    updates: dict = common_paths(config, base)
    updates["filter"] = judges_relative_to(base, config.filter)
    updates["sentences"] = config.sentences.model_copy(
        update={"path": _resolve_spec(base, config.sentences.path)}
    )
    if config.slang:
        updates["slang"] = config.slang.model_copy(
            update={
                "index": relative_path(base, config.slang.index),
                "corpora": [_resolve_spec(base, c) for c in config.slang.corpora],
            }
        )
    config = config.model_copy(update=updates)
    if max(config.generate.ns) > 0 and config.slang is None:
        raise InputFileError(
            path,
            "generate.ns asks for retrieved comments (n > 0) but there is no slang section",
            fix="add slang: {index: DIR, corpora: [...]} or set generate.ns: [0]",
        )
    return config


# -- neutral sentences -------------------------------------------------------------------


def neutral_sentences(
    spec: str,
    delimiter: str | None = None,
    limit: int | None = None,
    max_chars: int = 200,
    language: str = "ko",
) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """(id, text) of usable sentences from PATH or PATH:COLUMN, and what was skipped.

    Whitespace is collapsed; empty lines, repeats, sentences over ``max_chars`` and, for
    Korean prompts, sentences without Hangul are skipped and counted, never an error: a
    large corpus always has a few. ``limit`` counts usable sentences.
    """
    corpus = parse_corpus_spec(spec, delimiter)
    seen: set[str] = set()
    rows: list[tuple[str, str]] = []
    skipped = {"empty": 0, "duplicate": 0, "too_long": 0, "not_korean": 0}
    for row_id, text in read_corpus(corpus.path, corpus.column, corpus.delimiter):
        if limit and len(rows) >= limit:
            break
        text = " ".join(text.split())
        reason = (
            "empty"
            if not text
            else "duplicate"
            if text in seen
            else "too_long"
            if len(text) > max_chars
            else "not_korean"
            if language == "ko" and not HANGUL_RE.search(text)
            else None
        )
        if reason:
            skipped[reason] += 1
            continue
        seen.add(text)
        rows.append((row_id, text))
    if not rows:
        raise InputFileError(
            corpus.path,
            f"no usable neutral sentence (skipped: {skipped})",
            fix="check the file and the column (PATH:COLUMN)",
        )
    return rows, skipped


# -- stages --------------------------------------------------------------------------------


def index_stage(slang: SlangSection, progress: bool = True) -> SlangIndex:
    """Load the index, or build it when it is missing or unfinished."""
    index_dir = Path(slang.index)
    if (index_dir / "manifest.json").is_file():
        index = SlangIndex.load(index_dir)
        _check_same_corpora(index, slang)
        return index
    if not slang.corpora:
        raise ConfigError(
            f"no slang index at {index_dir} and no corpora to build it from",
            fix="build it with 'rolecall slang index', or list the corpus "
            "files under slang.corpora",
        )
    specs = [parse_corpus_spec(c, slang.delimiter) for c in slang.corpora]
    build_index(
        specs,
        index_dir,
        min_chars=slang.min_chars,
        max_chars=slang.max_chars,
        retriever=slang.retriever,
        dense_model=slang.dense_model,
        progress=progress,
    )
    return SlangIndex.load(index_dir)


def _check_same_corpora(index: SlangIndex, slang: SlangSection) -> None:
    if not slang.corpora:
        return
    built = sorted(s["sha256"] for s in index.manifest.get("sources", []))
    wanted = sorted(_sha256(parse_corpus_spec(c, slang.delimiter).path) for c in slang.corpora)
    if built != wanted:
        raise ConfigError(
            f"the slang index at {index.path} was built from other corpora "
            "than slang.corpora lists",
            fix="point slang.index to a new directory, or delete the old index",
        )


def _sha256(path: Path) -> str:
    if not path.is_file():
        raise InputFileError(path, "slang corpus not found", fix="check slang.corpora")
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def generate_stage(
    engine: Engine,
    run: RunDir,
    rows: Sequence[tuple[str, str]],
    index: SlangIndex | None,
    config: KdaConfig,
    language: str,
) -> dict:
    """The candidates, by ``engine`` (here or on Ray)."""
    run.record_prompt(config.template, load_template(config.template, language).source)
    return llm_stage(
        run,
        "generate",
        "generator",
        engine,
        lambda: generate_candidates(engine, rows, index, config, run.path, language),
    )


def export_stage(run: RunDir, section: ExportSection) -> dict[str, str]:
    """K/DA CSV, Parquet, a Hugging Face dataset and the data card; returns the files."""
    from rolecall.formats.kda import write_data_card

    path = run.file(Files.PAIRS)
    if not path.exists():
        raise InputFileError(path, "no filtered pairs", fix="run 'rolecall kda filter' first")
    pairs = list(read_jsonl(path, Pair))
    retention = run.file(Files.RETENTION)  # written with the pairs by the filter
    if not retention.is_file():
        raise InputFileError(
            retention, "file not found (the filter writes it with the pairs)",
            fix="run 'rolecall kda filter' on this run directory again",
        )  # fmt: skip
    report = read_json_object(retention, fix="run 'rolecall kda filter' again")
    files = {"jsonl": str(path)}
    for kind in section.formats:
        files[kind] = str(EXPORTERS[kind](run.path, pairs, section))
    write_data_card(
        run.path / "DATA_CARD.md",
        name=section.name,
        pairs=len(pairs),
        report=report,
        manifest=run.manifest,
        licence=section.licence,
        sources=_sentence_sources(run.manifest),
    )
    files["card"] = str(run.path / "DATA_CARD.md")
    run.record_stage("export", {"exported_pairs": len(pairs)})
    return files


def _sentence_sources(manifest: dict) -> list[str]:
    """The neutral-sentence files named by the commands that made this run directory."""
    found = set()
    for config in manifest.get("config", {}).values():
        sentences = config.get("sentences") if isinstance(config, dict) else None
        if isinstance(sentences, dict):
            sentences = sentences.get("path")
        if sentences:
            found.add(str(sentences))
    return sorted(found)


def _export_csv(run_dir: Path, pairs: list[Pair], section: ExportSection) -> Path:
    from rolecall.formats.kda import write_kda_csv

    write_kda_csv(run_dir / Files.KDA_CSV, pairs)
    return run_dir / Files.KDA_CSV


def _export_parquet(run_dir: Path, pairs: list[Pair], section: ExportSection) -> Path:
    from rolecall.formats.parquet import write_parquet

    write_parquet(run_dir / "kda.parquet", pairs)
    return run_dir / "kda.parquet"


def _export_hf(run_dir: Path, pairs: list[Pair], section: ExportSection) -> Path:
    from rolecall.formats.parquet import DESCRIPTION, write_hf_dataset

    write_hf_dataset(
        run_dir / "hf_dataset",
        pairs,
        info={"description": f"{section.name}\n\n{DESCRIPTION}", "license": section.licence},
    )
    return run_dir / "hf_dataset"


EXPORTERS: dict[str, Callable[[Path, list[Pair], ExportSection], Path]] = {
    "csv": _export_csv,
    "parquet": _export_parquet,
    "hf": _export_hf,
}


def geval_stage(
    llm: LLM, run: RunDir, section: GevalSection, language: str, progress: bool = True
) -> dict:
    """G-Eval of the kept pairs, written to ``geval.json`` (summary + every item)."""
    from rolecall.eval.geval import geval, summarise

    pairs = list(read_jsonl(run.file(Files.PAIRS), Pair))[: section.limit]
    run.record_model("geval", llm.model_id)
    before = llm.stats.as_dict()
    with ResumableJsonl(
        run.file(Files.GEVAL_VOTES), key=lambda r: (r["item_id"], r["judge"])
    ) as votes:
        results = geval(
            llm,
            [p.toxic for p in pairs],
            [p.neutral for p in pairs],
            section.criteria,
            section.mode,
            section.samples,
            language,
            progress,
            votes_out=votes,
        )
    summary = summarise(results)
    items = [
        {**asdict(r), "candidate_id": pairs[r.item].provenance.get("candidate_id")} for r in results
    ]
    write_json(
        run.file(Files.GEVAL),
        {"model": llm.model_id, "pairs": len(pairs), "summary": summary, "items": items},
    )
    run.finish_stage("geval", {"geval_pairs": len(pairs)}, [llm], [before])
    return summary


# -- the whole run -------------------------------------------------------------------------


@dataclass
class _Run:
    """What the stages of one ``kda run`` share: the config, the run directory, the
    models opened so far (each distinct model string once) and the slang index."""

    config: KdaRunConfig
    run: RunDir
    models: Models  # each model opened once, here or on the engine (steps.run_models)
    progress: bool
    say: Callable[[str], None]
    defaults: Defaults  # the filters' default judges (pipelines/default_judges.py)
    index: SlangIndex | None = None


def _index_step(r: _Run) -> tuple[dict, str] | None:
    if not r.config.slang or max(r.config.generate.ns) == 0:
        return None
    r.index = index_stage(r.config.slang, r.progress)
    check_index_holds(r.config.generate.ns, r.index, "generate.ns")
    r.run.manifest["slang_index"] = {
        "path": str(r.index.path),
        "comments": len(r.index),
        "sources": r.index.manifest.get("sources", []),
    }
    r.run.record_stage("index", {"index_comments": len(r.index)})
    return (
        {"comments": len(r.index), "path": str(r.index.path)},
        f"{len(r.index):,} comments in {r.index.path}",
    )


def _generate_step(r: _Run) -> tuple[dict, str]:
    config = r.config
    rows, skipped = neutral_sentences(
        config.sentences.path,
        config.sentences.delimiter,
        config.sentences.limit,
        config.sentences.max_chars,
        config.language,
    )
    r.run.manifest["neutral_skipped"] = skipped
    # on ray the driver loads no model
    engine = r.models.engine()
    counts = generate_stage(engine, r.run, rows, r.index, config.generate, config.language)
    return counts, (
        json.dumps(counts, ensure_ascii=False)
        + (f"; skipped sentences: {skipped}" if any(skipped.values()) else "")
        + (f"; on {engine.name}: {engine.stats.summary()}" if engine.name != "local" else "")
    )


def _filter_step(r: _Run) -> tuple[dict, str]:
    config = r.config
    report = filter_stage(
        r.models.judge_llm, r.run, config.filter, config.language, r.progress, r.defaults, r.say
    )
    kinds = ", ".join(f"{d.task}: {d.kind}" for d in r.defaults.values() if d.kind != "llm")
    on_engine = r.models.judges_elsewhere()
    return report, ", ".join(
        f"{f['filter']} kept {f['kept']}/{f['in']}" for f in report["filters"]
    ) + (f" (default judges {kinds})" if kinds else "") + on_engine


def _export_step(r: _Run) -> tuple[dict, str]:
    files = export_stage(r.run, r.config.export)
    return files, ", ".join(f"{k} {v}" for k, v in files.items())


def _geval_step(r: _Run) -> tuple[dict, str] | None:
    if not r.config.geval.enabled:
        return None
    summary = geval_stage(
        r.models.judge_llm(r.config.geval.model),
        r.run,
        r.config.geval,
        r.config.language,
        r.progress,
    )
    return summary, ", ".join(
        f"{c} {s['mean']:.2f} ({s['mode']})" for c, s in summary.items() if s["mean"] is not None
    )


STEPS: list[tuple[str, Step]] = [
    ("index", _index_step),
    ("generate", _generate_step),
    ("filter", _filter_step),
    ("export", _export_step),
    ("geval", _geval_step),
]
assert tuple(name for name, _ in STEPS) == STAGES


def run_kda(
    config: KdaRunConfig,
    load_llm: Callable[[str | None], LLM],
    until: str = "geval",
    progress: bool = True,
    say: Callable[[str], None] = print,
) -> dict:
    """Run the stages up to ``until``; returns per-stage results for the CLI to print.

    ``load_llm(model_string)`` opens a model; each distinct model string is opened once
    (the generator is also the G-Eval model, and the default judge unless it is the
    embedded model: ``pipelines/default_judges.py``). A directory started with
    another config is refused (``RunDir``): its records would mix two settings; the
    filters' default judges are part of that config (``default_judges.config_entry``).
    """
    check_until(STEPS, until)
    defaults = kda_defaults(config.filter, config.model)
    if until not in STAGES[: STAGES.index("filter")]:  # said before the work, not after
        for warning in warnings_of(defaults):
            say(f"warning: {warning}")
    settings = config.model_dump(mode="json") | config_entry(defaults)
    run = RunDir(config.out, "kda run", settings)
    state = _Run(config, run, run_models(config, load_llm, progress), progress, say, defaults)
    return run_steps(STEPS, state, until, say)
