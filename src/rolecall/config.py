"""Settings: where rolecall keeps its files, and the defaults every command starts from.

``ROLECALL_HOME`` (default ``~/.cache/rolecall``) holds the assembled embedded model and the
default LLM cache; ``ROLECALL_MODEL`` overrides the default model string;
``ROLECALL_CACHE`` overrides the cache database path.
"""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    root = Path(os.environ.get("ROLECALL_HOME") or Path.home() / ".cache" / "rolecall")
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_path() -> Path:
    return Path(os.environ.get("ROLECALL_CACHE") or home() / "llm-cache.sqlite")
