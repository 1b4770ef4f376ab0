"""What every pipeline run config shares (``dialogues run``, ``kda run``): the run
directory, the model, how its LLM calls are made (cache, concurrency, retries) and where
(``engine``: local or Ray), and how a config file's relative paths are resolved.

Only ``model`` of these is part of a run's fingerprint: the others are
``rundir.VOLATILE`` (a resumed run may change them; the records come out the same).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Section(BaseModel):
    """A part of a run config: unknown keys are refused (a typo never runs silently)."""

    model_config = ConfigDict(extra="forbid")


class RunConfig(Section):
    out: str = Field(description="run directory (resumable)")
    model: str | None = Field(None, description="generator model string (default: embedded)")
    cache: str | None = Field(None, description="LLM call cache: SQLite file or PostgreSQL URL")
    concurrency: int = Field(8, ge=1)
    retries: int = Field(4, ge=0, description="tries again after a transient LLM error")
    engine: Literal["local", "ray"] = Field("local", description="where the LLM calls run")
    ray_address: str | None = Field(None, description="default: RAY_ADDRESS, else local")
    workers: int = Field(2, ge=1, description="Ray actors, each with its own LLM client")


def relative_path(base: Path, path: str) -> str:
    """``path`` relative to ``base`` (a config file's folder) unless it is absolute."""
    return path if Path(path).is_absolute() else str(base / path)


def input_path(config_file: Path, key: str, path: str) -> str:
    """``path`` of the config's ``key`` resolved against the config's folder, which must
    exist: a config moved away from its inputs is named with the key, not as a missing
    file somewhere later."""
    from rolecall.errors import InputFileError

    base = config_file.resolve().parent
    resolved = relative_path(base, path)
    if not Path(resolved).exists():
        raise InputFileError(
            config_file,
            f"{key}: {resolved} not found (a relative path in a config is read from the "
            f"config's folder, {base})",
            fix=f"give {key} as a path from the config's folder, or an absolute path",
        )
    return resolved


def common_paths(config: RunConfig, base: Path) -> dict[str, str]:
    """The shared fields' paths resolved against ``base``: ``out``, and ``cache`` when it
    is a file (a PostgreSQL URL is kept as given)."""
    updates = {"out": relative_path(base, config.out)}
    if config.cache and "://" not in config.cache:
        updates["cache"] = relative_path(base, config.cache)
    return updates
