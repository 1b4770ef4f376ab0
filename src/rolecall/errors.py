"""Every error rolecall raises on purpose.

Each error carries a message that says what was wrong and a ``fix`` that says what to do;
the CLI prints both and exits non-zero (see ``cli/app.py``). Keep this module small: a new
error class only when callers must tell it apart from the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class RolecallError(Exception):
    """Base class: ``message`` says what went wrong, ``fix`` how to fix it."""

    exit_code = 1

    def __init__(self, message: str, fix: str | None = None):
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return self.message if not self.fix else f"{self.message}\n  fix: {self.fix}"


class ConfigError(RolecallError):
    """A setting, option or argument has a bad value."""

    exit_code = 2


class ChangedSettings(ConfigError):
    """A run directory started with other settings than the command now gives it."""


class BadModelString(ConfigError):
    """A model string does not parse or names an unknown backend or option."""


class BackendNotInstalled(RolecallError):
    """The backend's Python package is missing."""


class UnsupportedCapability(RolecallError):
    """A request asks a backend for something it declared it cannot do."""


class InputFileError(RolecallError):
    """A file is missing, unreadable or malformed; names the file and the line."""

    def __init__(self, path, message: str, fix: str | None = None, line: int | None = None):
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}", fix)
        self.path = str(path)
        self.line = line


class BackendError(RolecallError):
    """A backend call failed. ``transient`` errors (timeouts, 429, 5xx) are retried."""

    def __init__(self, message: str, fix: str | None = None, transient: bool = False):
        super().__init__(message, fix)
        self.transient = transient


class BatchFailed(RolecallError):
    """A batch finished but some items still failed after retries (records are kept)."""

    exit_code = 3


def describe_validation(exc: Any, whole: str = "record") -> str:
    """One line from a pydantic ``ValidationError``: ``field[0].sub: message; ...``."""
    problems = []
    for error in exc.errors():
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        problems.append(f"{path.lstrip('.') or whole}: {message}")
    return "; ".join(problems)


def utf8_fix(path: str | Path) -> str:
    """The fix for a text file that is not UTF-8: most often a Korean Windows (CP949) file
    (``textfiles.read_text_file`` guesses the encoding; the readers below it say this)."""
    return (
        f"save it as UTF-8; a Korean Windows (CP949/EUC-KR) file converts with: "
        f"iconv -f cp949 -t utf-8 {path} > {path}.utf8"
    )
