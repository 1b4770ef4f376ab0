"""The one loop of a pipeline run: its stages as a list of named steps, run up to one;
``llm_stage``, how a stage that calls an LLM (here or on an engine) is recorded;
``run_models``, the models a run config's stages call, each opened once.

A step takes the run's shared state and returns ``(result, line)``, the line being what
the CLI prints, or ``None`` when the config skips it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rolecall.engines import EngineChoice, Models
from rolecall.errors import ConfigError
from rolecall.rundir import RunDir

Step = Callable[[Any], "tuple[Any, str] | None"]


def llm_stage(run: RunDir, stage: str, role: str, engine: Any, work: Callable[[], dict]) -> dict:
    """``work()``, a stage writing the records ``engine`` (``rolecall.engines``: here or on
    Ray) hands it; the model is recorded as ``role`` and the calls' statistics under
    ``stage`` (``RunDir.finish_stage``: a failed call stops the run there, every finished
    record kept). subtle: the ray engine learns its model id from its workers' answers, so
    it is recorded again after the work (a rerun with nothing left to ask keeps the id
    already in the manifest)."""
    if engine.model_id:
        run.record_model(role, engine.model_id)
    before = engine.stats.as_dict()
    counts = work()
    if engine.model_id:
        run.record_model(role, engine.model_id)
    run.finish_stage(stage, counts, [engine], [before])
    return counts


def run_models(config: Any, load_llm: Callable[[str | None], Any], progress: bool) -> Models:
    """The models a run config's stages call (``engines.Models``), each opened once: here
    with ``load_llm``, or on the engine the config names (its ``engine``, ``ray_address``,
    ``workers``, ``cache``, ``concurrency`` and ``retries``); ``None`` is its ``model``."""
    choice = EngineChoice.of(config)
    return Models(
        choice, config.cache, config.concurrency, config.retries, load_llm, config.model, progress
    )


def check_until(steps: Sequence[tuple[str, Any]], until: str) -> list[str]:
    """The stages' names, when ``until`` is one of them; else a ``ConfigError``: called
    before a run directory is opened, so that a refused command changes nothing."""
    names = [name for name, _ in steps]
    if until not in names:
        raise ConfigError(f"unknown stage '{until}'", fix=f"use one of {tuple(names)}")
    return names


def run_steps(
    steps: Sequence[tuple[str, Step]], state: Any, until: str, say: Callable[[str], None] = print
) -> dict[str, Any]:
    """Run ``steps`` in order up to and including ``until``; the results by stage."""
    names = check_until(steps, until)
    results: dict[str, Any] = {}
    for name, step in steps[: names.index(until) + 1]:
        done = step(state)
        if done is not None:
            results[name], line = done
            say(f"{name}: {line}")
    return results
