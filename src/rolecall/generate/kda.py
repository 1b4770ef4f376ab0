"""K/DA toxic rewriting (ACL 2025): neutral sentence + n retrieved comments -> candidate.

For each neutral sentence and each n in ``ns`` (default 0, 3, 5, 7, 9), the top-n comments
of the slang index are put into the prompt (n = 0: no comments at all) and the LLM rewrites
the sentence into an implicitly offensive variant that keeps its meaning. Each candidate is
a ``Pair`` whose provenance records the sentence id, n, the retrieved comment ids, the
prompt template's hash, the model and the seed. Candidate ``SENTENCE_ID/nN`` always gets the
same prompt and seed, so a resumed run asks only for what is missing (the cache answers
the rest). An empty answer, or one that merely repeats the sentence, is a rejected
candidate with its reason; the filters (``judge/``) decide everything else. The calls run
here or on an engine (``rolecall.engines``, e.g. on Ray); the candidates are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rolecall.engines import Engine
from rolecall.errors import ConfigError
from rolecall.jsonl import ResumableJsonl
from rolecall.llm import Request, SamplingParams
from rolecall.llm.batch import complete_records_with_model
from rolecall.prompts import Template, load_template
from rolecall.records import Pair, Rejected
from rolecall.rundir import Files
from rolecall.slang.index import SlangIndex

DEFAULT_NS = (0, 3, 5, 7, 9)


class KdaConfig(BaseModel):
    """How candidates are written: the ``generate`` section of a ``kda run`` config and
    the options of ``rolecall kda generate`` (the language is the run's, not this)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ns: tuple[int, ...] = Field(DEFAULT_NS, description="retrieved comments per rewrite")
    temperature: float = Field(0.8, ge=0)
    top_p: float = Field(0.95, gt=0, le=1)
    max_tokens: int = Field(80, ge=1)
    seed: int = 0
    template: str = "detox_rewrite"

    @field_validator("ns")
    @classmethod
    def _ns(cls, ns: tuple[int, ...]) -> tuple[int, ...]:
        if not ns or any(n < 0 for n in ns) or len(set(ns)) != len(ns):
            raise ValueError("a list of distinct numbers >= 0, e.g. [0, 3, 5, 7, 9]")
        return ns


def check_index_holds(ns: Sequence[int], index: SlangIndex, option: str) -> None:
    """A ``ConfigError`` naming ``option`` (``--ns``, ``generate.ns``) when an n asks for
    more retrieved comments than the index holds: that many could never come back."""
    if max(ns) > len(index):
        raise ConfigError(
            f"{option} asks for {max(ns)} retrieved comments but the index holds {len(index)}",
            fix=f"keep every n of {option} at {len(index)} or less, or index a larger corpus",
        )


@dataclass(frozen=True)
class Planned:
    candidate_id: str
    sentence_id: str
    neutral: str
    n: int
    comment_ids: tuple[str, ...]
    request: Request


def plan_candidates(
    sentences: Sequence[tuple[str, str]],
    index: SlangIndex | None,
    config: KdaConfig,
    template: Template,
) -> list[Planned]:
    """One request per (sentence, n); retrieval runs once per sentence at the largest n."""
    largest = max(config.ns)
    if largest and index is None:
        raise ValueError("n > 0 needs a slang index")
    hits = (
        index.search_many([text for _, text in sentences], k=largest)
        if largest
        else [[] for _ in sentences]
    )
    stop = ("\n",)
    plan = []
    for number, ((sentence_id, neutral), found) in enumerate(zip(sentences, hits)):
        for n in config.ns:
            chosen = found[:n]
            prompt = template.render(neutral=neutral, comments=[h.text for h in chosen])
            params = SamplingParams(
                temperature=config.temperature,
                top_p=config.top_p,
                max_tokens=config.max_tokens,
                stop=stop,
                seed=config.seed + number * 100 + n,
            )
            plan.append(
                Planned(
                    f"{sentence_id}/n{n}",
                    sentence_id,
                    neutral,
                    n,
                    tuple(h.id for h in chosen),
                    Request(prompt=prompt, params=params),
                )
            )
    return plan


def candidate_problem(neutral: str, text: str) -> str | None:
    if not text:
        return "empty rewrite"
    if " ".join(text.split()) == " ".join(neutral.split()):
        return "the rewrite repeats the neutral sentence"
    return None


def generate_candidates(
    engine: Engine,
    sentences: Sequence[tuple[str, str]],
    index: SlangIndex | None,
    config: KdaConfig,
    out_dir: Path,
    language: str = "ko",
) -> dict[str, int]:
    """Write ``candidates.jsonl`` and ``rejected_candidates.jsonl``; resumable.

    ``complete_records_with_model`` runs over ``{"id": candidate id, "request"}`` records
    on ``engine`` (``rolecall.engines``: locally each candidate is written as its call
    finishes, on Ray as its batch comes back)."""
    template = load_template(config.template, language)
    plan = plan_candidates(sentences, index, config, template)
    with (
        ResumableJsonl(
            out_dir / Files.CANDIDATES, key=lambda r: r["provenance"]["candidate_id"]
        ) as kept,
        ResumableJsonl(out_dir / Files.REJECTED_CANDIDATES, key=lambda r: r["id"]) as rejected,
    ):
        todo = [p for p in plan if p.candidate_id not in kept.done | rejected.done]

        def write(planned: Planned, raw: str, model_id: str) -> None:
            text = raw.strip()
            provenance = {
                "candidate_id": planned.candidate_id,
                "sentence_id": planned.sentence_id,
                "n": planned.n,
                "comment_ids": list(planned.comment_ids),
                "prompt_hash": template.hash,
                "model": model_id,
                "seed": planned.request.params.seed,
            }
            problem = candidate_problem(planned.neutral, text)
            if problem:
                rejected.append(
                    Rejected(id=planned.candidate_id, reason=problem, raw=raw, metadata=provenance)
                )
            else:
                kept.append(Pair(neutral=planned.neutral, toxic=text, provenance=provenance))

        by_id = {p.candidate_id: p for p in todo}
        records = [
            {"id": p.candidate_id, "request": p.request.model_dump(mode="json")} for p in todo
        ]

        def on_row(row: dict) -> None:
            if "error" not in row:  # a failure: in the engine's stats, asked again next run
                write(by_id[row["id"]], row["text"], row["model"])

        engine.run(complete_records_with_model, records, {"description": "rewriting"}, on_row)
        stats = engine.stats
        return {
            "sentences": len(sentences),
            "planned": len(plan),
            "candidates": len(kept.records),
            "rejected": len(rejected.records),
            "failed": stats.failures,
        }
