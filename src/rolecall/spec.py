"""Role specifications in YAML: loading with precise errors (file, field, what is wrong).

The format is ``RoleSpec`` in ``records.py`` (see ``examples/carecall/spec.yaml``): an
``outline`` (who the bot is, what it does, how long a call lasts) and ``categories``, each
with a description, forbidden examples and the error category a violation maps to.
"""

from __future__ import annotations

from pathlib import Path

from rolecall.records import RoleSpec
from rolecall.yaml_files import load_yaml_model

SPEC_HELP = "see examples/carecall/spec.yaml for a complete role specification"


def load_role_spec(path: str | Path) -> RoleSpec:
    return load_yaml_model(path, RoleSpec, "role specification", SPEC_HELP)
