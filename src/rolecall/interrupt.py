"""Ctrl-C on a command that is making LLM calls.

The first Ctrl-C stops the run where it is and says so: no new call starts, the calls
already running are waited for (their answers reach the cache, so the resume does not ask
them again), every finished record stays, and each open run directory's manifest records
the interruption (``rundir.mark_interrupted``). A second Ctrl-C abandons the calls in
flight and exits at once (status 130), keeping the same records.

``calling()`` wraps one backend call (``llm/client.py``), so the message can say how many
are in flight; ``install()`` is called once by the ``rolecall`` command (``cli/app.py``),
not by the library: a program that imports rolecall keeps its own SIGINT handling.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_CODE = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C


class Interrupted(BaseException):
    """The first Ctrl-C (a BaseException like KeyboardInterrupt, so no ``except
    Exception`` swallows it; its own class, so click does not turn it into "Aborted!")."""


_lock = threading.Lock()
_in_flight = 0
_pressed = 0


@contextmanager
def calling() -> Iterator[None]:
    """One backend call in flight while the block runs."""
    global _in_flight
    with _lock:
        _in_flight += 1
    try:
        yield
    finally:
        with _lock:
            _in_flight -= 1


def calls_in_flight() -> int:
    return _in_flight


def install() -> None:
    """The two-step Ctrl-C for this process (main thread only, as Python requires)."""
    global _pressed
    _pressed = 0
    signal.signal(signal.SIGINT, _on_ctrl_c)


def _on_ctrl_c(signum, frame) -> None:
    global _pressed
    _pressed += 1
    if _pressed > 1:
        sys.stderr.write("\nabandoned the calls in flight; the finished records are kept\n")
        sys.stderr.flush()
        os._exit(EXIT_CODE)
    n = calls_in_flight()
    waiting = f"waiting for {n} call{'s' if n != 1 else ''} in flight" if n else "stopping now"
    sys.stderr.write(f"\nstopping: {waiting} (Ctrl-C again to abandon them)\n")
    sys.stderr.flush()
    raise Interrupted
