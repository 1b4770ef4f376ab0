"""Progress bars for long loops (rich, on stderr). Disabled bars cost nothing.

Where stderr is no terminal (a log file, ``nohup``, a pipe), a bar would show only once it
is done; there a plain line is written instead at every tenth of the work and at least
every ``LINE_SECONDS``, so a multi-hour run in a log says how far it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

_console = Console(stderr=True)
LINE_SECONDS = 60.0


@contextmanager
def progress_bar(
    total: int, description: str, enabled: bool = True, start: int = 0
) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(steps=1)``; shows a bar on stderr while the block runs; ``start``:
    steps done before (a resumed run), counted as done but not in the time left."""
    if not enabled:
        yield lambda steps=1: None
        return
    if not _console.is_terminal:
        yield _plain_lines(total, description, start)
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=_console, transient=False) as bar:
        task = bar.add_task(description, total=total, completed=start)
        yield lambda steps=1: bar.advance(task, steps)


def say(message: str) -> None:
    """One line on stderr: what a long run is doing, next to its bars."""
    _console.print(message, highlight=False, markup=False)


def _plain_lines(total: int, description: str, start: int = 0) -> Callable[[int], None]:
    """``advance`` that writes ``description: done/total (p%), elapsed, left`` lines."""
    started = last = time.monotonic()
    done = start
    shown_tenth = 10 * start // total if total else 0

    def advance(steps: int = 1) -> None:
        nonlocal done, last, shown_tenth
        done += steps
        now = time.monotonic()
        tenth = 10 * done // total if total else 10
        if tenth > shown_tenth or now - last >= LINE_SECONDS or done >= total:
            shown_tenth, last = tenth, now
            elapsed = now - started
            now_done = done - start
            left = elapsed * (total - done) / now_done if now_done and total > done else 0.0
            percent = f" ({100 * done // total}%)" if total else ""
            _console.print(
                f"{description}: {done}/{total}{percent}, {_clock(elapsed)} elapsed, "
                f"{_clock(left)} left",
                highlight=False,
                markup=False,
            )

    return advance


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
