"""YAML files people write (role specs, pipeline configs): read with precise errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from rolecall.errors import InputFileError, describe_validation, utf8_fix

Model = TypeVar("Model", bound=BaseModel)


def read_yaml_mapping(path: str | Path, what: str, fix: str) -> dict[str, Any]:
    """The top-level mapping of a UTF-8 YAML file; errors name the file and the line."""
    path = Path(path)
    if path.is_dir():
        raise InputFileError(path, f"is a directory, not the {what} file", fix="name the file")
    if not path.is_file():
        raise InputFileError(path, f"{what} not found", fix="check the path")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputFileError(path, "is not UTF-8 text", fix=utf8_fix(path)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        # JSON lines (a data file given for a spec or a config) fail as YAML at line 2
        lines = path.suffix.lower() == ".jsonl" or text.lstrip().startswith("{")
        raise InputFileError(
            path,
            f"not valid YAML: {problem}",
            line=line,
            fix=f"this is JSON lines, not a {what}: {fix}"
            if lines
            else "check indentation and quoting on that line",
        ) from None
    if not isinstance(data, dict):
        raise InputFileError(path, f"a {what} must be a YAML mapping", fix=fix)
    return data


def load_yaml_model(path: str | Path, model: type[Model], what: str, fix: str) -> Model:
    """``read_yaml_mapping`` validated as ``model``; errors give the exact field."""
    data = read_yaml_mapping(path, what, fix)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        meant = [
            _meant_key(model, e["loc"]) for e in exc.errors() if e["type"] == "extra_forbidden"
        ]
        meant = [key for key in meant if key]
        raise InputFileError(
            path,
            f"invalid {what}: {describe_validation(exc, '(top level)')}",
            fix=f"did you mean {', '.join(meant)}?" if meant else fix,
        ) from None


def _meant_key(model: type[BaseModel], where: tuple) -> str | None:
    """The key a misspelt one (``generate.cont``) was likely meant to be
    (``generate.count``): the closest field name of the section it is in."""
    import difflib

    section: Any = model
    for part in where[:-1]:
        field = section.model_fields.get(part) if isinstance(part, str) else None
        section = field and field.annotation
        if not (isinstance(section, type) and issubclass(section, BaseModel)):
            return None
    close = difflib.get_close_matches(str(where[-1]), list(section.model_fields), n=1)
    return ".".join([*map(str, where[:-1]), close[0]]) if close else None
