"""``rolecall llm batch``: run a JSONL file of prompts through a model, resumably.

Input lines: ``{"id": ..., "prompt": ...}`` or ``{"id": ..., "messages": [...]}``, optionally
with ``"score_text"`` (log-likelihood of that text after the prompt). Every line gets ``n``
samples. Output lines are appended as each sample finishes and are keyed by (id, sample):
a killed run, started again, keeps every line already written, takes every finished call
from the cache and writes each missing line exactly once. Failures go to
``<out>.failures.jsonl`` (rewritten on each run) and make the run exit non-zero.

The per-item work is ``complete_records``, a plain function over ``{"id", "request"}``
records; ``run_batch`` runs it on the engine it is given (``rolecall.engines``: the local
one streams each sample to the output as it finishes; the Ray one hands back batches)
and writes what comes back into the same output file.
"""

from __future__ import annotations

from collections.abc import Callable
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
    llm: LLM,
    records: list[dict],
    n: int = 1,
    progress: bool = False,
    description: str = "generating",
    on_row: Callable[[dict], None] | None = None,
) -> list[dict]:
    """The work of ``llm batch`` on ``{"id", "request"}`` records (``request`` as JSON):
    one output row per finished sample, one failure row (with ``error``) per failed one;
    given ``on_row`` (the local engine's ``run``), each row goes there as its sample
    finishes and none is returned."""
    requests = [Request.model_validate(record["request"]) for record in records]

    def row_of(sample: Sample) -> dict:
        record = records[sample.request_index]
        if sample.ok:
            return _output_row(record["id"], requests[sample.request_index], sample)
        return _failure_row(record["id"], sample)

    on_sample = None if on_row is None else (lambda sample: on_row(row_of(sample)))
    results = llm.generate(
        requests, n, progress=progress, description=description, on_sample=on_sample
    )
    return [] if on_row is not None else [row_of(s) for samples in results for s in samples]


def complete_records_with_model(
    llm: LLM,
    records: list[dict],
    progress: bool = False,
    description: str = "generating",
    on_row: Callable[[dict], None] | None = None,
) -> list[dict]:
    """``complete_records`` (one sample each), every row naming the model that wrote it:
    the work a generation stage gives its engine (``rolecall.engines``), whose driver puts
    the model id into each record's provenance."""

    def named(row: dict) -> dict:
        return row | {"model": llm.model_id}

    given = None if on_row is None else (lambda row: on_row(named(row)))
    rows = complete_records(llm, records, 1, progress, description, given)
    return [named(row) for row in rows]


def run_batch(engine: Any, batch: BatchInput, out_path: str | Path, n: int = 1) -> RunStats:
    """Run the batch into ``out_path`` on ``engine`` (``rolecall.engines``: locally each
    sample is written as its call finishes); raises ``BatchFailed`` after writing all it
    could."""
    out_path = Path(out_path)
    failures_path = out_path.with_name(out_path.name + ".failures.jsonl")
    with ResumableJsonl(out_path, key=lambda row: (row["id"], row["sample"])) as out:
        todo = [
            i
            for i, item_id in enumerate(batch.ids)
            if any((item_id, s) not in out.done for s in range(n))
        ]
        records = [
            {"id": batch.ids[i], "request": batch.requests[i].model_dump(mode="json")} for i in todo
        ]
        failed: list[dict] = []

        def on_row(row: dict) -> None:
            if "error" in row:
                failed.append(row)
            else:
                out.append(row)

        engine.run(complete_records, records, {"n": n}, on_row)
        order = {item_id: k for k, item_id in enumerate(batch.ids)}
        failed.sort(key=lambda row: (order[row["id"]], row["sample"]))
    stats = engine.stats
    what = f"llm batch ({stats.summary()})"
    record_failures(failures_path, failed, what, out_path, of=len(batch.ids) * n)
    return stats
