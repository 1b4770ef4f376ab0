"""Where a stage's LLM work runs: in this process (``local``, the default) or on Ray Data.

A stage hands an engine a *work function* and a list of JSON records. The work function is
a plain module-level function ``work(llm, records, **params) -> list[dict]`` that calls
an LLM for a batch of records and returns output records; the engine decides where it
runs and with which client:

- ``local``: one ``LLM`` client in this process (``local.py``), the whole list in one
  call; ``run`` hands on each output record the moment its call finishes.
- ``ray``: ``ray.data.from_items(records).map_batches(...)`` over a pool of actors, each
  actor opening its own client from the same ``LLMSettings`` (model string, cache file,
  concurrency, retries); the driver receives the output records as batches finish.

Either way the caller (the stage, on the driver) writes the records into its run
directory, so resuming, fingerprints and manifests are the engine's business nowhere.

One door: ``open_engine`` always gives an engine, local or Ray. A generation stage takes
it and calls ``engine.run(work, records, params, on_row)``; a judging stage takes
``engine.judge_llm()``, an ``LLM`` whose ``generate`` runs on the engine (locally the
client itself; on Ray ``calls.EngineLLM``), and parses, votes and writes its verdicts on
the driver as always. ``Models`` opens each model a run or a command uses once.
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

    def judge_llm(self) -> LLM:
        """An ``LLM`` whose calls run on this engine, for a judge (locally: the client)."""
        ...


def ray_address(address: str | None) -> str | None:
    """``--ray-address``, else ``RAY_ADDRESS``, else ``None`` (a local cluster)."""
    return address or os.environ.get("RAY_ADDRESS") or None


def open_engine(
    name: str,
    settings: LLMSettings,
    *,
    llm: LLM | None = None,
    address: str | None = None,
    workers: int = 2,
    batch_size: int | None = None,
    progress: bool = False,
) -> Engine:
    """The engine ``name`` names (``local`` or ``ray``); the local one runs on ``llm``
    (default: ``settings`` opened here)."""
    if name == "local":
        from rolecall.engines.local import LocalEngine

        return LocalEngine(llm or settings.open(), progress)
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


class Models:
    """Each model a run or a command calls, opened once, where ``choice`` says its calls
    run: ``llm(model)`` here (``open_here(model)``: the command's loader, with the same
    ``cache``, ``concurrency`` and ``retries`` an engine's workers open it with);
    ``engine(model)`` the engine for a generation stage; ``judge_llm(model)`` an LLM for a
    judge, on an engine of its own (its statistics are the judge's). ``None`` means the
    ``default`` model."""

    def __init__(
        self,
        choice: EngineChoice,
        cache: str | os.PathLike | None,
        concurrency: int,
        retries: int,
        open_here: Callable[[str | None], LLM],
        default: str | None = None,
        progress: bool = False,
    ):
        self.choice, self.open_here = choice, open_here
        self.cache, self.concurrency, self.retries = cache, concurrency, retries
        self.default, self.progress = default, progress
        self.here: dict[str | None, LLM] = {}
        self.engines: dict[str | None, Engine] = {}
        self.judges: dict[str | None, LLM] = {}

    def llm(self, model: str | None = None) -> LLM:
        key = model or self.default
        if key not in self.here:
            self.here[key] = self.open_here(key)
        return self.here[key]

    def _open(self, key: str | None) -> Engine:
        choice = self.choice
        return open_engine(
            choice.name,
            llm_settings(key, self.cache, self.concurrency, self.retries),
            llm=self.llm(key) if choice.name == "local" else None,
            address=choice.address,
            workers=choice.workers,
            progress=self.progress,
        )

    def engine(self, model: str | None = None) -> Engine:
        key = model or self.default
        if key not in self.engines:
            self.engines[key] = self._open(key)
        return self.engines[key]

    def judge_llm(self, model: str | None = None) -> LLM:
        key = model or self.default
        if key not in self.judges:
            self.judges[key] = self._open(key).judge_llm()
        return self.judges[key]

    def judges_elsewhere(self) -> str:
        """``; MODEL on ENGINE: STATS`` for each judge whose calls ran on another engine
        than this process (those here print their statistics with the models opened)."""
        return "".join(
            f"; {llm.model_id} on {self.choice.name}: {llm.stats.summary()}"
            for key, llm in self.judges.items()
            if llm is not self.here.get(key)
        )
