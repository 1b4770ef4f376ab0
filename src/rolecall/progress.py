"""Progress bars for long loops (rich, on stderr). Disabled bars cost nothing."""

from __future__ import annotations

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


@contextmanager
def progress_bar(
    total: int, description: str, enabled: bool = True
) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(steps=1)``; shows a bar on stderr while the block runs."""
    if not enabled:
        yield lambda steps=1: None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=_console, transient=False) as bar:
        task = bar.add_task(description, total=total)
        yield lambda steps=1: bar.advance(task, steps)
