"""The local engine: the work function runs in this process on one ``LLM`` client, and
``run`` hands each output record on the moment its call finishes (a killed run keeps
every finished record). A judge's LLM on it is that client itself."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from rolecall.llm.client import LLM, RunStats


class LocalEngine:
    """Runs ``work(llm, records, **params)`` once over every record, here and now."""

    name = "local"

    def __init__(self, llm: LLM, progress: bool = False):
        self.llm, self.progress = llm, progress

    @property
    def stats(self) -> RunStats:
        return self.llm.stats

    @property
    def model_id(self) -> str:
        return self.llm.model_id

    def judge_llm(self) -> LLM:
        return self.llm

    def map(self, work, records: list[dict], params: dict[str, Any]) -> Iterator[dict]:
        if records:
            yield from work(self.llm, records, **params)

    def run(
        self, work, records: list[dict], params: dict[str, Any], on_row: Callable[[dict], None]
    ) -> None:
        """``work`` over ``records`` with each output record given to ``on_row`` as its
        call finishes (``work`` takes ``on_row`` and ``progress``: ``llm/batch.py``)."""
        if records:
            work(self.llm, records, progress=self.progress, on_row=on_row, **params)
