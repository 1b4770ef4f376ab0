"""Settings: where rolecall keeps its files, and the defaults every command starts from.

``ROLECALL_HOME`` (default ``~/.cache/rolecall``) holds the assembled embedded model and the
default LLM cache; ``ROLECALL_MODEL`` overrides the default model string;
``ROLECALL_CACHE`` overrides the LLM cache: a SQLite file, or a ``postgresql://`` URL for a
cache every machine of a cluster shares.
"""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    root = Path(os.environ.get("ROLECALL_HOME") or Path.home() / ".cache" / "rolecall")
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_path() -> Path | str:
    """The LLM cache: a file, or a URL kept as a ``str`` (``Path`` would collapse
    ``postgresql://`` to ``postgresql:/``)."""
    where = os.environ.get("ROLECALL_CACHE")
    if where and "://" in where:
        return where
    return Path(where or home() / "llm-cache.sqlite")
