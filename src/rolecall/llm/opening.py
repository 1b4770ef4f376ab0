"""The one way to open a model string as an ``LLM`` client: its backend (``registry``) and
the call cache (the one given, else the configured one: ``ROLECALL_CACHE`` or
``ROLECALL_HOME/cache.sqlite``, SQLite or PostgreSQL), with the client's concurrency and
retries. The CLI, the pipelines' workers, the bot's prompted generator, the web app's
prompted bot and the unanswerable check all open models here, so each gets the same cache
and the same retry policy."""

from __future__ import annotations

from pathlib import Path

from rolecall import config
from rolecall.llm.cache import open_cache
from rolecall.llm.client import LLM
from rolecall.llm.registry import load_backend


def open_llm(
    model: str | None, cache: str | Path | None = None, concurrency: int = 8, retries: int = 4
) -> LLM:
    """``model`` (None: the default model) with ``cache`` (None: the configured one)."""
    return LLM(
        load_backend(model),
        open_cache(cache or config.cache_path()),
        concurrency=concurrency,
        retries=retries,
    )
