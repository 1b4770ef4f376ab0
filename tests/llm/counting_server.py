"""A stand-in OpenAI-compatible server that counts, on its side, how many calls it holds at
once (``CountingServer``: the most it held is its ``peak``)."""

from __future__ import annotations

import threading
import time

from tests.llm.flaky_server import FakeOpenAIServer


class CountingServer(FakeOpenAIServer):
    """A stand-in that holds each call ``hold`` seconds and records the most it held at
    once (``peak``): the concurrency the server itself saw."""

    def __init__(self, *args, hold: float = 0.03, **kwargs):
        super().__init__(*args, **kwargs)
        self.hold = hold
        self.holding = 0
        self.peak = 0
        self._count = threading.Lock()

    def next_action(self, record):
        with self._count:
            self.holding += 1
            self.peak = max(self.peak, self.holding)
        try:
            time.sleep(self.hold)
            return super().next_action(record)
        finally:
            with self._count:
                self.holding -= 1
