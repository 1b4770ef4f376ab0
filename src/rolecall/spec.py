"""Role specifications in YAML: loading with precise errors (file, field, what is wrong).

The format is ``RoleSpec`` in ``records.py`` (see ``examples/carecall/spec.yaml``): an
``outline`` (who the bot is, what it does, how long a call lasts) and ``categories``, each
with a description, forbidden examples and the error category a violation maps to.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from rolecall.errors import InputFileError, describe_validation
from rolecall.records import RoleSpec

SPEC_HELP = "see examples/carecall/spec.yaml for a complete role specification"


def load_role_spec(path: str | Path) -> RoleSpec:
    path = Path(path)
    if not path.is_file():
        raise InputFileError(path, "role specification not found", fix="check the path")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InputFileError(path, "is not UTF-8 text", fix="save the file as UTF-8") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputFileError(path, f"not valid YAML: {problem}", line=line,
                             fix="check indentation and quoting on that line") from None
    if not isinstance(data, dict):
        raise InputFileError(path, "a role specification must be a YAML mapping "
                                   "(name, outline, categories)", fix=SPEC_HELP)
    try:
        return RoleSpec.model_validate(data)
    except ValidationError as exc:
        raise InputFileError(path, "invalid role specification: "
                                   f"{describe_validation(exc, '(top level)')}",
                             fix=SPEC_HELP) from None
