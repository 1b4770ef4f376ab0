"""The one loop of a pipeline run: its stages as a list of named steps, run up to one;
``llm_stage``, how a stage that calls an LLM (here or on an engine) is recorded;
``config_engine``, the engine a run config names; ``RunModels``, the models a run opens.

A step takes the run's shared state and returns ``(result, line)``, the line being what
the CLI prints, or ``None`` when the config skips it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rolecall.engines import EngineChoice, engine_llm, llm_settings, stage_engine
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


def stage_engine_or_here(config: Any, progress: bool, open_here: Callable[[], Any]) -> Any:
    """The engine a run config names for its generation stage, or the local engine on
    ``open_here()`` (the run's own LLM) for ``engine: local``."""
    from rolecall.llm.local_engine import LocalEngine

    return config_engine(config, progress) or LocalEngine(open_here(), progress)


def config_engine(config: Any, progress: bool, model: str | None = None, opener=stage_engine):
    """``opener`` (``engines.stage_engine``, or ``engines.engine_llm`` for a judge's LLM)
    on the engine of a run config (its ``engine``, ``ray_address``, ``workers``, ``cache``,
    ``concurrency`` and ``retries``) for ``model`` (default: the config's); ``None`` for
    ``engine: local``."""
    settings = llm_settings(model or config.model, config.cache, config.concurrency, config.retries)
    return opener(EngineChoice.of(config), settings, progress)


class RunModels:
    """The models a run's stages share, each model string opened once: ``llm_for`` here,
    ``judge_llm_for`` an LLM judge's, on the config's engine or here. Mixed into a run's
    state, which holds ``config``, ``load_llm``, ``progress``, ``opened`` and
    ``on_engine``."""

    config: Any
    load_llm: Callable[[str | None], Any]
    progress: bool
    opened: dict
    on_engine: dict

    def llm_for(self, model: str | None):
        key = model or self.config.model
        if key not in self.opened:
            self.opened[key] = self.load_llm(key)
        return self.opened[key]

    def judge_llm_for(self, model: str | None):
        key = model or self.config.model
        if key not in self.on_engine:
            on_engine = config_engine(self.config, self.progress, key, engine_llm)
            self.on_engine[key] = on_engine or self.llm_for(key)
        return self.on_engine[key]


def engine_summary(engine: str, judges: dict, opened: dict) -> str:
    """``; MODEL on ENGINE: STATS`` for each of ``judges`` whose calls ran on ``engine``
    (those opened here are in ``opened``, and their statistics printed with them)."""
    return "".join(
        f"; {llm.model_id} on {engine}: {llm.stats.summary()}"
        for key, llm in judges.items()
        if llm is not opened.get(key)
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
