"""Prompt templates: one Jinja file per prompt, under ``ko/`` and ``en/``.

The first line of every template is a Jinja comment that says its form:
``{# form: completion #}`` (few-shot text for base models such as the embedded Gemma) or
``{# form: chat #}`` (messages for instruction-tuned models). The manifest of a run records
each template's hash so that results can be traced to the exact prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import files

from jinja2 import Environment, StrictUndefined

from rolecall.errors import ConfigError
from rolecall.rundir import text_hash

_FORM = re.compile(r"\{#\s*form:\s*(completion|chat)\s*#\}")
_env = Environment(undefined=StrictUndefined, keep_trailing_newline=False, autoescape=False)


@dataclass(frozen=True)
class Template:
    name: str
    language: str
    form: str
    source: str

    @property
    def hash(self) -> str:
        return text_hash(self.source)

    def render(self, **values) -> str:
        # Jinja comments (the form line) render to nothing; strip the newline they leave.
        return _env.from_string(self.source).render(**values).lstrip("\n")


def available(language: str) -> list[str]:
    folder = files("rolecall.prompts").joinpath(language)
    return sorted(p.name.removesuffix(".j2") for p in folder.iterdir() if p.name.endswith(".j2"))


def load_template(name: str, language: str = "ko") -> Template:
    path = files("rolecall.prompts").joinpath(language, f"{name}.j2")
    if not path.is_file():
        known = ", ".join(available(language)) if language in ("ko", "en") else "none"
        raise ConfigError(
            f"no prompt template '{name}' for language '{language}'",
            fix=f"templates available in '{language}': {known}",
        )
    source = path.read_text(encoding="utf-8")
    match = _FORM.match(source)
    if not match:
        raise ConfigError(
            f"template {language}/{name}.j2 does not start with its form line",
            fix="begin it with {# form: completion #} or {# form: chat #}",
        )
    return Template(name, language, match.group(1), source)
