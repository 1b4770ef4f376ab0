"""``rolecall llm batch``: run a JSONL file of prompts through a model, resumably.

Input lines: ``{"id": ..., "prompt": ...}`` or ``{"id": ..., "messages": [...]}``, optionally
with ``"score_text"`` (log-likelihood of that text after the prompt). Every line gets ``n``
samples. Output lines are appended as each sample finishes and are keyed by (id, sample):
a killed run, started again, keeps every line already written, takes every finished call
from the cache and writes each missing line exactly once. Failures go to
``<out>.failures.jsonl`` (rewritten on each run) and make the run exit non-zero.

The per-item work is ``complete_records``, a plain function over ``{"id", "request"}``
records; ``run_batch`` runs it in this process (streaming each sample to the output as it
finishes) or, given an engine (``rolecall.engines``), wherever that engine runs it, and
writes what comes back into the same output file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rolecall.errors import InputFileError, describe_validation
from rolecall.jsonl import ResumableJsonl, read_jsonl
from rolecall.llm.base import Request, SamplingParams
from rolecall.llm.client import LLM, RunStats, Sample
from rolecall.rundir import record_failures


@dataclass
class BatchInput:
    ids: list[str]
    requests: list[Request]


def read_batch_input(path: str | Path, params: SamplingParams) -> BatchInput:
    ids: list[str] = []
    requests: list[Request] = []
    for number, row in enumerate(read_jsonl(path), start=1):
        item_id = str(row.get("id", number))
        if item_id in ids:
            raise InputFileError(
                path,
                f"id '{item_id}' appears twice",
                line=number,
                fix='give every line a unique "id"',
            )
        fields = {k: row[k] for k in ("prompt", "messages", "score_text") if k in row}
        try:
            requests.append(Request(params=params, **fields))
        except ValidationError as exc:
            raise InputFileError(
                path,
                f"not a valid request: {describe_validation(exc)}",
                line=number,
                fix='write {"id": ..., "prompt": "..."} or '
                '{"id": ..., "messages": [{"role": "user", '
                '"content": "..."}]}',
            ) from None
        ids.append(item_id)
    if not requests:
        raise InputFileError(path, "has no requests", fix="add one JSON object per line")
    return BatchInput(ids, requests)


def _output_row(item_id: str, request: Request, sample: Sample) -> dict:
    completion = sample.completion
    row = {
        "id": item_id,
        "sample": sample.sample_index,
        "text": completion.text,
        "finish_reason": completion.finish_reason,
        "tokens_in": completion.tokens_in,
        "tokens_out": completion.tokens_out,
    }
    if completion.logprobs is not None:
        row["logprobs"] = [t.model_dump() for t in completion.logprobs]
    if request.kind == "score":
        row["loglikelihood"] = completion.loglikelihood
        row["perplexity"] = completion.perplexity
    return row


def _failure_row(item_id: str, sample: Sample) -> dict:
    return {
        "id": item_id,
        "sample": sample.sample_index,
        "attempts": sample.attempts,
        "error": sample.error,
    }


def complete_records(
    llm: LLM, records: list[dict], n: int = 1, progress: bool = False
) -> list[dict]:
    """The work of ``llm batch`` on ``{"id", "request"}`` records (``request`` as JSON):
    one output row per finished sample, one failure row (with ``error``) per failed one."""
    requests = [Request.model_validate(record["request"]) for record in records]
    results = llm.generate(requests, n, progress=progress, description="generating")
    return [
        _output_row(record["id"], request, s) if s.ok else _failure_row(record["id"], s)
        for record, request, samples in zip(records, requests, results)
        for s in samples
    ]


def complete_records_with_model(
    llm: LLM, records: list[dict], progress: bool = False
) -> list[dict]:
    """``complete_records`` (one sample each), every row naming the model that wrote it:
    the work a generation stage gives an engine (``rolecall.engines``), whose driver puts
    the model id into each record's provenance as the local path does."""
    rows = complete_records(llm, records, progress=progress)
    return [row | {"model": llm.model_id} for row in rows]


def run_batch(
    llm: LLM | None,
    batch: BatchInput,
    out_path: str | Path,
    n: int = 1,
    progress: bool = True,
    *,
    engine: Any = None,
) -> RunStats:
    """Run the batch into ``out_path``; raises ``BatchFailed`` after writing all it could.

    Without ``engine`` the calls run here on ``llm``; with one (``rolecall.engines``),
    ``complete_records`` runs wherever the engine puts it and ``llm`` may be ``None``."""
    out_path = Path(out_path)
    failures_path = out_path.with_name(out_path.name + ".failures.jsonl")
    with ResumableJsonl(out_path, key=lambda row: (row["id"], row["sample"])) as out:
        todo = [
            i
            for i, item_id in enumerate(batch.ids)
            if any((item_id, s) not in out.done for s in range(n))
        ]
        if engine is None:
            failed = _run_here(llm, batch, todo, out, n, progress)
        else:
            records = [
                {"id": batch.ids[i], "request": batch.requests[i].model_dump(mode="json")}
                for i in todo
            ]
            failed = []
            for row in engine.map(complete_records, records, {"n": n}):
                if "error" in row:
                    failed.append(row)
                else:
                    out.append(row)
            order = {item_id: k for k, item_id in enumerate(batch.ids)}
            failed.sort(key=lambda row: (order[row["id"]], row["sample"]))
    stats = llm.stats if engine is None else engine.stats
    what = f"llm batch ({stats.summary()})"
    record_failures(failures_path, failed, what, out_path, of=len(batch.ids) * n)
    return stats


def _run_here(
    llm: LLM, batch: BatchInput, todo: list[int], out: ResumableJsonl, n: int, progress: bool
) -> list[dict]:
    """In this process, each sample written to ``out`` the moment it finishes."""

    def write(sample: Sample) -> None:
        if sample.ok:
            index = todo[sample.request_index]
            out.append(_output_row(batch.ids[index], batch.requests[index], sample))

    results = llm.generate(
        [batch.requests[i] for i in todo],
        n,
        progress=progress,
        description="generating",
        on_sample=write,
    )
    return [
        _failure_row(batch.ids[todo[s.request_index]], s)
        for samples in results
        for s in samples
        if not s.ok
    ]
