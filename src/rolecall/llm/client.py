"""``LLM``: the front door every stage calls. Cache, bounded concurrency, retries, stats.

``LLM.generate(requests, n)`` returns, for each request, ``n`` ``Sample`` records in order.
Every sample is looked up in the cache first; misses run concurrently (at most
``concurrency`` at once, and never more than the backend allows), transient failures
(timeouts, 429, 5xx) are retried with exponential back-off, and a call that still fails
becomes a ``Sample`` with ``error`` set instead of crashing the batch. ``on_sample`` is
called as each sample finishes so that callers can write it out at once.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from rolecall.errors import BackendError
from rolecall.interrupt import calling
from rolecall.llm.base import Backend, Completion, Request, check_capabilities
from rolecall.llm.cache import Cache, cache_key
from rolecall.progress import progress_bar


@dataclass
class Sample:
    request_index: int
    sample_index: int
    completion: Completion | None = None
    error: str | None = None
    attempts: int = 0
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.completion is not None


@dataclass
class RunStats:
    """What a run cost. ``calls`` counts backend invocations, retries included."""

    calls: int = 0
    cache_hits: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    retries: int = 0
    failures: int = 0
    seconds: float = 0.0
    failed_items: list[dict] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.calls} calls, {self.cache_hits} cache hits, "
            f"{self.tokens_in} tokens in / {self.tokens_out} out, "
            f"{self.retries} retries, {self.failures} failures, {self.seconds:.1f}s"
        )

    def as_dict(self) -> dict:
        return asdict(self)


class LLM:
    """A backend plus a cache. Holds run statistics across calls (see ``stats``)."""

    def __init__(
        self,
        backend: Backend,
        cache: Cache | None = None,
        *,
        concurrency: int = 8,
        retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
    ):
        self.backend = backend
        self.cache = cache if cache is not None else Cache(":memory:")
        self.concurrency = max(1, min(concurrency, backend.max_concurrency))
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.stats = RunStats()

    @property
    def model_id(self) -> str:
        return f"{self.backend.scheme}:{self.backend.model_id}"

    def generate(
        self, requests: Sequence[Request], n: int = 1, **options: Any
    ) -> list[list[Sample]]:
        """``agenerate``, blocking (same arguments)."""
        return asyncio.run(self.agenerate(requests, n, **options))

    async def agenerate(
        self,
        requests: Sequence[Request],
        n: int = 1,
        *,
        progress: bool = False,
        description: str = "LLM calls",
        on_sample: Callable[[Sample], None] | None = None,
    ) -> list[list[Sample]]:
        """Run every request ``n`` times (sample indices 0..n-1); ``on_sample`` is called
        with each sample as it finishes."""
        if n < 1:
            raise ValueError("n must be at least 1")
        for request in requests:  # refuse the whole batch up front, never per item
            check_capabilities(self.backend, request)
        started = time.perf_counter()
        results = [[Sample(i, s) for s in range(n)] for i in range(len(requests))]
        gate = asyncio.Semaphore(self.concurrency)
        inflight: dict[str, asyncio.Future] = {}
        with progress_bar(len(requests) * n, description, enabled=progress) as advance:

            async def one(sample: Sample) -> None:
                await self._fill(requests[sample.request_index], sample, gate, inflight)
                advance()
                if on_sample is not None:
                    on_sample(sample)

            await asyncio.gather(*(one(s) for samples in results for s in samples))
        self.stats.seconds += time.perf_counter() - started
        return results

    def complete(self, request: Request) -> Completion:
        """One sample of one request; raises ``BackendError`` if it fails after retries."""
        sample = self.generate([request])[0][0]
        if sample.completion is None:
            raise BackendError(f"LLM call failed: {sample.error}")
        return sample.completion

    async def _fill(
        self,
        request: Request,
        sample: Sample,
        gate: asyncio.Semaphore,
        inflight: dict[str, asyncio.Future],
    ) -> None:
        backend = self.backend
        key = cache_key(backend.scheme, backend.model_id, request, sample.sample_index)
        cached = self.cache.get(key)
        if cached is not None:
            sample.completion, sample.cached = cached, True
            self.stats.cache_hits += 1
            return
        # subtle: the same call can appear twice in one batch (two generated dialogues
        # with the same history); the second waits for the first instead of calling again.
        if key in inflight:
            first = await inflight[key]
            if first.ok:
                sample.completion, sample.cached = first.completion, True
                self.stats.cache_hits += 1
            else:
                sample.error = first.error
                self._record_failure(sample)
            return
        inflight[key] = asyncio.get_running_loop().create_future()
        try:
            await self._call(request, sample, gate, key)
        finally:
            inflight[key].set_result(sample)

    async def _call(
        self, request: Request, sample: Sample, gate: asyncio.Semaphore, key: str
    ) -> None:
        backend = self.backend
        async with gate:
            while True:
                sample.attempts += 1
                self.stats.calls += 1
                try:
                    with calling():  # counted for the Ctrl-C message (rolecall.interrupt)
                        completion = await asyncio.get_running_loop().run_in_executor(
                            backend.executor(), backend.complete, request, sample.sample_index
                        )
                    break
                except BackendError as exc:
                    if not exc.transient or sample.attempts > self.retries:
                        return self._fail(sample, exc)
                    self.stats.retries += 1
                    await asyncio.sleep(self._delay(sample.attempts))
                except Exception as exc:  # a bug or an unexpected library error: keep the batch
                    return self._fail(sample, exc)
        self.cache.put(
            key, backend.scheme, backend.model_id, request, sample.sample_index, completion
        )
        sample.completion = completion
        self.stats.tokens_in += completion.tokens_in
        self.stats.tokens_out += completion.tokens_out

    def _delay(self, attempt: int) -> float:
        # Full jitter keeps many concurrent retries from hitting a recovering server at once.
        return random.uniform(0, min(self.max_backoff, self.backoff * 2 ** (attempt - 1)))

    def _fail(self, sample: Sample, exc: Exception) -> None:
        sample.error = f"{type(exc).__name__}: {exc}"
        self._record_failure(sample)

    def _record_failure(self, sample: Sample) -> None:
        self.stats.failures += 1
        self.stats.failed_items.append(
            {
                "request": sample.request_index,
                "sample": sample.sample_index,
                "attempts": sample.attempts,
                "error": sample.error,
            }
        )

    def close(self) -> None:
        self.backend.close()
