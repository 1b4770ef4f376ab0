"""The ray engine: the work function runs as Ray Data ``map_batches`` over an actor pool.

Each actor opens its own ``LLM`` client from the driver's ``LLMSettings`` (so an in-process
llama.cpp or transformers model is loaded once per actor, and an OpenAI-compatible server
is shared by every actor); ``--concurrency`` (at most the server's ``max_concurrency``) is
split between the actors so the total stays the same. Records cross process lines as JSON
strings (nested fields and ``None`` survive Arrow unchanged), and each output batch ends
with one trailer record carrying what the batch's calls cost, which the driver sums into
``stats``.

The cluster is ``--ray-address`` / ``RAY_ADDRESS`` when given, else a local one started
on loopback (``ray.init(num_cpus=max(2, workers), include_dashboard=False)``).
"""

from __future__ import annotations

import importlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import fields
from typing import Any
from urllib.parse import urlencode

from rolecall.errors import RolecallError
from rolecall.llm.client import RunStats
from rolecall.llm.registry import parse_model_string

INSTALL = "pip install 'rolecall[ray]'"
_STATS = "__engine_stats__"


def import_ray():
    """The ``ray`` module, or an error that names the extra to install."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise RolecallError(
            "the ray engine needs Ray Data, which is not installed",
            fix=f"{INSTALL} (or run with --engine local)",
        ) from None
    return ray


def start_ray(address: str | None = None, num_cpus: int = 2):
    """Connect to ``address``, or start a local cluster on loopback; once per process."""
    ray = import_ray()
    if not ray.is_initialized():
        if address:
            ray.init(address=address, logging_level="WARNING")
        else:
            ray.init(
                num_cpus=num_cpus,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                logging_level="WARNING",
            )
    return ray


class _Worker:
    """One actor: one LLM client, the work function applied to each batch it is given."""

    def __init__(self, settings, work, params: dict, plugins: str):
        if plugins:  # backends registered by plugins (tests' fake backend, user schemes)
            os.environ["ROLECALL_PLUGINS"] = plugins
            for name in filter(None, plugins.split(",")):
                importlib.import_module(name.strip())
        self.llm = settings.open()
        self.work = work
        self.params = params

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        stats = self.llm.stats
        counts = [f.name for f in fields(stats) if f.name not in ("failed_items", "seconds")]
        before = {name: getattr(stats, name) for name in counts}
        failed_before = len(stats.failed_items)
        records = [json.loads(text) for text in batch["record"]]
        results = self.work(self.llm, records, **self.params)
        out = [json.dumps(r, ensure_ascii=False) for r in results]
        delta: dict[str, Any] = {name: getattr(stats, name) - before[name] for name in counts}
        delta["failed_items"] = stats.failed_items[failed_before:]
        trailer = {_STATS: delta, "model_id": self.llm.model_id}
        out.append(json.dumps(trailer, ensure_ascii=False))
        return {"record": np.array(out, dtype=object)}


def _per_server_bound(spec) -> int | None:
    """An ``openai:`` model string's ``max_concurrency`` (else the backend's default): the
    calls each of its servers takes at once; ``None`` for another scheme or a bad value
    (``load_backend`` reports it in the actor, as locally)."""
    if spec.scheme != "openai":
        return None
    from rolecall.llm.openai_compat import OpenAIOptions

    default = OpenAIOptions.model_fields["max_concurrency"].default
    try:
        return max(1, int(spec.options.get("max_concurrency", default)))
    except ValueError:
        return None


def server_bound(model: str | None) -> int | None:
    """The calls OpenAI-compatible servers are given at once: the model string's
    ``max_concurrency`` (else the backend's default) per server, times the servers of a
    pool (``openai:URL1,URL2?...``). All the actors share it: split between them, so the
    servers see no more on Ray than from one local client. ``None`` for an in-process
    backend: every actor loads its own model."""
    spec = parse_model_string(model)
    per_server = _per_server_bound(spec)
    return None if per_server is None else per_server * len(spec.location.split(","))


def actor_model(model: str | None, workers: int) -> str | None:
    """The model string each actor opens: for OpenAI-compatible servers, the per-server
    ``max_concurrency`` divided between the actors (at least 1 each), so that the actors
    together never give one server more than its bound, even when a pool's node is down
    and each actor sends its whole share to the others. The option is not part of the
    model id, so the call-cache keys are the driver's."""
    spec = parse_model_string(model)
    per_server = _per_server_bound(spec)
    if per_server is None:
        return model
    options = dict(spec.options, max_concurrency=str(max(1, per_server // max(1, workers))))
    return f"{spec.scheme}:{spec.location}?{urlencode(options)}"


def batch_size_for(settings, records: int, workers: int) -> int:
    """Records per ``map_batches`` batch: 16 rounds of an actor's concurrency, so that a
    batch keeps every one of the actor's calls busy and Ray's fixed cost per batch
    (measured on loopback: ~40 ms, ~20% of a 16-record batch at concurrency 8) is a few
    percent; but no more than an even share of ``records`` (at least 16), so that every
    actor works on a job of some size."""
    share = -(-records // max(1, workers))
    return min(16 * settings.concurrency, max(16, share))


class RayEngine:
    """Runs ``work(llm, batch, **params)`` on a pool of ``workers`` Ray actors."""

    name = "ray"

    def __init__(
        self,
        settings,
        *,
        address: str | None = None,
        workers: int = 2,
        batch_size: int | None = None,
        progress: bool = False,
    ):
        import_ray()
        self.model = settings.model  # as given: a judge's backend opens it on the driver
        bound = server_bound(settings.model)  # a bad model string fails here, not in an actor
        self.workers = max(1, workers)
        per_actor = max(1, min(settings.concurrency, bound or settings.concurrency) // self.workers)
        self.settings = type(settings)(
            model=actor_model(settings.model, self.workers),
            cache=str(settings.cache),
            concurrency=per_actor,
            retries=settings.retries,
        )
        self.address = address
        self.batch_size = batch_size
        self.progress = progress
        self.stats = RunStats()
        self.model_id: str | None = None

    def judge_llm(self):
        """An ``LLM`` for a judge whose calls run on these actors (``calls.EngineLLM``)."""
        from rolecall.engines.calls import EngineLLM
        from rolecall.llm import load_backend

        return EngineLLM(load_backend(self.model), self)

    def map(self, work, records: list[dict], params: dict[str, Any]) -> Iterator[dict]:
        if not records:
            return
        ray = start_ray(self.address, num_cpus=max(2, self.workers))
        ray.data.DataContext.get_current().enable_progress_bars = self.progress
        started = time.perf_counter()
        items = [{"record": json.dumps(r, ensure_ascii=False)} for r in records]
        dataset = ray.data.from_items(items).map_batches(
            _Worker,
            fn_constructor_kwargs={
                "settings": self.settings,
                "work": work,
                "params": params,
                "plugins": os.environ.get("ROLECALL_PLUGINS", ""),
            },
            compute=ray.data.ActorPoolStrategy(size=min(self.workers, len(records))),
            batch_size=self.batch_size or batch_size_for(self.settings, len(records), self.workers),
        )
        try:
            for row in dataset.iter_rows():
                record = json.loads(row["record"])
                if _STATS in record:
                    self._add(record[_STATS])
                    self.model_id = record["model_id"]
                else:
                    yield record
        finally:
            self.stats.seconds += time.perf_counter() - started

    def run(self, work, records: list[dict], params: dict[str, Any], on_row) -> None:
        """``map``, each output record given to ``on_row`` as its batch comes back."""
        for row in self.map(work, records, params):
            on_row(row)

    def _add(self, delta: dict) -> None:
        for name, value in delta.items():
            setattr(self.stats, name, getattr(self.stats, name) + value)
