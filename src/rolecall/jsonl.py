"""JSONL files: line-numbered errors on read, atomic writes, and resumable appends.

``read_jsonl`` names the file and line of the first bad record (not JSON, not an object,
or not valid as the given record type); ``read_json_object`` reads a whole file that is
one JSON object (a report, a manifest) with the same errors. ``write_jsonl`` replaces a
file atomically.
``ResumableJsonl`` is the output file of a stage that may be killed at any point: each
record is appended and flushed as soon as it exists, and on reopening the records already
there are kept, a last line cut off by a kill is dropped, and their keys are reported so
that the stage does only the rest (no loss, no duplicates).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rolecall.atomic import atomic_open
from rolecall.errors import InputFileError, describe_validation, utf8_fix

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)


def parse_line(path: str | Path, number: int, line: str, model: type[M] | None = None):
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        # exc.colno counts from the last newline, which is the line's own end: a missing "}"
        # would read as "column 1" of the next line
        end = exc.pos >= len(line.rstrip("\r\n"))
        where = "at the end of the line" if end else f"at column {exc.pos + 1}"
        raise InputFileError(
            path, f"not valid JSON ({exc.msg} {where})", fix=_lines_fix(path, line), line=number
        ) from None
    if not isinstance(data, dict):
        raise InputFileError(
            path,
            f"expected a JSON object, found {type(data).__name__}",
            fix="each line must be one JSON object",
            line=number,
        )
    if model is None:
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputFileError(
            path, f"not a valid {model.__name__}: {describe_validation(exc)}", line=number
        ) from None


def _lines_fix(path: str | Path, line: str) -> str:
    """What to do about a line that is not JSON: the file may be a CSV, or a JSON list
    written across lines, rather than JSON lines."""
    if Path(path).suffix.lower() in (".csv", ".tsv"):
        return "this is a CSV file, and JSON lines are read here: give the .jsonl file"
    if line.lstrip().startswith("["):
        return "the file is a JSON list: JSON lines hold one object per line, without [ ]"
    return "each line must be one JSON object"


def read_json_object(path: str | Path, fix: str) -> dict[str, Any]:
    """The JSON object in the file ``path``; an ``InputFileError`` with ``fix`` when it is
    not UTF-8, not JSON (with the line) or not an object."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputFileError(
            path, f"not valid JSON ({exc.msg})", fix=fix, line=exc.lineno
        ) from None
    except UnicodeDecodeError as exc:
        raise InputFileError(path, f"not valid JSON (not UTF-8: {exc.reason})", fix=fix) from None
    if not isinstance(data, dict):
        raise InputFileError(path, f"expected a JSON object, found {type(data).__name__}", fix=fix)
    return data


def read_jsonl(path: str | Path, model: type[M] | None = None) -> Iterator[Any]:
    """Yield the records of a JSONL file (dicts, or ``model`` instances); blank lines skipped."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(
            path, "file not found" if not path.exists() else "not a file", fix="check the path"
        )
    with path.open(encoding="utf-8-sig") as handle:  # -sig: a byte-order mark is dropped
        number = 0
        while True:
            try:
                line = handle.readline()
            except UnicodeDecodeError:
                raise InputFileError(
                    path, "is not UTF-8 text", line=number + 1, fix=utf8_fix(path)
                ) from None
            if not line:
                return
            number += 1
            if line.strip():
                yield parse_line(path, number, line, model)


def _dump(record: BaseModel | dict) -> str:
    if isinstance(record, BaseModel):
        return record.model_dump_json()
    return json.dumps(record, ensure_ascii=False)


def write_jsonl(path: str | Path, records: Iterable[BaseModel | dict]) -> int:
    """Write all records to ``path`` atomically (a temp file renamed over it); returns count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with atomic_open(path) as handle:
        for record in records:
            handle.write(_dump(record) + "\n")
            count += 1
    return count


class ResumableJsonl:
    """An append-only JSONL output keyed by ``key(record_dict)``; see the module docstring."""

    def __init__(self, path: str | Path, key: Callable[[dict], Any]):
        self.path = Path(path)
        self.key = key
        self.records: list[dict] = []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            self._recover()
        self.done = {self.key(r) for r in self.records}
        self._handle = self.path.open("a", encoding="utf-8")

    def _recover(self) -> None:
        data = self.path.read_bytes()
        cut = data.rfind(b"\n") + 1  # everything after the last newline is an incomplete line
        for number, raw in enumerate(data[:cut].split(b"\n")[:-1], start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputFileError(
                    self.path,
                    "is not UTF-8 text",
                    line=number,
                    fix="move the file away and run again",
                ) from None
            if line.strip():
                self.records.append(parse_line(self.path, number, line))
        if data[cut:].strip():
            # subtle: a kill during a write leaves a last line without its newline (maybe
            # cut inside a UTF-8 character); drop it and let the stage produce it again.
            log.warning(
                "%s: dropping an incomplete last line left by an interrupted run", self.path
            )
        if cut < len(data):
            with self.path.open("r+b") as handle:
                handle.truncate(cut)

    def append(self, record: BaseModel | dict) -> None:
        data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
        key = self.key(data)
        if key in self.done:
            return
        self._handle.write(json.dumps(data, ensure_ascii=False) + "\n")
        self._handle.flush()
        self.done.add(key)
        self.records.append(data)

    def close(self) -> None:
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()

    def __enter__(self) -> ResumableJsonl:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
