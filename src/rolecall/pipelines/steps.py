"""The one loop of a pipeline run: its stages as a list of named steps, run up to one.

A step takes the run's shared state and returns ``(result, line)``, the line being what
the CLI prints, or ``None`` when the config skips it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rolecall.errors import ConfigError

Step = Callable[[Any], "tuple[Any, str] | None"]


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
