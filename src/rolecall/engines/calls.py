"""An ``LLM`` whose calls run on an engine: how the judging stages reach Ray (#18).

A judge (``judge/voting.py``'s ``collect_votes``, K/DA's calibration, G-Eval) asks its
``LLM`` for ``generate(requests, n)`` and turns the samples into verdicts. ``EngineLLM`` is
that ``LLM`` on the driver: the backend opened here answers what a judge asks before any
call (its capabilities, for ``auto`` mode and constrained output; its model id), while
``generate`` sends the requests to the engine's workers as ``generate_samples`` records
and puts the samples back in request order. The judge parses, votes and writes its
verdict file on the driver exactly as locally, so resume and reports do not change.

The work function is ``generate_samples``: each worker's own ``LLM`` (its cache, retries,
share of the concurrency) runs the requests, so a call is cached under the key the local
engine uses, and a rerun on either engine asks nothing already answered.

subtle: the driver opens the backend too. For an OpenAI-compatible server that is a
client object; an in-process model (``llamacpp:``, ``hf:``) is loaded once more here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from rolecall.llm.base import Backend, Completion, Request, check_capabilities
from rolecall.llm.client import LLM, Sample


def generate_samples(llm: LLM, records: list[dict], n: int = 1) -> list[dict]:
    """The work function: ``{"index", "request"}`` records (``request`` as JSON) -> one
    ``{"index", "samples"}`` row each, its ``n`` samples as JSON, failed ones with ``error``."""
    requests = [Request.model_validate(record["request"]) for record in records]
    results = llm.generate(requests, n)
    return [
        {"index": record["index"], "samples": [_sample_row(s) for s in samples]}
        for record, samples in zip(records, results)
    ]


def _sample_row(sample: Sample) -> dict:
    completion = sample.completion
    return {
        "sample_index": sample.sample_index,
        "completion": completion.model_dump(mode="json") if completion is not None else None,
        "error": sample.error,
        "attempts": sample.attempts,
        "cached": sample.cached,
    }


class EngineLLM(LLM):
    """``backend`` (opened here) for what a judge asks of its model; ``engine`` for its
    calls. ``stats`` is the engine's: what the workers' calls cost."""

    def __init__(self, backend: Backend, engine: Any):
        super().__init__(backend)  # its in-memory cache is never used: the workers cache
        self.engine = engine
        self.stats = engine.stats

    def generate(
        self, requests: Sequence[Request], n: int = 1, **options: Any
    ) -> list[list[Sample]]:
        if n < 1:
            raise ValueError("n must be at least 1")
        for request in requests:  # refuse the whole batch here, before any worker starts
            check_capabilities(self.backend, request)
        on_sample = options.get("on_sample")
        results = [[Sample(i, s) for s in range(n)] for i in range(len(requests))]
        records = [
            {"index": i, "request": request.model_dump(mode="json")}
            for i, request in enumerate(requests)
        ]
        for row in self.engine.map(generate_samples, records, {"n": n}):
            for data in row["samples"]:
                sample = results[row["index"]][data["sample_index"]]
                completion = data["completion"]
                sample.completion = Completion.model_validate(completion) if completion else None
                sample.error = data["error"]
                sample.attempts = data["attempts"]
                sample.cached = data["cached"]
                if on_sample is not None:
                    on_sample(sample)
        return results

    async def agenerate(
        self, requests: Sequence[Request], n: int = 1, **options: Any
    ) -> list[list[Sample]]:
        return await asyncio.to_thread(self.generate, requests, n, **options)
