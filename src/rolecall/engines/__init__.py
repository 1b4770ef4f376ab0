"""Where a stage's LLM work runs: in this process (``local``, the default) or on Ray Data.

A stage hands an engine a *work function* and a list of JSON records. The work function is
a plain module-level function ``work(llm, records, **params) -> list[dict]`` that calls
an LLM for a batch of records and returns output records; the engine decides where it
runs and with which client:

- ``local``: one ``LLM`` client in this process (``llm/local_engine.py``), the whole list
  in one call; ``run`` hands on each output record the moment its call finishes.
- ``ray``: ``ray.data.from_items(records).map_batches(...)`` over a pool of actors, each
  actor opening its own client from the same ``LLMSettings`` (model string, cache file,
  concurrency, retries); the driver receives the output records as batches finish.

Either way the caller (the stage, on the driver) writes the records into its run
directory, so resuming, fingerprints and manifests are the engine's business nowhere.
A generation stage has one path: ``engine.run(work, records, params, on_row)`` on the
local engine or on Ray (``stage_engine`` returns ``None`` for ``local``; the caller then
wraps its own ``LLM`` in a ``LocalEngine``).

The judging stages reach an engine through their ``LLM`` instead (``engine_llm``,
``engines/calls.py``): its ``generate`` runs on the engine's workers, and the judge parses,
votes and writes its verdicts on the driver as it does locally.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from rolecall import config
from rolecall.errors import ConfigError
from rolecall.llm.client import LLM, RunStats

Work = Callable[..., list[dict]]
ENGINES = ("local", "ray")


@dataclass(frozen=True)
class LLMSettings:
    """How a worker opens its own LLM client (everything in it crosses process lines)."""

    model: str | None
    cache: str  # a SQLite cache file (one machine or a shared file system) or a PostgreSQL URL
    concurrency: int = 8
    retries: int = 4

    def open(self) -> LLM:
        from rolecall.llm.opening import open_llm

        return open_llm(self.model, self.cache, self.concurrency, self.retries)


class Engine(Protocol):
    name: str
    stats: RunStats  # what the calls cost, summed over every worker
    model_id: str | None  # the workers' model (the ray engine learns it from their answers)

    def map(self, work: Work, records: list[dict], params: dict[str, Any]) -> Iterator[dict]:
        """Run ``work(llm, batch, **params)`` over ``records``; yield its output records."""
        ...

    def run(
        self, work: Work, records: list[dict], params: dict[str, Any], on_row: Callable
    ) -> None:
        """``work`` over ``records``, each output record given to ``on_row`` as soon as
        this engine has it (locally: as its call finishes; on Ray: as its batch returns)."""
        ...


def ray_address(address: str | None) -> str | None:
    """``--ray-address``, else ``RAY_ADDRESS``, else ``None`` (a local cluster)."""
    return address or os.environ.get("RAY_ADDRESS") or None


def open_engine(
    name: str,
    settings: LLMSettings,
    *,
    address: str | None = None,
    workers: int = 2,
    batch_size: int | None = None,
    progress: bool = False,
) -> Engine:
    """The engine ``name`` names (``local`` or ``ray``)."""
    if name == "local":
        from rolecall.engines.local import LocalEngine

        return LocalEngine(settings.open())
    if name == "ray":
        from rolecall.engines.ray import RayEngine

        return RayEngine(
            settings,
            address=ray_address(address),
            workers=workers,
            batch_size=batch_size,
            progress=progress,
        )
    raise ConfigError(f"unknown engine '{name}'", fix=f"use one of: {', '.join(ENGINES)}")


@dataclass(frozen=True)
class EngineChoice:
    """Where a stage's LLM calls run: ``--engine``, ``--ray-address`` and ``--workers``
    of a command, or ``engine``, ``ray_address`` and ``workers`` of a run config."""

    name: str = "local"
    address: str | None = None
    workers: int = 2

    @classmethod
    def of(cls, config: Any) -> EngineChoice:
        """The choice a run config holds."""
        return cls(config.engine, config.ray_address, config.workers)


def llm_settings(
    model: str | None, cache: str | os.PathLike | None, concurrency: int = 8, retries: int = 4
) -> LLMSettings:
    """``LLMSettings`` with ``cache`` defaulting to ``ROLECALL_CACHE`` / the home cache, as
    ``load_llm`` does."""
    return LLMSettings(model, str(cache or config.cache_path()), concurrency, retries)


def stage_engine(
    choice: EngineChoice, settings: LLMSettings, progress: bool = False
) -> Engine | None:
    """The engine ``choice`` names, or ``None`` for ``local``: the stage then calls its own
    ``LLM`` here, streaming each record to its file as it finishes (a killed local run
    loses no finished call)."""
    if choice.name == "local":
        return None
    return open_engine(
        choice.name, settings, address=choice.address, workers=choice.workers, progress=progress
    )


def engine_llm(choice: EngineChoice, settings: LLMSettings, progress: bool = False) -> LLM | None:
    """An ``LLM`` of ``settings.model`` whose calls run on the engine ``choice`` names
    (``engines/calls.py``), for a stage that hands its LLM to a judge; ``None`` for
    ``local``, where the caller opens its own ``LLM`` here as always."""
    engine = stage_engine(choice, settings, progress)
    if engine is None:
        return None
    from rolecall.engines.calls import EngineLLM
    from rolecall.llm import load_backend

    return EngineLLM(load_backend(settings.model), engine)
