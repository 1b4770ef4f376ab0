"""The local engine: the work function runs in this process on one ``LLM`` client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rolecall.llm.client import LLM, RunStats


class LocalEngine:
    """Runs ``work(llm, records, **params)`` once over every record, here and now."""

    name = "local"

    def __init__(self, llm: LLM):
        self.llm = llm

    @property
    def stats(self) -> RunStats:
        return self.llm.stats

    @property
    def model_id(self) -> str:
        return self.llm.model_id

    def map(self, work, records: list[dict], params: dict[str, Any]) -> Iterator[dict]:
        if records:
            yield from work(self.llm, records, **params)
