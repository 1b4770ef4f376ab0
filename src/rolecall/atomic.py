"""Files written whole or not at all: the content goes to a temp file beside the target
(``NAME.tmp``), is flushed to disk, and the temp file is renamed over the target, so a
killed writer leaves the old file or none, never half of one; a writer that fails
removes its temp file. The one way rolecall writes a file that a later run reads."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """The temp path to write ``path`` through, for a library that writes to a path (FAISS,
    NumPy): renamed over ``path`` when the block ends, removed when it raises."""
    path = Path(path)
    temp = path.with_name(path.name + ".tmp")
    try:
        yield temp
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    os.replace(temp, path)


@contextmanager
def atomic_open(
    path: str | Path, mode: str = "w", encoding: str = "utf-8", newline: str | None = None
) -> Iterator[IO[Any]]:
    """``open`` for writing ``path`` whole or not at all (text in ``encoding`` unless
    ``mode`` is binary); the data is on disk before the rename."""
    binary = "b" in mode
    with atomic_path(path) as temp:
        with open(
            temp, mode, encoding=None if binary else encoding, newline=None if binary else newline
        ) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_open(path) as handle:
        handle.write(text)


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    with atomic_open(path, "wb") as handle:
        handle.write(data)
