"""The one loop of a pipeline run: its stages as a list of named steps, run up to one;
``llm_stage``, how a stage that calls an LLM (here or on an engine) is recorded;
``judge_llm``, the LLM of a judge on a config's engine.

A step takes the run's shared state and returns ``(result, line)``, the line being what
the CLI prints, or ``None`` when the config skips it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rolecall.engines import engine_llm
from rolecall.errors import ConfigError
from rolecall.rundir import RunDir

Step = Callable[[Any], "tuple[Any, str] | None"]


def llm_stage(
    run: RunDir, stage: str, role: str, llm: Any, engine: Any, work: Callable[[], dict]
) -> dict:
    """``work()``, a stage writing its records by ``llm`` here or by ``engine``
    (``rolecall.engines``) wherever it runs them; the model is recorded as ``role`` and the
    calls' statistics under ``stage`` (``RunDir.finish_stage``: a failed call stops the run
    there, every finished record kept). subtle: the ray engine learns its model id from
    its workers' answers, so it is recorded after the work (a rerun with nothing left to
    ask keeps the id already in the manifest)."""
    caller = llm if engine is None else engine
    if engine is None:
        run.record_model(role, llm.model_id)
    before = caller.stats.as_dict()
    counts = work()
    if engine is not None and engine.model_id:
        run.record_model(role, engine.model_id)
    run.finish_stage(stage, counts, [caller], [before])
    return counts


def judge_llm(config: Any, model: str | None, progress: bool, here: Callable[[Any], Any]):
    """The LLM of an LLM judge of ``model``: its calls on the engine of ``config`` (a run
    config's ``engine``, ``ray_address``, ``workers``, ``cache``, ``concurrency`` and
    ``retries``; ``engines.engine_llm``), or ``here(model)`` for ``engine: local``."""
    on_engine = engine_llm(
        config.engine,
        model,
        config.cache,
        config.concurrency,
        config.retries,
        address=config.ray_address,
        workers=config.workers,
        progress=progress,
    )
    return on_engine or here(model)


def engine_summary(engine: str, judges: dict, opened: dict) -> str:
    """``; MODEL on ENGINE: STATS`` for each of ``judges`` whose calls ran on ``engine``
    (those opened here are in ``opened``, and their statistics printed with them)."""
    return "".join(
        f"; {llm.model_id} on {engine}: {llm.stats.summary()}"
        for key, llm in judges.items()
        if llm is not opened.get(key)
    )


def run_steps(
    steps: Sequence[tuple[str, Step]], state: Any, until: str, say: Callable[[str], None] = print
) -> dict[str, Any]:
    """Run ``steps`` in order up to and including ``until``; the results by stage."""
    names = [name for name, _ in steps]
    if until not in names:
        raise ConfigError(f"unknown stage '{until}'", fix=f"use one of {tuple(names)}")
    results: dict[str, Any] = {}
    for name, step in steps[: names.index(until) + 1]:
        done = step(state)
        if done is not None:
            results[name], line = done
            say(f"{name}: {line}")
    return results
