"""Role specifications in YAML: loading with precise errors (file, field, what is wrong).

The format is ``RoleSpec`` in ``records.py`` (see ``examples/carecall/spec.yaml``): an
``outline`` (who the bot is, what it does, how long a call lasts) and ``categories``, each
with a description, forbidden examples and the error category a violation maps to;
``display_names`` optionally gives each a name per language (the web app's labels).
"""

from __future__ import annotations

from pathlib import Path

from rolecall.records import RoleSpec
from rolecall.yaml_files import load_yaml_model

SPEC_HELP = "see examples/carecall/spec.yaml for a complete role specification"


def load_role_spec(path: str | Path) -> RoleSpec:
    return load_yaml_model(path, RoleSpec, "role specification", SPEC_HELP)


def error_categories_in_order(spec: RoleSpec) -> list[str]:
    """The error categories in the order the spec first names them (not sorted)."""
    return list(dict.fromkeys(c.error_category for c in spec.categories))


def display_name(spec: RoleSpec, name: str, language: str) -> str:
    """A category's or error category's name in ``language``; the identifier itself when
    the spec gives none."""
    return spec.display_names.get(language, {}).get(name, name)
